"""The comparison report: every file written, every release listed, "n/a" where a measure does
not apply, the frontier tables, and results.json that reads back as written."""

from __future__ import annotations

import copy
import json

import pytest

from textveil.evaluation.comparison_report import write_comparison_report
from textveil.evaluation.frontier import frontiers

SYNTH_REASON = "synth releases a new corpus, and semantic-similarity compares each text with its own release"


def _utility(similarity: float | None, fluency: float) -> dict:
    utility = {"fluency": {"value": fluency, "metric": "perplexity ratio", "higher_is_better": False}}
    if similarity is not None:
        utility["semantic-similarity"] = {"value": similarity, "metric": "semantic similarity (MiniLM cosine)",
                                          "higher_is_better": True}
    return utility


def _release(mechanism: str, parameter: float | None, risk: dict, similarity: float | None, fluency: float,
             not_applicable: dict | None = None) -> dict:
    setting = f"epsilon {parameter:g}" if parameter is not None else "default"
    return {"id": f"{mechanism} {setting}" if parameter is not None else mechanism, "mechanism": mechanism,
            "kind": "metric-dp" if parameter is not None else "none", "corpus_level": parameter is None,
            "parameter_name": "epsilon" if parameter is not None else None, "parameter": parameter,
            "setting": setting, "risk": risk, "utility": _utility(similarity, fluency),
            "not_applicable": not_applicable or {}, "seconds": 1.5, "read_back": False, "point": {}}


