"""textveil's version, on its own so that a module that records it (a manifest, a cache key, a
report) reads it from here rather than from the package's ``__init__``, which imports the
library above it: the version is a leaf every layer may import. ``textveil.__version__`` is
this value; ``pyproject.toml`` declares the same.

>>> __version__.count(".")
2
"""

__version__ = "0.5.0"
