"""MkDocs hook: the package's version on every page, read from ``textveil.__version__`` at build time.

The footer's line (mkdocs.yml's ``copyright``) gets "textveil X.Y.Z" in front of it, and the
version is also offered to templates as ``config.extra.textveil_version``. Reading it from the
package rather than writing it in mkdocs.yml means a release that bumps the version cannot leave
the site naming the old one. mkdocs.yml loads it (``hooks:``); it is excluded from the site itself.
"""

from __future__ import annotations

from typing import Any


def package_version() -> str:
    """The version the installed ``textveil`` package declares (``textveil.__version__``)."""
    import textveil

    return str(textveil.__version__)


def on_config(config: Any) -> Any:
    """Put the version in the footer and in ``extra`` before any page is rendered."""
    version = package_version()
    config["extra"]["textveil_version"] = version
    footer = config.get("copyright") or ""
    label = f"textveil {version}"
    # mkdocs serve reloads the config for each rebuild, but guard anyway so the label never doubles.
    if label in footer:
        return config
    if "textveil documentation" in footer:  # mkdocs.yml's own wording: the version goes inside it
        config["copyright"] = footer.replace("textveil documentation", f"{label} documentation", 1)
    else:
        config["copyright"] = f"{label}. {footer}".strip()
    return config
