"""Layering rules, read from the source (AST), so a wrong import fails here and not in review.

privacy is guarantee arithmetic: no mechanism, experiment, attack or plot. Utility tasks and
attacks judge releases independently, and neither attacks nor mechanisms know of each other.
Imports are followed transitively inside textveil (lazy imports in functions included), each
module also importing its parent packages; the root package ``textveil`` is left out, its
``__init__`` being a façade that re-exports everything.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import textveil

ROOT = Path(textveil.__file__).parent

# (package whose modules are checked, forbidden module prefixes)
RULES = [
    ("textveil.privacy", ("textveil.mechanisms", "textveil.evaluation", "textveil.attacks", "matplotlib")),
    ("textveil.utility", ("textveil.attacks",)),
    ("textveil.attacks", ("textveil.mechanisms",)),
    ("textveil.mechanisms", ("textveil.attacks",)),
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _with_parents(name: str) -> set[str]:
    """``textveil.a.b`` and the packages it runs on import (``textveil.a``), the root left out."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(2, len(parts) + 1)}


@cache
def direct_imports(module: str) -> frozenset[str]:
    """Every module named by an import statement anywhere in ``module`` (relative ones resolved)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # "from textveil.x import y" may import the submodule textveil.x.y
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    return frozenset(found)


@cache
def reachable(module: str) -> frozenset[str]:
    """Modules that importing ``module`` may import, following textveil's own modules."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        current = stack.pop()
        for name in direct_imports(current):
            for target in _with_parents(name) if name.startswith("textveil.") else {name}:
                if target in seen:
                    continue
                seen.add(target)
                if target in MODULES:
                    stack.append(target)
    return frozenset(seen)


def _forbidden(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


@pytest.mark.parametrize(("package", "prefixes"), RULES, ids=[rule[0] for rule in RULES])
def test_layering(package: str, prefixes: tuple[str, ...]) -> None:
    modules = [m for m in MODULES if m == package or m.startswith(package + ".")]
    assert modules, f"no modules found under {package}"
    violations = {m: sorted(n for n in reachable(m) if _forbidden(n, prefixes)) for m in modules}
    assert not {m: names for m, names in violations.items() if names}


def test_the_scan_sees_lazy_and_relative_imports() -> None:
    # the rules above would pass vacuously if the scan missed imports inside functions
    assert "textveil.corpus.writing" in direct_imports("textveil.evaluation.calibration")  # inside plot_calibration
    assert "matplotlib" in reachable("textveil.evaluation.calibration")
    assert "textveil.mechanisms.earth_movers" in reachable("textveil.evaluation.calibration")
