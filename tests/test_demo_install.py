"""``make demo`` installs what its release needs (requirements/demo.txt) before the release and the
rest of pyproject.toml's dependencies after it. The demo's list takes each line from pyproject.toml,
so both steps ask for what ``pip install textveil`` asks for, and the Makefile keeps that order."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import REPO_ROOT

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")


def demo_requirements() -> list[str]:
    lines = (REPO_ROOT / "requirements" / "demo.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_every_requirement_of_the_demo_is_pyprojects_own():
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    requirements = demo_requirements()
    assert requirements and len(set(requirements)) == len(requirements)
    assert [r for r in requirements if r not in dependencies] == [], "requirements/demo.txt differs from pyproject.toml"


def test_make_demo_releases_before_it_installs_the_rest():
    """``make -n demo`` as on a fresh checkout (a virtual environment that does not exist): the
    demo's requirements, the embeddings' build, the release, and only then pyproject.toml's whole
    install."""
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed: this test reads the plan of `make demo` (apt-get install make)")
    planned = subprocess.run(["make", "-n", "demo", "VENV=/nonexistent/venv"], cwd=REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout
    steps = ("-r requirements/demo.txt", "textveil embeddings build", "textveil sanitize examples/sample.txt",
             "pip install -qq -e .")
    order = [planned.find(step) for step in steps]
    assert -1 not in order and order == sorted(order), planned
