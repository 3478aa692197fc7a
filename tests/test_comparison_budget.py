"""The budget beside the risk: every release of a comparison carries the epsilon its releases'
Guarantees state (per document for epsilon-DP, per unit with its metric for metric privacy), the
reports show it, a merge keeps it, and results or points written before it still read."""

from __future__ import annotations

import copy
import html
import importlib.util
import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, style_corpus
from textveil.corpus.labelled import LabelledCorpus
from textveil.evaluation.comparison import ComparedMechanism, ComparisonPlan, run_comparison
from textveil.evaluation.comparison_report import write_comparison_report
from textveil.evaluation.experiment_plan import EvaluationCorpora
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.syntf import SynTF
from textveil.pii.stage import EntityOptions

MECHANISMS = [ComparedMechanism("emp", [0.5]), ComparedMechanism("syntf", [3.0]), ComparedMechanism("redact")]


def _of_varied_lengths(corpus: LabelledCorpus) -> LabelledCorpus:
    """The corpus with each text cut to another length, so that the epsilon per document differs."""
    texts = [" ".join(text.split()[: 8 + 3 * i]) + "." for i, text in enumerate(corpus.texts)]
    return LabelledCorpus(texts, list(corpus.labels), name=corpus.name)


@pytest.fixture
def toy_corpora(toy_word_embeddings) -> EvaluationCorpora:
    rng = np.random.default_rng(11)
    words = list(toy_word_embeddings.words)
    return EvaluationCorpora(style_corpus(words, rng, 3, 4), _of_varied_lengths(style_corpus(words, rng, 3, 2)))


def _plan(vectors: Path) -> ComparisonPlan:
    # the entity stage off: the judged texts reach the mechanism as they are
    return ComparisonPlan(mechanisms=list(MECHANISMS), attacks=["length"], utility=["unigram-cosine"], seed=4,
                          embeddings=str(vectors), top_k=2, thresholds=[1.0], entities=EntityOptions(operator="off"))


@pytest.fixture
def recorded(monkeypatch) -> dict[str, list[list]]:
    """The Guarantees of every release emp and syntf make, call by call, as they made them."""
    calls: dict[str, list[list]] = {"emp": [], "syntf": []}
    for cls in (EarthMoversPrivacy, SynTF):
        original = cls.sanitize_many

        def recording(self, texts, *args, _original=original, **kwargs):
            texts = list(texts)
            releases = _original(self, texts, *args, **kwargs)
            calls[self.name].append((texts, [release.guarantee for release in releases]))
            return releases

        monkeypatch.setattr(cls, "sanitize_many", recording)
    return calls


def _judged(calls: list, corpora: EvaluationCorpora) -> list:
    """The Guarantees of the releases of the judged (unknown) texts."""
    found = [guarantees for texts, guarantees in calls if texts == corpora.risk_unknown.texts]
    assert found, "the unknown texts were not released"
    return found[0]


def test_each_release_carries_the_epsilon_its_guarantees_state(tmp_path, vectors, toy_corpora, recorded):
    results = run_comparison(toy_corpora, _plan(vectors), state_folder=tmp_path / "state",
                             release_cache_folder=tmp_path / "releases")
    budgets = {r["name"]: r["budget"] for r in results["releases"]}

    # epsilon-DP: the median and the largest of the judged texts' own epsilon per document
    own = [g.document_epsilon for g in _judged(recorded["syntf"], toy_corpora)]
    assert len(set(own)) > 1  # texts of several lengths: the median is not the largest
    syntf = budgets["syntf"]
    assert syntf["kind"] == "dp" and syntf["per_document"] == {
        "median": pytest.approx(statistics.median(own)), "largest": pytest.approx(max(own)),
        "texts": len(toy_corpora.risk_unknown)}
    assert syntf["per_unit"] == 3.0 and syntf["unit"] == "token" and syntf["metric"] is None

    # metric privacy: no epsilon per document, the epsilon per token and the metric its Guarantee names
    guarantee = _judged(recorded["emp"], toy_corpora)[0]
    emp = budgets["emp"]
    assert emp["kind"] == "metric" and emp["per_document"] is None
    assert emp["per_unit"] == guarantee.epsilon == 0.5 and emp["unit"] == guarantee.unit
    assert emp["metric"] == guarantee.metric and "Euclidean" in emp["metric"]

    # no guarantee: no bound
    assert budgets["redact"]["kind"] == "none" and budgets["redact"]["per_document"] is None
    assert budgets["redact"]["per_unit"] is None

    written = write_comparison_report(results, tmp_path / "report")
    stored = {r["name"]: r["budget"] for r in json.loads(written["results.json"].read_text())["releases"]}
    assert stored == budgets
    markdown = written["report.md"].read_text()
    page = written["report.html"].read_text()
    per_unit = f"0.5 per {guarantee.unit}, {guarantee.metric}"
    for shown, cell in ((markdown, per_unit), (page, html.escape(per_unit))):
        assert "epsilon per document: median (largest)" in shown and "epsilon per unit (metric)" in shown
        assert "no bound" in shown and cell in shown
    syntf_row = next(line for line in markdown.splitlines() if line.startswith("| syntf"))
    assert f"(largest {max(own):g})" in syntf_row and "3 per token" in syntf_row


