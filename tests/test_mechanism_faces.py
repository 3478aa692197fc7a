"""Every mechanism through the faces and the harness: ``textveil mechanisms``, ``sanitize`` with
each mechanism's own parameters, ``evaluate`` over any mechanism (fitted once, a corpus-level
release, a secret parameter), and the defects this face fixed."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from typing import ClassVar

import pytest

from conftest import require_shared_data, run_cli, run_guarded
from test_release_training import plan_for
from textveil.errors import InvalidParameterError
from textveil.evaluation.experiment import run_experiment
from textveil.mechanisms.base import CorpusRelease, Mechanism, Release
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.registry import MECHANISMS
from textveil.privacy.guarantee import Guarantee
from textveil.privacy.secrets import Secret
from textveil.registry import Entry, Parameter


def one_line_error(code, err, *needles):
    lines = [line for line in err.splitlines() if line.strip()]
    return code == 2 and len(lines) == 1 and "Traceback" not in err and all(n in lines[0] for n in needles)


# -- listing and start-up ----------------------------------------------------------------


def test_mechanisms_command_lists_each_with_its_guarantee_kind(capsys, monkeypatch):
    code, out, _ = run_cli(["mechanisms", "--format", "json"], capsys, monkeypatch)
    listed = {item["name"]: item for item in json.loads(out)}
    assert code == 0 and {"emp": "metric", "random": "dp", "syntf": "dp"}.items() <= {
        name: item["guarantee"] for name, item in listed.items()}.items()
    assert [p["name"] for p in listed["random"]["parameters"]] == ["layout", "seed"]
    assert next(p for p in listed["emp"]["parameters"] if p["name"] == "epsilon")["required"] is True
    code, out, _ = run_cli(["mechanisms"], capsys, monkeypatch)
    assert code == 0 and all(name in out for name in ("emp", "random", "syntf"))


def test_help_imports_no_torch_and_no_mechanism():
    """``textveil --help`` reads the registries as data: no torch, no mechanism module."""
    probe = ("import sys, runpy\nsys.argv = ['textveil', '--help']\n"
             "try:\n    runpy.run_module('textveil.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in sys.modules if m == 'torch' or m.startswith('textveil.mechanisms.earth_movers')"
             " or m == 'sklearn']\nprint('HEAVY', heavy, file=sys.stderr)")
    done = run_guarded([sys.executable, "-c", probe], "textveil --help", capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "100"})
    assert "HEAVY []" in done.stderr, done.stderr[-2000:]
    assert "sanitize" in done.stdout


# -- sanitize: each mechanism's own parameters ------------------------------------------


def test_sanitize_takes_each_mechanisms_own_parameters(vectors, capsys, monkeypatch):
    base = ["sanitize", "-", "--seed", "1", "--embeddings", str(vectors)]
    code, out, err = run_cli([*base, "-m", "random"], capsys, monkeypatch, stdin=b"The market rallied today.")
    assert code == 0 and out.strip() and "0-differential" not in err and "epsilon=0 per token" in err
    code, out, err = run_cli([*base, "-m", "syntf", "-e", "3", "--set", "rating=similarity", "--format", "json"],
                             capsys, monkeypatch, stdin=b"The market rallied today.")
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["guarantee"]["kind"] == "dp"
    for args, needles in (
        (["-m", "syntf"], ("syntf", "--epsilon")),
        (["-m", "random", "-e", "3"], ("random", "epsilon")),
        (["-m", "emp", "-e", "3", "--set", "rating=tfidf"], ("emp", "rating")),
        (["-m", "syntf", "-e", "3", "--set", "rating"], ("--set", "NAME=VALUE")),
        (["-m", "syntf", "-e", "3", "--set", "rating=loud"], ("--rating", "loud", "tfidf")),
        (["-m", "random", "--decode", "approx"], ("random", "decode")),
        (["-m", "emp", "-e", "1e-300"], ("too small", "epsilon")),
    ):
        code, _, err = run_cli([*base, *args], capsys, monkeypatch, stdin=b"The market.")
        assert one_line_error(code, err, *needles), (args, err)


def test_sanitize_fits_a_learning_mechanism_on_a_training_corpus(vectors, tmp_path, capsys, monkeypatch):
    training = tmp_path / "public.txt"
    training.write_text("the market and the bank\n", encoding="utf-8")
    code, out, err = run_cli(["sanitize", "-", "-m", "syntf", "-e", "2", "--seed", "1", "--embeddings", str(vectors),
                              "--fit-corpus", str(training), "--format", "json"], capsys, monkeypatch,
                             stdin=b"The market rallied.")
    assert code == 0, err
    assert any("other than the released" in a for a in json.loads(out.splitlines()[0])["guarantee"]["assumptions"])


def test_two_inputs_that_map_to_one_output_fail_before_anything_is_written(vectors, tmp_path, capsys, monkeypatch):
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.txt").write_text("The market rallied.", encoding="utf-8")
    code, _, err = run_cli(["sanitize", str(tmp_path / "one"), str(tmp_path / "two"), "-e", "5", "--embeddings",
                            str(vectors), "-o", str(tmp_path / "out")], capsys, monkeypatch)
    assert one_line_error(code, err, "a.txt") and not (tmp_path / "out").exists()


def test_vocabulary_corpus_inside_an_input_folder_is_refused(vectors, tmp_path, capsys, monkeypatch):
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "a.txt").write_text("The market rallied.", encoding="utf-8")
    code, _, err = run_cli(["sanitize", str(tmp_path / "inputs"), "-e", "5", "--embeddings", str(vectors),
                            "--vocab-corpus", str(tmp_path / "inputs" / "a.txt")], capsys, monkeypatch)
    assert one_line_error(code, err, "--vocab-corpus", "inside")


def test_epsilon_so_small_the_noise_overflows_is_a_clear_error(toy_word_embeddings):
    with pytest.raises(InvalidParameterError, match="too small"):
        EarthMoversPrivacy(1e-300, toy_word_embeddings)
    smallest = EarthMoversPrivacy(1.0, toy_word_embeddings).smallest_epsilon
    release = EarthMoversPrivacy(smallest * 1.01, toy_word_embeddings, seed=0).sanitize("market bank growth oil")
    assert len(release.text.split()) == 4 and "the the the" not in release.text.lower()


# -- the harness, opened to every mechanism ------------------------------------------------


def test_evaluate_runs_random_and_syntf_end_to_end(folders, vectors, tmp_path, capsys, monkeypatch):
    known, unknown = folders
    common = ["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--embeddings", str(vectors),
              "--attacks", "char3-svm,length", "--utility", "unigram-cosine,semantic-similarity", "--seed", "1",
              "--top-k", "2"]
    code, _, err = run_cli([*common, "-m", "random", "--out", str(tmp_path / "random")], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "random" / "results.json").read_text())
    assert [p["label"] for p in results["points"]] == ["none", "random"]
    assert results["points"][1]["release"]["words_protected"] > 0 and results["plan"]["parameter"] == ""
    code, _, err = run_cli([*common, "-m", "syntf", "--grid", "1,50", "--out", str(tmp_path / "syntf")], capsys,
                           monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "syntf" / "results.json").read_text())
    assert results["plan"]["parameter"] == "epsilon" and results["mechanism"]["training_data"] is not None
    low, high = results["points"][1], results["points"][2]
    assert low["utility"]["unigram-cosine"]["value"] < high["utility"]["unigram-cosine"]["value"]
    code, _, err = run_cli([*common, "-m", "random", "--grid", "3", "--out", str(tmp_path / "x")], capsys, monkeypatch)
    assert one_line_error(code, err, "random", "--grid")


def test_a_cached_point_reports_the_same_release_statistics(vectors, corpora, tmp_path):
    """A release read from the cache once reported 0 words protected and 0 changed."""
    plan = plan_for(vectors, trainings=["clean"])
    fresh = run_experiment(corpora, plan, cache_folder=tmp_path / "cache")
    cached = run_experiment(corpora, plan, cache_folder=tmp_path / "cache")
    assert fresh["release_cache"]["misses"] > 0 and cached["release_cache"]["misses"] == 0
    for a, b in zip(fresh["points"][1:], cached["points"][1:]):
        assert a["release"]["read_from_cache"] == 0 and b["release"]["read_from_cache"] == 1
        del a["release"]["read_from_cache"], b["release"]["read_from_cache"]
        assert a["release"] == b["release"] and b["release"]["words_protected"] > 0
        assert b["release"]["words_changed"] > 0 and a["attacks"] == b["attacks"] and a["utility"] == b["utility"]


def test_a_learning_mechanism_is_fitted_once_per_sweep(vectors, corpora, tmp_path, monkeypatch):
    from textveil.mechanisms.syntf import SynTF

    fits = []
    original = SynTF._fit
    monkeypatch.setattr(SynTF, "_fit", lambda self, texts: fits.append(len(texts)) or original(self, texts))
    run_experiment(corpora, plan_for(vectors, mechanism="syntf", grid=[1.0, 5.0, 20.0]), cache_folder=None)
    assert fits == [len(corpora.risk_known)]  # once, on the known (clean, never released) texts


class RegroupedCorpus(Mechanism):
    """A corpus-level test double: per label, one new text of that label's words, reversed."""

    name = "regroup"
    corpus_level: ClassVar[bool] = True

    def __init__(self, key: Secret | None = None, seed: int | None = None) -> None:
        self._check_parameters(key=key, seed=seed)

    def sanitize_many(self, texts, progress=None):
        raise NotImplementedError("a corpus-level mechanism releases corpora")

    def release_corpus(self, texts, labels=None, progress=None):
        groups: dict[str, list[str]] = {}
        for text, label in zip(texts, labels):
            groups.setdefault(label, []).extend(text.split())
        return CorpusRelease([" ".join(reversed(words)) for words in groups.values()], list(groups), False,
                             {"words_protected": sum(len(w) for w in groups.values()), "words_changed": 0})


