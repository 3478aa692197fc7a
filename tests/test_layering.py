"""Layering rules, read from the source (AST), so a wrong import fails here and not in review.

privacy is guarantee arithmetic: no mechanism, experiment, attack or plot. Utility tasks and
attacks judge releases independently, and neither attacks nor mechanisms know of each other;
mechanisms never import the entity stage (``StagedMechanism`` joins them). Imports are followed
transitively inside textveil (lazy imports in functions included), each module also importing
its parent packages; the root package ``textveil`` is left out, its ``__init__`` being a façade
that re-exports everything.

No two of textveil's modules import each other, directly or through others (a lazy import in a
function counts: it hides a circle, it does not break it). The faces (``sanitize``, ``release``,
``serve``) and the release job build their mechanisms with :mod:`textveil.building`, never
through the red-team harness in :mod:`textveil.evaluation`.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Mapping
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
    ("textveil.mechanisms", ("textveil.attacks", "textveil.pii")),
    # the builder sits above mechanisms and pii, below every face and the harness
    ("textveil.building", ("textveil.evaluation", "textveil.attacks", "textveil.release", "textveil.service",
                           "textveil.cli")),
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
def import_statements(module: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every import statement anywhere in ``module`` (in functions too), as the module it names
    (relative ones resolved) and the names it takes from it: ``import a.b`` is ``("a.b", ())``,
    ``from .b import c, d`` in package ``a`` is ``("a.b", ("c", "d"))``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    statements: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            statements.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            statements.append((base, tuple(alias.name for alias in node.names)))
    return tuple(statements)


@cache
def direct_imports(module: str) -> frozenset[str]:
    """Every module named by an import statement anywhere in ``module`` (relative ones resolved)."""
    found: set[str] = set()
    for base, names in import_statements(module):
        found.add(base)
        # "from textveil.x import y" may import the submodule textveil.x.y
        found.update(f"{base}.{name}" for name in names if f"{base}.{name}" in MODULES)
    return frozenset(found)


@cache
def named_imports(module: str) -> frozenset[str]:
    """textveil's modules that ``module`` imports by name: ``from p import q`` imports ``p.q``
    where that is a module, else ``p`` (its ``__init__``). Parent packages are not counted here:
    Python runs a package's ``__init__`` before any module in it, so an ``__init__`` importing its
    own modules is no circle, and a CLI command does not reach its siblings through the
    ``textveil.cli`` package that assembles them all."""
    found: set[str] = set()
    for base, names in import_statements(module):
        found.update(f"{base}.{name}" if f"{base}.{name}" in MODULES else base for name in names or [""])
    return frozenset(name for name in found if name in MODULES and name != module)


def _followed(graph: Mapping[str, Iterable[str]], start: str) -> set[str]:
    """What ``start`` reaches in ``graph`` by one edge or more (``start`` itself where it is on a circle)."""
    seen: set[str] = set()
    stack = list(graph.get(start, ()))
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(graph.get(current, ()))
    return seen


def import_circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One circle per group of modules that import one another (``graph``: each module and those
    it imports), as the shortest path from the group's first module (by name) back to it."""
    reached = {module: _followed(graph, module) for module in graph}
    circles: list[list[str]] = []
    placed: set[str] = set()
    for start in sorted(graph):
        if start in placed or start not in reached[start]:
            continue
        group = {module for module in reached[start] if start in reached.get(module, ())}
        placed |= group
        before: dict[str, str] = {}
        queue = deque([start])
        while queue:  # breadth first, inside the group, until an edge leads back to start
            current = queue.popleft()
            if start in graph.get(current, ()):
                path = [current]
                while path[-1] != start:
                    path.append(before[path[-1]])
                circles.append(path[::-1] + [start])
                break
            for following in sorted(set(graph.get(current, ())) & group - before.keys() - {start}):
                before[following] = current
                queue.append(following)
    return circles


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
    assert "textveil.atomic_files" in direct_imports("textveil.evaluation.calibration")  # inside plot_calibration
    assert "matplotlib" in reachable("textveil.evaluation.calibration")
    assert "textveil.mechanisms.earth_movers" in reachable("textveil.evaluation.calibration")


# The modules at the bottom of the package, which import nothing of textveil's: every layer may
# use them (errors, where caches live, the version, the registries' face, the CPUs this process may
# use, files written whole).
FOUNDATIONS = ("textveil.errors", "textveil.paths", "textveil.version", "textveil.registry", "textveil.machine",
               "textveil.atomic_files")
