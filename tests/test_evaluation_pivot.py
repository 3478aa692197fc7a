"""PIVOT in the red-team harness (issue 30): ``textveil evaluate -m pivot`` and ``textveil compare``
attack its code-word release with stylometric attacks under three trainings (clean known texts,
known texts under the attacker's own key, known texts under the release's own key) and report
frequency analysis beside them; no utility task is computed on code words.

Tiny corpora (toy vocabularies, a few dozen texts): each test takes seconds, most of it reading
wordfreq's word list once.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from tests.conftest import TOY_WORDS, run_cli, style_corpus, write_folders
from textveil.evaluation.comparison import ComparedMechanism, ComparisonPlan, point_key, run_comparison
from textveil.evaluation.experiment import run_experiment
from textveil.evaluation.experiment_plan import EvaluationCorpora, ExperimentPlan
from textveil.evaluation.trainings import TRAINING_KEYS
from textveil.pii import EntityOptions

OFF = EntityOptions(operator="off")


def _best(point: dict, training: str) -> float:
    return max(result["top1"] for result in point[TRAINING_KEYS[training]].values())


def test_evaluate_pivot_writes_every_training_the_frequency_analysis_and_no_utility(
        folders, vectors, tmp_path, capsys, monkeypatch):
    known, unknown = folders
    out = tmp_path / "out"
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "-m", "pivot",
                            "--grid", "2,5", "--attacks", "char3-svm,word1-svm", "--utility", "unigram-cosine",
                            "--embeddings", str(vectors), "--entities", "off", "--seed", "3", "--top-k", "2",
                            "--out", str(out)], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    unmodified, *released = results["points"]
    assert unmodified["label"] == "none" and "attacks_same_key" not in unmodified and "frequency" not in unmodified
    assert [p["parameter"] for p in released] == [2.0, 5.0]
    for point in released:
        for training, key in TRAINING_KEYS.items():
            assert set(point[key]) == {"char3-svm", "word1-svm"}
            assert all(result["training"] == training for result in point[key].values())
        # the risk is the best over all three trainings, and names the one that reached it
        best = max(r["top1"] for key in TRAINING_KEYS.values() for r in point[key].values())
        assert point["risk"]["top1"] == best and point["risk"]["training"] in TRAINING_KEYS
        assert point[TRAINING_KEYS[point["risk"]["training"]]][point["risk"]["attack"]]["top1"] == best
        frequency = point["frequency"]
        assert frequency["l"] == point["parameter"] and frequency["claim"] == pytest.approx(1 / point["parameter"])
        assert set(frequency["references"]) == {"exact", "known", "wordfreq"}
        # the best guess from a count is right at most 1/l of the time in every count class
        assert frequency["success_bound"] <= frequency["claim"] + 1e-12
        for entry in frequency["references"].values():
            assert entry["tokens_recovered"] <= frequency["claim"] + 1e-12
        assert point["utility"] == {}
    # code words are no English text: the task is marked, with its reason, never given a number
    assert "code words" in results["utility_not_applicable"]["unigram-cosine"]
    assert results["plan"]["same_key"] is True
    assert "pivot" not in json.dumps(results["plan"]["mechanism_options"])

    report = (out / "report.md").read_text()
    assert "l-privacy" in report and "same-key-trained" in report and "the threat model implies" in report
    assert "Frequency analysis of the release" in report and "unigram-cosine: not applicable" in report
    assert "| 5 | 0.200 |" in report  # the claim beside what each attacker decoded
    assert (out / "report.html").is_file() and (out / "topk_curves.png").is_file()
    assert not (out / "risk_utility.png").exists()  # no utility on code words: no empty map
    assert "third column of panels shows the same-key-trained attacks" in report
    # the figures draw the same-key training too: a third column of top-k panels, a third line per attack
    from textveil.evaluation.plots import topk_curves
    from textveil.evaluation.trainings import lines_of

    assert ("char3-svm", "same-key") in lines_of(results["points"])
    alone = {**results, "points": [{k: v for k, v in p.items() if k != "attacks_same_key"} for p in results["points"]]}
    assert ("char3-svm", "same-key") not in lines_of(alone["points"])
    widths = [struct.unpack(">II", png[16:24])[0] for png in (topk_curves(results), topk_curves(alone))]
    assert widths[0] / widths[1] == pytest.approx(3 / 2, rel=0.1)


def test_without_the_same_key_training_the_report_says_what_the_risk_then_covers(corpora, vectors, tmp_path):
    from textveil.evaluation.report import write_report

    plan = ExperimentPlan(mechanism="pivot", grid=[3.0], attacks=["word1-svm"], utility=[], seed=1,
                          embeddings=str(vectors), top_k=2, entities=OFF, include_unmodified=False, same_key=False,
                          repeats=2)
    results = run_experiment(corpora, plan)
    point = results["points"][0]
    assert "attacks_same_key" not in point and point["risk"]["training"] in ("clean", "release")
    # two releases: frequency analysis is their mean, each release's share kept
    frequency = point["frequency"]
    assert frequency["claim"] == pytest.approx(1 / 3) and frequency["releases"] == 2
    for entry in frequency["references"].values():
        assert len(entry["tokens_recovered_values"]) == 2
        assert entry["tokens_recovered"] == pytest.approx(np.mean(entry["tokens_recovered_values"]))
        assert max(entry["tokens_recovered_values"]) <= 1 / 3 + 1e-12
    report = write_report(results, tmp_path / "report")["report.md"].read_text()
    assert "--no-same-key" in report and "released alone" in report


def test_same_key_attacks_link_authors_that_the_other_trainings_cannot(vectors):
    """Authors with distinct vocabularies: under one key an author's words keep their code words
    from known to unknown texts, so the same-key attacks identify them; attacks that learned words,
    or code words of another key, see code words they never learned. Frequency analysis stays within
    l-privacy's 1/l whatever counts the attacker holds (the guess from a count cannot beat the
    count class's largest share, which GOMM keeps at or below 1/l)."""
    rng = np.random.default_rng(11)
    corpora = EvaluationCorpora(style_corpus(list(TOY_WORDS), rng, 4, 20), style_corpus(list(TOY_WORDS), rng, 4, 10))
    plan = ExperimentPlan(mechanism="pivot", grid=[5.0], attacks=["char3-svm", "word1-svm"], utility=[], seed=2,
                          embeddings=str(vectors), top_k=2, entities=OFF, include_unmodified=False)
    point = run_experiment(corpora, plan)["points"][0]
    same_key, clean, own_key = _best(point, "same-key"), _best(point, "clean"), _best(point, "release")
    # chance is 0.25; over ten corpora and seeds same-key was 0.675 to 1.0, the others 0.25 to 0.35
    assert same_key >= 0.55, point
    assert same_key >= max(clean, own_key) + 0.25
    assert point["risk"]["training"] == "same-key"
    frequency = point["frequency"]
    assert frequency["success_bound"] <= 0.2 + 1e-12
    for name, entry in frequency["references"].items():
        assert entry["tokens_recovered"] <= 0.2 + 1e-12, name
    # the attacker who knows every count decodes exactly what the key's count classes allow
    assert frequency["references"]["exact"]["tokens_recovered"] == pytest.approx(frequency["tokens_recoverable"])
    assert point["same_key_release"]["words_protected"] > point["release"]["words_protected"]