@pytest.fixture
def regroup(monkeypatch):
    entry = Entry("regroup", f"{__name__}:RegroupedCorpus", "test double", guarantee="none",
                  parameters=(Parameter("key", Secret, "a secret", None, secret=True),
                              Parameter("seed", int, "seed", None, minimum=-1)))
    monkeypatch.setitem(MECHANISMS._entries, "regroup", entry)
    return entry


def test_a_corpus_level_release_is_attacked_and_measured_with_its_own_labels(regroup, vectors, corpora, tmp_path):
    key = Secret(b"do not print me")
    plan = replace(plan_for(vectors, mechanism="regroup", grid=[], mechanism_options={"key": key}),
                   utility=["unigram-cosine", "semantic-similarity"], top_k=2)
    logged: list[str] = []
    results = run_experiment(corpora, plan, cache_folder=tmp_path / "cache", log=logged.append)
    point = results["points"][1]
    assert point["label"] == "regroup" and point["attacks"]["char3-svm"]["n_unknown"] == 4  # one text per author
    assert "unigram-cosine" in point["utility"] and "semantic-similarity" not in point["utility"]
    assert any("semantic-similarity skipped" in line for line in logged)
    # the secret never reaches results, logs or cache files: only its digest does
    written = json.dumps(results, default=str) + "".join(logged) + "".join(
        p.read_text() for p in (tmp_path / "cache").glob("*.json"))
    assert "do not print me" not in written and key.reveal().hex() not in written
    assert key.digest in json.dumps(results["plan"])