# The low layers (ARCHITECTURE.md), each with the layers below it that it may import besides the
# foundations: anything else, a package added later included, runs against the layers. Issue 59
# made them hold: text/ wrote its casing table through corpus/, models/ counted its CPUs through
# embeddings/ (and pii/ too), and text/, models/, embeddings/ and mechanisms/ wrote files through
# corpus/. Reading and writing corpora sits above them all: the library below takes texts.
LOW_LAYERS = [
    ("textveil.text", ()),
    ("textveil.models", ("textveil.text",)),
    ("textveil.embeddings", ("textveil.text", "textveil.models")),
    ("textveil.mechanisms", ("textveil.text", "textveil.models", "textveil.embeddings", "textveil.privacy")),
    # the entity stage knows the mechanisms' face (the wrapper), never the word vectors
    ("textveil.pii", ("textveil.text", "textveil.models", "textveil.privacy", "textveil.mechanisms")),
]


@pytest.mark.parametrize(("package", "below"), LOW_LAYERS, ids=[layer[0] for layer in LOW_LAYERS])
def test_low_layers_import_nothing_above_them(package: str, below: tuple[str, ...]) -> None:
    modules = [m for m in MODULES if m == package or m.startswith(package + ".")]
    assert modules, f"no modules found under {package}"
    allowed = (package, *below, *FOUNDATIONS)
    above = {m: sorted(n for n in reachable(m) if n.startswith("textveil.") and not _forbidden(n, allowed))
             for m in modules}
    assert not {m: names for m, names in above.items() if names}, f"{package} imports above its layer"


def test_the_foundations_import_nothing_of_textveils_but_each_other() -> None:
    # what every low layer may reach must not lead back up: a foundation importing corpus/ would
    # put the whole library on top of it
    for module in FOUNDATIONS:
        assert {n for n in reachable(module) if n.startswith("textveil.")} <= set(FOUNDATIONS), module


MAX_MODULE_LINES = 600
"""A module past this does more than one job (issue 59 split experiment.py and paraphrase.py):
split it by concern, so that a new score or mechanism lands in a file of its own."""