def test_a_point_stored_without_its_budget_reads_it_back_or_is_measured_again(
        tmp_path, vectors, toy_corpora, monkeypatch):
    from textveil.mechanisms.base import Mechanism

    plan = _plan(vectors)
    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    first = run_comparison(toy_corpora, plan, **folders)
    for point_file in (tmp_path / "state" / "points").glob("*.json"):  # as points were stored before
        point = json.loads(point_file.read_text())
        point.pop("budget", None)
        point_file.write_text(json.dumps(point))
    released: list[str] = []
    original = Mechanism.release_corpus
    monkeypatch.setattr(Mechanism, "release_corpus", lambda self, *a, **k: released.append(self.name)
                        or original(self, *a, **k))

    again = run_comparison(toy_corpora, plan, **folders)
    assert released == [] and again["resume"]["points_read_back"] == len(first["releases"]) + 1
    assert [r["budget"] for r in again["releases"]] == [r["budget"] for r in first["releases"]]

    # without the releases, a point that states an epsilon is measured again (never "not
    # recorded" where a fresh run shows figures); a kind without epsilon is read back as it is
    for point_file in (tmp_path / "state" / "points").glob("*.json"):
        point = json.loads(point_file.read_text())
        point.pop("budget", None)
        point_file.write_text(json.dumps(point))
    for release_file in (tmp_path / "releases").glob("*.json"):
        release_file.unlink()
    bare = run_comparison(toy_corpora, plan, **folders)
    assert sorted(set(released)) == ["emp", "syntf"]
    assert [r["budget"] for r in bare["releases"]] == [r["budget"] for r in first["releases"]]
    markdown = write_comparison_report(bare, tmp_path / "bare")["report.md"].read_text()
    assert "not recorded" not in markdown


def _load_benchmark(name: str):
    path = REPO_ROOT / "benchmarks" / "comparisons" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_merge_keeps_the_budget_and_results_without_it_still_render(tmp_path, vectors, toy_corpora):
    results = run_comparison(toy_corpora, _plan(vectors), state_folder=tmp_path / "state",
                             release_cache_folder=tmp_path / "releases")
    results = json.loads(json.dumps(results))
    first, second = copy.deepcopy(results), copy.deepcopy(results)
    first["releases"] = [r for r in results["releases"] if r["name"] != "syntf"]
    second["releases"] = [r for r in results["releases"] if r["name"] == "syntf"]
    merged = _load_benchmark("merge_comparisons").merge([first, second])
    assert {r["id"]: r["budget"] for r in merged["releases"]} == {r["id"]: r["budget"] for r in results["releases"]}

    # a comparison written before the figures were kept: "not recorded", and "no bound" where none can be
    old = copy.deepcopy(merged)
    for release in old["releases"]:
        release.pop("budget")
        release["point"].pop("budget", None)
    markdown = write_comparison_report(old, tmp_path / "old")["report.md"].read_text()
    rows: dict[str, str] = {}
    for line in markdown.splitlines():  # the releases table first: the frontier's tables name releases too
        if line.startswith("| "):
            rows.setdefault(line.split(" | ")[0].strip("| "), line)
    assert "not recorded" in rows["syntf"] and "not recorded" in rows["emp"] and "no bound" in rows["redact"]
    table = _load_benchmark("comparison_tables").tables(old)
    assert "epsilon per document" in table and "not recorded" in table
    committed = json.loads((REPO_ROOT / "docs" / "results" / "blog-cross-topic" / "results.json").read_text())
    assert "not recorded" in _load_benchmark("comparison_tables").tables(committed)


def test_the_evaluation_report_shows_the_budget_and_reads_results_without_it(tmp_path):
    from textveil.evaluation.report import write_report

    committed = json.loads((REPO_ROOT / "docs" / "results" / "paper001-c50-bbc" / "results.json").read_text())
    assert not any("budget" in point for point in committed["points"])
    markdown = write_report(committed, tmp_path / "old")["report.md"].read_text()
    assert "epsilon per document: median (largest)" in markdown and "not recorded" in markdown
    point = next(p for p in committed["points"] if p.get("parameter") is not None)
    point["budget"] = {"kind": "metric", "per_document": None, "per_unit": point["parameter"], "unit": "word",
                       "metric": "Euclidean distance between word vectors"}
    markdown = write_report(committed, tmp_path / "new")["report.md"].read_text()
    assert f"{point['parameter']:g} per word, Euclidean distance between word vectors" in markdown


def test_a_merge_with_replace_takes_the_later_pieces_figures_in_the_earlier_place():
    merge = _load_benchmark("merge_comparisons").merge
    base = {"plan": {"mechanisms": []}, "measured_seconds": {"total": 0, "by_stage": {}, "by_mechanism": {}},
            "releases": [{"id": "a", "mechanism": "emp", "risk": {"top1": 0.1}},
                         {"id": "b", "mechanism": "emp", "risk": {"top1": 0.2}}]}
    later = copy.deepcopy(base)
    later["releases"] = [{"id": "a", "mechanism": "emp", "risk": {"top1": 0.3}}]
    assert [r["risk"]["top1"] for r in merge([copy.deepcopy(base), later])["releases"]] == [0.1, 0.2]
    assert [r["risk"]["top1"] for r in merge([copy.deepcopy(base), later], replace=True)["releases"]] == [0.3, 0.2]