def test_a_secret_is_saved_apart_from_the_manifest(regroup, tmp_path):
    mechanism = RegroupedCorpus(key=Secret(b"hunter2"), seed=1)
    mechanism.save(tmp_path / "saved")
    assert "hunter2" not in (tmp_path / "saved" / "manifest.json").read_text()
    assert b"hunter2".hex() in (tmp_path / "saved" / "secrets.json").read_text()
    assert (tmp_path / "saved" / "secrets.json").stat().st_mode & 0o077 == 0
    assert Mechanism.load(tmp_path / "saved").key == Secret(b"hunter2")
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(Secret(b"hunter2"))


# -- real data -----------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["random", "syntf"])
def test_random_and_syntf_release_real_blog_posts(mechanism, toy_word_embeddings):
    path = require_shared_data("blog_short", "blog_short.jsonl")
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()[:40]]
    engine = MECHANISMS.make(mechanism, shared={"embeddings": toy_word_embeddings},
                             **({"epsilon": 30.0} if mechanism == "syntf" else {}), seed=0).fit(texts[20:])
    releases = engine.sanitize_many(texts[:20])
    assert all(r.guarantee.words_protected == len(__import__("textveil.text.layout", fromlist=["x"]).release_units(t))
               for r, t in zip(releases, texts))
    assert all(isinstance(r, Release) and isinstance(r.guarantee, Guarantee) for r in releases)