@pytest.mark.parametrize("package", ["textveil.mechanisms", "textveil.evaluation"])
def test_no_module_is_over_the_size_that_says_it_does_more_than_one_job(package: str) -> None:
    sizes = {m: len(path.read_text(encoding="utf-8").splitlines()) for m, path in MODULES.items()
             if m.startswith(package + ".")}
    assert sizes, f"no modules found under {package}"
    over = {m: lines for m, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: split them by concern"


# Circles known and let stand: none. Issue 48 broke the last ones: textveil.pii.detector and
# textveil.pii.recognisers (``Found`` now in textveil.pii.found), and the root package, whose
# ``__version__`` mechanisms.base, the caches, the release job and the service read lazily while
# ``textveil.mechanism`` builds through them (the version now in textveil.version). A circle that
# must stay a while would be listed here, by its modules, with the reason.
KNOWN_CIRCLES: list[frozenset[str]] = []


def test_no_import_circles() -> None:
    circles = [path for path in import_circles({m: named_imports(m) for m in MODULES})
               if frozenset(path) not in KNOWN_CIRCLES]
    assert not circles, "import circles (lazy imports in functions included):\n" + "\n".join(
        " -> ".join(path) for path in circles)


def test_the_circle_check_reports_each_circle_as_a_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert import_circles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []
    # the graph holds lazy imports: build_mechanism imports the entity stage when it is called
    assert "textveil.pii.staged" in named_imports("textveil.building")
    assert "textveil.pii.recognisers" in named_imports("textveil.pii.detector")


# The faces and the release job build mechanisms with textveil.building, never through the
# red-team harness: the CLI modules of `sanitize`, `release` and `serve`, and what they share
# (cli.options, whose given_options and mechanism_of they parse a mechanism's options and model
# with, the entity stage's options, the console and the progress display).
FACES = ("textveil.release", "textveil.service", "textveil.cli.sanitize", "textveil.cli.release",
         "textveil.cli.service", "textveil.cli.options", "textveil.cli.entity_options", "textveil.cli.console",
         "textveil.cli.progress")
# What they may reach in evaluation/, and only that: emp's calibration curve (an experiment over
# sample words, which issue 48 leaves in evaluation/), drawn by `sanitize --calibrate` and by the
# service's slider (textveil.service.curves). It builds no mechanism from a request.
FACES_MAY_REACH = frozenset({"textveil.evaluation.calibration"})


def _reached_by_name(module: str) -> set[str]:
    """What importing ``module`` imports in turn, following :func:`named_imports` (not the
    parents: every command reaches every other through ``textveil.cli``, which assembles them)."""
    return _followed({m: named_imports(m) for m in MODULES}, module)


def _defined_in(module: str) -> frozenset[str]:
    """The names ``module`` defines at its top level (functions, classes, constants)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return frozenset(names)


@pytest.mark.parametrize("face", FACES)
def test_faces_build_mechanisms_without_the_harness(face: str) -> None:
    modules = [m for m in MODULES if m == face or m.startswith(face + ".")]
    assert modules, f"no modules found under {face}"
    reached = {m: sorted(n for n in _reached_by_name(m)
                         if _forbidden(n, ("textveil.evaluation",)) and n not in FACES_MAY_REACH) for m in modules}
    assert not {m: names for m, names in reached.items() if names}


def test_nothing_builds_a_mechanism_through_evaluation() -> None:
    building = _defined_in("textveil.building")
    assert {"build_mechanism", "check_mechanism_options", "check_model_path", "release_parameters"} <= building
    taken = {(module, base, name) for module in MODULES for base, names in import_statements(module)
             if _forbidden(base, ("textveil.evaluation",)) for name in names if name in building}
    assert not taken, "import these from textveil.building: " + ", ".join(
        f"{module} takes {name} from {base}" for module, base, name in sorted(taken))
    assert not building & _defined_in("textveil.evaluation.releasing")  # no copy left behind


# -- the guarantee is data: no face reads its wording back ---------------------------------

FACE_PACKAGES = ("textveil.cli", "textveil.service")
GUARANTEE_MODULE = "textveil.privacy.guarantee"
FACES_TAKE_FROM_THE_GUARANTEE = frozenset({"Guarantee", "KINDS"})
"""What a face may take from the guarantee's module: the type (``pivot decode-text`` states that a
decoding has none) and the kinds in words (the listings). The wording helpers (the layouts'
words, the statement's writers) and anything added later are the library's: a face renders the
Guarantee's fields or a summary's lines (textveil.release.summary)."""
WORDING_FIELDS = frozenset({"unprotected", "statement", "how", "entity_stage"})
"""A Guarantee's attributes that are words written for a reader, never data to read back."""


def _guarantee_names_taken(module: str) -> set[str]:
    return {name for base, names in import_statements(module) if base == GUARANTEE_MODULE for name in names}


def test_faces_take_no_wording_helper_from_the_guarantee() -> None:
    faces = [m for m in MODULES if _forbidden(m, FACE_PACKAGES)]
    assert faces, "no face modules found"
    taken = {m: sorted(_guarantee_names_taken(m) - FACES_TAKE_FROM_THE_GUARANTEE) for m in faces}
    assert not {m: names for m, names in taken.items() if names}, "render the Guarantee's fields or the summary's lines"
    # the check sees what faces do take: the listing's kinds in words
    assert "KINDS" in _guarantee_names_taken("textveil.cli.sanitize")


def _reads_wording_back(tree: ast.AST) -> list[str]:
    """The functions of ``tree`` that run a regular expression (``re.*``) and read a Guarantee's
    words (:data:`WORDING_FIELDS`): parsing what the library wrote for a reader."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        inside = list(ast.walk(node))
        regex = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "re" for n in inside)
        words = any(isinstance(n, ast.Attribute) and n.attr in WORDING_FIELDS for n in inside)
        if regex and words:
            found.append(node.name)
    return found


def test_no_function_parses_a_guarantees_words_back() -> None:
    parsed = {m: _reads_wording_back(ast.parse(path.read_text(encoding="utf-8"))) for m, path in MODULES.items()}
    assert not {m: names for m, names in parsed.items() if names}, "read the Guarantee's fields, not its words"
    # the check is real: it finds the reader issue 59 removed (counts stripped from the words)
    removed = (
        "def unprotected_in_general(guarantee):\n"
        "    import re\n"
        "    return [re.sub(r'\\(\\d+\\)', '', item).strip() for item in guarantee.unprotected]\n")
    assert _reads_wording_back(ast.parse(removed)) == ["unprotected_in_general"]

