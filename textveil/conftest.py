"""The docstring examples of textveil's modules, run by pytest (pyproject.toml: --doctest-modules).

Every example runs, with its real output. An example that needs an optional part (Debian's
Apertium, the entity stage's Presidio and spaCy model, the default embeddings or what builds them)
skips where that part is missing, with the library's own one-line reason naming the install; where
the part is there, it runs. ``make test`` installs every part, so there nothing skips.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest


def _emp_with_the_entity_stage() -> str | None:
    from textveil.embeddings.default_model import default_embeddings_unavailable
    from textveil.pii.detector import unavailable

    return unavailable() or default_embeddings_unavailable()


def _translation() -> str | None:
    from textveil.mechanisms.translation import translation_unavailable

    return translation_unavailable()


def _default_embeddings() -> str | None:
    from textveil.embeddings.default_model import default_embeddings_unavailable

    return default_embeddings_unavailable()


# A doctest's name (its module, or module.function) -> why it cannot run here, or None.
NEEDS: dict[str, Callable[[], str | None]] = {
    "textveil": _emp_with_the_entity_stage,
    "textveil.mechanisms.translation": _translation,
    "textveil.embeddings.default_model.load_embeddings": _default_embeddings,
}


@pytest.fixture(autouse=True)
def _skip_an_example_whose_part_is_missing(request: pytest.FixtureRequest) -> None:
    if isinstance(request.node, pytest.DoctestItem) and request.node.name in NEEDS:
        reason = NEEDS[request.node.name]()
        if reason is not None:
            pytest.skip(f"this docstring example runs only where its part is installed: {reason}")
