"""The time estimate of ``compare`` and ``evaluate``: a pilot of each setting extrapolated per
word, nothing already done counted, ``--minutes`` choosing the authors that fit, and a seeded
run that releases the same texts with and without the estimate."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from tests.conftest import run_cli, style_corpus, write_folders
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.comparison import ComparedMechanism, ComparisonPlan, run_comparison
from textveil.evaluation.experiment_plan import EvaluationCorpora
from textveil.evaluation.time_estimate import authors_within, estimate_run, point_seconds, shared_seconds
from textveil.evaluation.time_pilot import AttackPilot, Pilot, SettingPilot, TaskPilot
from textveil.evaluation.time_plan import Counts, PointPlan, SharedPlan, stratified_sample


@pytest.fixture
def toy_corpora(toy_word_embeddings) -> EvaluationCorpora:
    rng = np.random.default_rng(11)
    words = list(toy_word_embeddings.words)
    return EvaluationCorpora(style_corpus(words, rng, 3, 6), style_corpus(words, rng, 3, 2))


def _plan(vectors, *mechanisms: ComparedMechanism) -> ComparisonPlan:
    return ComparisonPlan(
        mechanisms=list(mechanisms) or [ComparedMechanism("emp", [0.5, 50.0]), ComparedMechanism("redact")],
        attacks=["char3-svm", "length"], utility=["stylometric-l2", "unigram-cosine"], seed=4,
        embeddings=str(vectors), top_k=2, thresholds=[0.4, 1.0])


def _pilot(**settings: SettingPilot) -> Pilot:
    return Pilot(4, 40, 2, settings=settings, tasks={"sim": TaskPilot(0.5, 200, None, 0.1),
                                                     "fluency": TaskPilot(1.0, 200, 96, 0.0)},
                 attacks={"svm": AttackPilot(0.2, 1000, 0.05, 500)})


# 20 known texts of 100 words, 10 judged texts of 50 words, the judged texts measured for utility
COUNTS = Counts(20, 2000, 10, 500, 10, 500, 5, 5)


def test_a_point_is_its_pilot_rate_times_the_words_it_reads():
    pilot = _pilot(**{"emp 10": SettingPilot(4, 400, 2.0, {"sim": 0.3, "fluency": 0.8})})
    plan = PointPlan("emp 10", "emp", False, repeats=2, releases={"unknown": 2, "known": 2}, fits=2, scorings=4,
                     tasks=("sim", "fluency"))
    parts = point_seconds(pilot, plan, COUNTS)
    # 0.005 s a word: two releases of the 500 judged words and two of the 2,000 known ones
    assert parts["release"] == pytest.approx(0.005 * (2 * 500 + 2 * 2000))
    # a fit costs 0.0002 s a known word, a scoring 0.0001 s a judged word
    assert parts["attacks"] == pytest.approx(2 * 0.0002 * 2000 + 4 * 0.0001 * 500)
    # each repeat measures every task: sim reads the 500 words (0.3 s on the pilot's 200), fluency its
    # sample of 96 texts, here more than there are: the same 500 words
    assert parts["utility"] == pytest.approx(2 * (0.3 * 500 / 200 + 0.8 * 500 / 200))
    # a fixed sample does not grow with the corpus: ten times the judged texts, the same fluency
    larger = Counts(20, 2000, 1000, 50_000, 1000, 50_000, 5, 5)
    fluency_only = PointPlan("emp 10", "emp", False, tasks=("fluency",))
    assert point_seconds(pilot, fluency_only, larger)["utility"] == pytest.approx(0.8 * 96 * 50 / 200)


def test_what_is_done_costs_nothing():
    pilot = _pilot(**{"emp 10": SettingPilot(4, 400, 2.0, {"sim": 0.3})})
    finished = PointPlan("emp 10", "emp", True)
    assert point_seconds(pilot, finished, COUNTS) == {"release": 0.0, "attacks": 0.0, "utility": 0.0}
    # cached releases are read back, not released: only the judged texts are released here
    cached = PointPlan("emp 10", "emp", False, releases={"unknown": 1, "known": 1}, cached={"known": 1},
                       fits=1, scorings=2, tasks=("sim",))
    assert point_seconds(pilot, cached, COUNTS)["release"] == pytest.approx(0.005 * 500)
    assert point_seconds(pilot, cached, COUNTS)["attacks"] > 0  # still attacked and measured
    # a clean attack the attack cache holds is not fitted; no shared work when every point is read back
    shared = shared_seconds(pilot, SharedPlan(True, clean_fits=(), tasks=("sim",), unmodified=False), COUNTS)
    assert shared["fit attacks"] == 0.0 and shared["unmodified text"] == 0.0 and shared["prepare utility"] > 0
    assert shared_seconds(pilot, SharedPlan(False, ("svm",), ("sim",), True, ("svm",)), COUNTS) == {}
    whole = estimate_run(pilot, SharedPlan(False), [finished], COUNTS, spent=3.0)
    assert whole.total == 3.0 and whole.remaining == 0.0


def test_the_pilot_is_stratified_by_length():
    lengths = list(range(1, 101))
    chosen = stratified_sample(lengths, 4, seed=3)
    assert [lengths[i] // 25 for i in chosen] == [0, 1, 2, 3]  # one from each quarter
    assert stratified_sample(lengths, 4, seed=3) == chosen and len(stratified_sample(lengths, 500, 3)) == 100


def test_minutes_chooses_the_authors_that_fit_on_a_toy_corpus():
    # 12 authors, each with one known text of 100 words and one judged text of 100 words
    labels = [f"author{i:02d}" for i in range(12)]
    text = " ".join(["word"] * 100)
    corpora = EvaluationCorpora(LabelledCorpus([text] * 12, labels), LabelledCorpus([text] * 12, labels))
    # 0.01 s a word, the judged and the known texts released: 2 s an author; 10 s spent before
    pilot = Pilot(2, 12, 0, settings={"emp 10": SettingPilot(2, 200, 2.0, mechanism="emp")})
    plan = PointPlan("emp 10", "emp", False, releases={"unknown": 1, "known": 1})
    whole = estimate_run(pilot, SharedPlan(False), [plan], Counts.of(corpora, True), spent=10.0)
    assert whole.total == pytest.approx(10.0 + 12 * 2.0)
    choice = authors_within(0.5, whole, SharedPlan(False), [plan], corpora, True, [])  # 30 s: 10 authors
    assert (choice.authors, choice.of, choice.restricts) == (10, 12, True)
    assert choice.expected_seconds == pytest.approx(30.0) and choice.judged == 10
    assert "at most 10 of 12 authors fit" in choice.message() and "--first-labels 10" in choice.message()
    assert set(choice.half_widths) == {0.05, 0.5} and choice.half_widths[0.5][0] > choice.half_widths[0.05][0]
    everyone = authors_within(60, whole, SharedPlan(False), [plan], corpora, True, [])
    assert everyone.authors == 12 and not everyone.restricts and "all 12 authors fit" in everyone.message()
    none = authors_within(0.2, whole, SharedPlan(False), [plan], corpora, True, [])  # 12 s: not 2 authors
    assert none.authors == 0 and "--minutes 1 or more" in none.message()


def _strip_time(value):
    """Results without what the clock says (seconds, timings, dates)."""
    if isinstance(value, dict):
        return {k: _strip_time(v) for k, v in value.items()
                if "seconds" not in k and k not in ("timings", "created", "estimate", "machine")}
    if isinstance(value, list):
        return [_strip_time(v) for v in value]
    return value


def test_a_seeded_comparison_gives_the_same_results_with_and_without_the_estimate(tmp_path, vectors, toy_corpora):
    plan = _plan(vectors)
    runs = {}
    for estimate in (True, False):
        folder = tmp_path / str(estimate)
        runs[estimate] = run_comparison(toy_corpora, plan, state_folder=folder / "state", estimate=estimate,
                                        release_cache_folder=folder / "releases")
    assert "estimate" in runs[True] and "estimate" not in runs[False]
    assert _strip_time(runs[True]) == _strip_time(runs[False])
    # the pilot keeps nothing: the same releases in the cache, the same attacks fitted
    for kept in ("releases", "state/attacks"):
        assert sorted(p.name for p in (tmp_path / "True" / kept).iterdir()) == sorted(
            p.name for p in (tmp_path / "False" / kept).iterdir())
    estimate = runs[True]["estimate"]
    assert [r["id"] for r in estimate["releases"]] == [r["id"] for r in runs[True]["releases"]]
    assert set(estimate["expected_seconds"]["by_release"]) == set(estimate["measured_seconds"]["by_release"])
    assert estimate["expected_seconds"]["total"] > estimate["spent_seconds"] > 0
    assert all(r["expected_seconds"] > 0 and r["measured_seconds"] > 0 for r in estimate["releases"])


def test_finished_points_and_cached_releases_are_estimated_as_costing_nothing(tmp_path, vectors, toy_corpora):
    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    told: list[str] = []
    run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5])), estimate=True, **folders)
    second = run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5, 50.0])), estimate=True,
                            log=told.append, **folders)["estimate"]
    by_id = {r["id"]: r for r in second["releases"]}
    assert by_id["emp epsilon 0.5"]["read_back"] and by_id["emp epsilon 0.5"]["expected_seconds"] == 0.0
    assert by_id["emp epsilon 50"]["expected_seconds"] > 0 and not by_id["emp epsilon 50"]["read_back"]
    assert "  emp epsilon 0.5: read back, nothing to do" in told
    assert second["expected_seconds"]["shared_parts"]["fit attacks"] == 0.0  # both read from the attack cache
    assert list(second["pilot"]["settings"]) == ["emp epsilon 50"]  # nothing piloted for a finished point

    shutil.rmtree(tmp_path / "state" / "points")  # the points forgotten, their releases kept
    third = run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5, 50.0])), estimate=True,
                           **folders)["estimate"]
    for release in third["releases"]:
        assert release["parts"]["release"] == 0.0 and release["releases_cached"] == release["releases"] == 2
        assert release["parts"]["utility"] > 0  # measured again, from the cached releases
    assert all(s["chunks"] == [] for s in third["pilot"]["settings"].values())  # no pilot release made

    told.clear()
    run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5, 50.0])), estimate=True,
                   log=told.append, **folders)
    assert any("are read back; nothing to release" in line for line in told)


def test_minutes_cuts_the_comparison_to_the_authors_that_fit(tmp_path, vectors, toy_corpora, monkeypatch):
    import textveil.evaluation.comparison as comparison
    from textveil.evaluation.time_estimate import authors_within as real

    def two_fit(minutes, estimate, *args):
        found = real(minutes, estimate, *args)
        found.authors = 2
        return found

    monkeypatch.setattr(comparison, "authors_within", two_fit)
    asked: list[int] = []

    def restrict(authors: int) -> EvaluationCorpora:
        asked.append(authors)
        cut = lambda c: c.subset([i for i, label in enumerate(c.labels) if label in ("author0", "author1")])  # noqa
        return EvaluationCorpora(cut(toy_corpora.risk_known), cut(toy_corpora.risk_unknown))

    told: list[str] = []
    results = run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5])), minutes=60,
                             restrict=restrict, log=told.append)
    assert asked == [2] and results["corpora"]["risk_known"]["labels"] == 2
    assert results["estimate"]["minutes"]["authors"] == 2 and results["estimate"]["minutes"]["restricted"]
    assert any("at most 2 of 3 authors fit" in line for line in told)
    monkeypatch.undo()
    with pytest.raises(InvalidParameterError, match="even the first 2 authors"):
        run_comparison(toy_corpora, _plan(vectors, ComparedMechanism("emp", [0.5])), minutes=1e-6)


def test_compare_and_evaluate_say_the_estimate_and_keep_it(tmp_path, vectors, toy_corpora, capsys, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    known = write_folders(tmp_path / "known", toy_corpora.risk_known)
    unknown = write_folders(tmp_path / "unknown", toy_corpora.risk_unknown)
    common = ["--risk-corpus", str(known), "--risk-unknown", str(unknown), "--embeddings", str(vectors),
              "--attacks", "char3-svm,length", "--utility", "unigram-cosine", "--seed", "3"]
    code, _, err = run_cli(["compare", *common, "--out", str(tmp_path / "compare"), "-m", "emp:0.5"], capsys,
                           monkeypatch)
    assert code == 0, err
    assert "estimate: about" in err and "emp epsilon 0.5:" in err
    assert "estimate" in json.loads((tmp_path / "compare" / "results.json").read_text())
    stated = (tmp_path / "compare" / "report.md").read_text()
    assert re.search(r"time estimate: .+ expected before the run .+ taken \([+-]\d+% off", stated), stated
    code, _, err = run_cli(["evaluate", *common, "--out", str(tmp_path / "evaluate"), "-m", "emp", "--grid", "0.5",
                            "--minutes", "600"], capsys, monkeypatch)
    assert code == 0, err
    assert "all 3 authors fit" in err and "estimate: about" in err
    kept = json.loads((tmp_path / "evaluate" / "results.json").read_text())["estimate"]
    assert kept["releases"][0]["id"] == "0.5" and kept["measured_seconds"]["by_release"]["0.5"] > 0
    assert "--minutes 600: all 3 authors fit" in (tmp_path / "evaluate" / "report.md").read_text()


def test_a_stored_point_that_will_be_measured_again_is_not_estimated_as_read_back(tmp_path, vectors, toy_corpora):
    """A point stored without each text's outcome is measured again from its cached releases: the
    estimate says what the run will do, not "read back"."""
    import json

    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    plan = _plan(vectors, ComparedMechanism("emp", [0.5, 50.0]))
    run_comparison(toy_corpora, plan, **folders)
    for stored in (tmp_path / "state" / "points").glob("*.json"):
        point = json.loads(stored.read_text())
        if point.get("parameter") == 0.5:
            for key in ("attacks", "attacks_release"):
                for result in point[key].values():
                    result.pop("hits", None)
            stored.write_text(json.dumps(point))
    found = run_comparison(toy_corpora, plan, estimate=True, **folders)["estimate"]
    by_id = {r["id"]: r for r in found["releases"]}
    assert not by_id["emp epsilon 0.5"]["read_back"] and by_id["emp epsilon 0.5"]["parts"]["release"] == 0.0
    assert by_id["emp epsilon 50"]["read_back"]
