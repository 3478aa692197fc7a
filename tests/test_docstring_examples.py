"""Every docstring example of textveil is run (pytest --doctest-modules), none skipped for good:
an example that needs an optional part skips only where that part is missing
(``textveil/conftest.py``), and each such rule names a doctest that exists."""

from __future__ import annotations

import doctest
import importlib

from conftest import REPO_ROOT


def test_no_docstring_example_is_skipped_for_good():
    skipped = [f"{path.relative_to(REPO_ROOT)}:{number}"
               for path in sorted((REPO_ROOT / "textveil").rglob("*.py"))
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if "doctest: +SKIP" in line]
    assert skipped == [], "examples that never run (textveil/conftest.py skips one only where its part is missing)"


def test_each_example_that_needs_a_part_names_a_doctest_that_exists():
    needs = importlib.import_module("textveil.conftest").NEEDS
    for name, unavailable in needs.items():
        module_name, found = name, None
        while found is None:  # the longest importable prefix is the module, the rest the object
            try:
                found = importlib.import_module(module_name)
            except ModuleNotFoundError:
                module_name = module_name.rpartition(".")[0]
        examples = {test.name for test in doctest.DocTestFinder().find(found, module_name) if test.examples}
        assert name in examples, f"{name} has no docstring example"
        assert unavailable() is None or isinstance(unavailable(), str)