@pytest.fixture
def toy_corpora(toy_word_embeddings) -> EvaluationCorpora:
    rng = np.random.default_rng(11)
    words = list(toy_word_embeddings.words)
    return EvaluationCorpora(style_corpus(words, rng, 3, 8), style_corpus(words, rng, 3, 3))


def test_a_comparison_holds_pivot_with_its_risk_off_every_utility_axis(tmp_path, vectors, toy_corpora):
    from textveil.evaluation.comparison_report import write_comparison_report

    plan = ComparisonPlan(mechanisms=[ComparedMechanism("emp", [0.5]), ComparedMechanism("pivot", [4.0])],
                          attacks=["char3-svm", "length"], utility=["unigram-cosine"], seed=4, embeddings=str(vectors),
                          top_k=2, thresholds=[0.5, 1.0], entities=OFF)
    results = run_comparison(toy_corpora, plan, state_folder=tmp_path / "state")
    pivot = next(r for r in results["releases"] if r["name"] == "pivot")
    assert pivot["guarantee"] == "l-privacy" and pivot["setting"] == "l 4"
    assert pivot["utility"] == {} and "code words" in pivot["not_applicable"]["unigram-cosine"]
    point = pivot["point"]
    assert {"attacks", "attacks_release", "attacks_same_key", "frequency"} <= set(point)
    assert pivot["risk"]["top1"] == max(r["top1"] for key in TRAINING_KEYS.values() for r in point[key].values())
    frontier = results["frontier"]["unigram-cosine"]
    assert pivot["id"] not in frontier["pareto"]
    assert [entry["release"] for entry in frontier["off_axis"]] == [pivot["id"]]
    assert frontier["off_axis"][0]["risk"] == pivot["risk"]["top1"]

    markdown = write_comparison_report(results, tmp_path / "report")["report.md"].read_text()
    assert "Keyed releases (PIVOT)" in markdown and "Off this axis" in markdown and "same-key" in markdown
    assert "| pivot | l 4 |" in markdown

    # a point measured without the same-key training is another point: it is never read back for one
    # with it; the other mechanisms' points are keyed as they were
    keyed, other = (point_key(plan, toy_corpora, spec, spec.grid[0]) for spec in reversed(plan.mechanisms))
    plan.same_key = False
    assert point_key(plan, toy_corpora, plan.mechanisms[1], 4.0) != keyed
    assert point_key(plan, toy_corpora, plan.mechanisms[0], 0.5) == other


def test_compare_command_takes_pivot_and_no_same_key(tmp_path, vectors, toy_corpora, capsys, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    known = write_folders(tmp_path / "known", toy_corpora.risk_known)
    unknown = write_folders(tmp_path / "unknown", toy_corpora.risk_unknown)
    code, _, err = run_cli(["compare", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--out",
                            str(tmp_path / "out"), "-m", "pivot:3", "--embeddings", str(vectors), "--entities", "off",
                            "--attacks", "word1-svm", "--utility", "unigram-cosine", "--seed", "2", "--no-same-key"],
                           capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    (pivot,) = results["releases"]
    assert results["plan"]["same_key"] is False and "attacks_same_key" not in pivot["point"]
    assert pivot["point"]["frequency"]["claim"] == pytest.approx(1 / 3)
    assert "Keyed releases (PIVOT)" in (tmp_path / "out" / "report.md").read_text()