def comparison_results() -> dict:
    """A comparison of emp at two settings and synth (one corpus-level release) on a toy corpus."""
    return {
        "kind": "comparison", "textveil_version": "0.3.0", "created": "2026-11-25T17:00:00+00:00",
        "machine": {"platform": "Linux-test", "python": "3.11.0", "cpus": 2},
        "plan": {"attacks": ["char3-svm", "length"], "utility": ["semantic-similarity", "fluency"],
                 "trainings": ["clean", "release"], "seed": 7, "top_k": 10, "collapse_per_label": True,
                 "embeddings": "default", "language_model": None, "thresholds": [0.05, 0.2, 0.5],
                 # run_comparison adds each mechanism's label (its name with the options that set it apart)
                 "mechanisms": [{"name": "emp", "label": "emp", "grid": [10.0, 15.0], "options": {}, "model": None},
                                {"name": "synth", "grid": [], "options": {}, "model": None}]},
        "corpora": {"risk_known": {"name": "toy-known", "documents": 1500, "labels": 150, "hash": "a1"},
                    "risk_unknown": {"name": "toy-unknown", "documents": 750, "labels": 150, "hash": "b2"}},
        "chance": 1 / 150,
        "floor": {"attack": "length", "top1": 0.04},
        "utility_measures": {
            "semantic-similarity": {"metric": "semantic similarity (MiniLM cosine)", "higher_is_better": True,
                                    "aligned_only": True},
            "fluency": {"metric": "perplexity ratio", "higher_is_better": False, "aligned_only": False},
        },
        "unmodified": {"label": "none", "parameter": None,
                       "risk": {"attack": "char3-svm", "training": "clean", "top1": 0.93},
                       "utility": _utility(1.0, 1.0), "attacks": {}},
        "releases": [
            _release("emp", 10.0, {"attack": "char3-svm", "training": "release", "top1": 0.15}, 0.18, 3.5),
            _release("emp", 15.0, {"attack": "char3-svm", "training": "release", "top1": 0.35}, 0.42, 1.9),
            # a corpus-level release: semantic similarity does not apply (its value must not read 0)
            _release("synth", None, {"attack": "length", "training": "clean", "top1": 0.03}, None, 1.6,
                     {"semantic-similarity": SYNTH_REASON}),
        ],
        "timings": {"load embeddings": 1.0, "fit attacks": 10.0, "total": 42.5},
        "resume": {"releases_read_back": 0, "points_read_back": 0},
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    results = comparison_results()
    results["frontier"] = frontiers(results)
    out = tmp_path_factory.mktemp("comparison") / "report"
    return results, out, write_comparison_report(results, out, title="toy comparison")


def test_every_file_is_written(written):
    _, out, paths = written
    assert set(paths) == {"results.json", "report.md", "report.html", "frontier.png"}
    assert all(path.parent == out and path.is_file() for path in paths.values())
    assert (out / "frontier.png").read_bytes().startswith(b"\x89PNG")
    assert not list(out.glob("*.part"))  # nothing left of the atomic writes


def test_report_lists_every_mechanism_and_release_with_n_a_not_zero(written):
    _, out, _ = written
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# toy comparison")
    rows = {line.split(" | ")[0].strip("| "): line for line in markdown.splitlines() if line.startswith("| ")}
    assert rows["unmodified text"].count("93.0%") == 1
    # emp at both settings, with the attack and training that reached the risk; results written
    # before the budget was kept read "not recorded" in its two columns
    unknown = "not recorded | not recorded"
    assert f"| emp | epsilon 10 | 15.0% (char3-svm (release-trained)) | {unknown} | 0.180 | 3.500 |" in markdown
    assert f"| emp | epsilon 15 | 35.0% (char3-svm (release-trained)) | {unknown} | 0.420 | 1.900 |" in markdown
    assert f"| synth | default | 3.0% (length (clean-trained)) | {unknown} | n/a [1] | 1.600 |" in markdown
    assert f"[1] {SYNTH_REASON}" in markdown
    synth_row = next(line for line in markdown.splitlines() if line.startswith("| synth | default"))
    assert "0.000" not in synth_row
    for needle in ("toy-known", "1,500 documents", "candidate authors: 150", "chance top-1: 0.7%", "seed: 7",
                   "length floor: 4.0%", "total time: 42.5 s", "fit attacks 10.0 s", "Linux-test",
                   "language model for fluency: the bundled one", "char3-svm, length"):
        assert needle in markdown, needle


def test_a_measure_that_states_its_direction_is_not_told_it_twice(tmp_path):
    """Stored descriptions such as the describing share's end in "(lower is better)": the header and
    the frontier's paragraph say it once."""
    results = comparison_results()
    results["utility_measures"]["fluency"]["metric"] = "perplexity ratio (lower is better)"
    results["frontier"] = frontiers(results)
    write_comparison_report(results, tmp_path, title="toy comparison")
    markdown = (tmp_path / "report.md").read_text()
    assert "lower is better), lower is better" not in markdown
    assert "perplexity ratio (lower is better)" in markdown
    assert "semantic similarity (MiniLM cosine), higher is better" in markdown


def test_report_holds_the_frontier_tables(written):
    _, out, _ = written
    markdown = (out / "report.md").read_text()
    assert "### Frontier: semantic-similarity" in markdown and "### Frontier: fluency" in markdown
    # similarity: synth is left out; nothing is under 5%; emp 10 under 20%; emp 15 under 50%
    assert "Off this axis (the measure does not apply, and no number is made up for it): synth (risk 3.0%)." in markdown
    assert "| 5% | none: every release it measures that reads is riskier | – | – | – | – | – |" in markdown
    # emp at 10 is safe enough at 20% but does not read (fluency ratio 3.5): named as such, not chosen
    assert ("| 20% | none: every release it measures that reads is riskier | – | – | – | – | emp at epsilon 10 is "
            "more useful but does not read (fluency ratio 3.5 > 2) |") in markdown
    assert "| 50% | emp | epsilon 15 | 0.420 | 35.0% (char3-svm (release-trained)) | – | – |" in markdown
    # fluency (lower is better): synth is both the safest and the most fluent, so it alone is the frontier
    fluency = markdown.split("### Frontier: fluency")[1]
    assert "lower is better" in fluency
    assert "| synth | default | 3.0% | 1.600 |" in fluency
    assert fluency.count("| synth | default | 1.600 | 3.0% (length (clean-trained)) | – | – |") == 3
    similarity = markdown.split("### Frontier: semantic-similarity")[1].split("###")[0]
    assert "| emp | epsilon 10 | 15.0% | 0.180 |\n| emp | epsilon 15 | 35.0% | 0.420 |" in similarity
    assert "![" in markdown and "(frontier.png)" in markdown


def test_html_is_self_contained(written):
    _, out, _ = written
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 1 and "http" not in page
    assert "n/a [1]" in page and "Frontier: fluency" in page and "epsilon 15" in page


def test_results_json_round_trips(written):
    """What is written is the results with their intervals and frontier, and reads back the same."""
    from textveil.evaluation.frontier import frontier_of
    from textveil.evaluation.release_intervals import with_intervals

    results, out, _ = written
    shown = with_intervals(results)
    written_back = json.loads((out / "results.json").read_text())
    assert written_back == {**shown, "frontier": frontier_of(shown)}
    # written again from what it wrote: the same file (idempotent)
    write_comparison_report(written_back, out / "again")
    assert json.loads((out / "again" / "results.json").read_text()) == written_back


def test_a_missing_frontier_is_computed_and_results_are_left_alone(tmp_path):
    from textveil.evaluation.frontier import with_off_axis
    from textveil.evaluation.release_intervals import with_intervals

    results = comparison_results()
    before = copy.deepcopy(results)
    write_comparison_report(results, tmp_path)
    assert results == before
    assert json.loads((tmp_path / "results.json").read_text())["frontier"] == with_off_axis(
        frontiers(with_intervals(before)), before["releases"])


def test_no_length_floor_and_no_resume_read_as_such(tmp_path):
    results = comparison_results()
    results["floor"] = None
    results["resume"] = {"releases_read_back": 2, "points_read_back": 3}
    write_comparison_report(results, tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    assert "length floor: not measured" in markdown and "3 points and 2 releases read back" in markdown


def test_no_utility_measure_still_writes_a_report(tmp_path):
    results = comparison_results()
    results["utility_measures"] = {}
    write_comparison_report(results, tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    assert "| emp | epsilon 10 | 15.0% (char3-svm (release-trained)) |" in markdown and "Frontier:" not in markdown
    assert (tmp_path / "frontier.png").read_bytes().startswith(b"\x89PNG")
