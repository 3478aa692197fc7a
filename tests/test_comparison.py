"""``textveil compare``: several mechanisms on one split, the same attacks and utility for every
release, a frontier; resumable after an interruption without releasing anything again."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.conftest import run_cli, style_corpus, write_folders
from textveil.errors import InvalidParameterError
from textveil.evaluation.comparison import ComparedMechanism, ComparisonPlan, parse_compared_mechanism, run_comparison
from textveil.evaluation.experiment_plan import EvaluationCorpora

# A synthetic corpus model small enough to train in a second: its quality does not matter here,
# only that it releases a new (unaligned) corpus.
TINY_SYNTH = {"hidden": 16, "epochs": 2, "batch_size": 8, "max_length": 40}


@pytest.fixture
def toy_corpora(toy_word_embeddings) -> EvaluationCorpora:
    rng = np.random.default_rng(11)
    words = list(toy_word_embeddings.words)
    return EvaluationCorpora(style_corpus(words, rng, 3, 6), style_corpus(words, rng, 3, 2))


def _plan(vectors, **changes) -> ComparisonPlan:
    plan = ComparisonPlan(
        mechanisms=[ComparedMechanism("emp", [0.5]), ComparedMechanism("synth", [0.7], dict(TINY_SYNTH))],
        attacks=["char3-svm", "length"], utility=["stylometric-l2", "unigram-cosine"], seed=4,
        embeddings=str(vectors), top_k=2, thresholds=[0.4, 1.0])
    for name, value in changes.items():
        setattr(plan, name, value)
    return plan


class Interrupt(Exception):
    """Stands for a comparison killed part of the way through."""


def test_a_tiny_comparison_holds_every_mechanism_and_marks_what_does_not_apply(tmp_path, vectors, toy_corpora):
    from textveil.evaluation.comparison_report import write_comparison_report

    results = run_comparison(toy_corpora, _plan(vectors), state_folder=tmp_path / "state",
                             release_cache_folder=tmp_path / "releases")
    releases = {r["mechanism"]: r for r in results["releases"]}
    assert set(releases) == {"emp", "synth [batch_size=8, epochs=2, hidden=16, max_length=40]"}
    emp = releases["emp"]
    synth = next(r for r in results["releases"] if r["name"] == "synth")
    assert emp["setting"] == "epsilon 0.5" and synth["setting"] == "temperature 0.7"
    assert set(emp["utility"]) == {"stylometric-l2", "unigram-cosine"} and not emp["not_applicable"]
    # the synthetic corpus is not aligned with the originals: the pairwise measure is n/a, never 0
    assert set(synth["utility"]) == {"unigram-cosine"}
    assert "compares each text with its own release" in synth["not_applicable"]["stylometric-l2"]
    # the same attacks, both trainings, at every release; the risk is the best of them
    for release in results["releases"]:
        assert set(release["point"]["attacks"]) == set(release["point"]["attacks_release"]) == {"char3-svm", "length"}
        best = max(r["top1"] for key in ("attacks", "attacks_release") for r in release["point"][key].values())
        assert release["risk"]["top1"] == best
    unmodified = results["unmodified"]
    assert unmodified["risk"]["top1"] > 0.9 and results["floor"] == {
        "attack": "length", "top1": unmodified["attacks"]["length"]["top1"]}
    assert results["chance"] == pytest.approx(1 / 3)
    assert results["utility_measures"]["stylometric-l2"]["aligned_only"] is True
    frontier = results["frontier"]["unigram-cosine"]
    assert frontier["pareto"] and set(frontier["pareto"]) <= {r["id"] for r in results["releases"]}
    assert "stylometric-l2" in results["frontier"] and synth["id"] not in results["frontier"]["stylometric-l2"]["pareto"]
    assert results["timings"]["total"] > 0 and "fit attacks" in results["timings"]
    spent = results["measured_seconds"]
    assert set(spent["by_mechanism"]) == {"unmodified text", emp["mechanism"], synth["mechanism"]}
    assert spent["total"] == pytest.approx(sum(spent["by_mechanism"].values()), abs=0.01)
    assert {"release", "release known texts", "utility"} <= set(spent["by_stage"])

    written = write_comparison_report(results, tmp_path / "report")
    markdown = written["report.md"].read_text()
    assert "emp" in markdown and "synth" in markdown and "n/a" in markdown
    assert json.loads(written["results.json"].read_text())["releases"][0]["id"] == results["releases"][0]["id"]


def test_an_interrupted_comparison_resumes_without_releasing_a_finished_point_again(
        tmp_path, vectors, toy_corpora, monkeypatch):
    from textveil.mechanisms.base import Mechanism

    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5, 50.0]), ComparedMechanism("redact")])
    released: list[str] = []
    original = Mechanism.release_corpus

    def counting(self, texts, labels=None, **kwargs):
        released.append(f"{self.name} {getattr(self, 'epsilon', '')}")
        return original(self, texts, labels, **kwargs)

    monkeypatch.setattr(Mechanism, "release_corpus", counting)

    def interrupt_at_redact(stage: str, done: int, total: int) -> None:
        if stage.startswith("redact"):
            raise Interrupt(stage)

    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    with pytest.raises(Interrupt):
        run_comparison(toy_corpora, plan, progress=interrupt_at_redact, **folders)
    # both emp points finished (unknown and known texts released for each); redact was cut off
    assert released.count("emp 0.5") == 2 and released.count("emp 50.0") == 2 and released.count("redact ") == 1
    released.clear()

    resumed = run_comparison(toy_corpora, plan, **folders)
    assert resumed["resume"]["points_read_back"] == 3  # the unmodified text and both emp points
    # only the unfinished point is measured, and of its releases only the one not finished
    assert released == ["redact "] and resumed["release_cache"]["hits"] == 1
    released.clear()

    again = run_comparison(toy_corpora, plan, **folders)
    assert released == [] and again["resume"]["points_read_back"] == 4
    assert "fit attacks" not in again["timings"]  # nothing to measure: nothing released or fitted
    strip = lambda r: {k: v for k, v in r.items() if k not in ("read_back", "seconds")}  # noqa: E731
    assert [strip(r) for r in again["releases"]] == [strip(r) for r in resumed["releases"]]


def test_a_stored_point_is_measured_again_when_the_mechanism_no_longer_makes_its_releases(
        tmp_path, vectors, toy_corpora, monkeypatch):
    """A point key names the entry (emp at 0.5), not the code: when a fix changes what the
    mechanism releases under the same version (its fingerprint), the stored figures are not read
    back; a point stored before points held a digest is kept only while the cache holds its
    judged releases as the mechanism makes them now, written before the point."""
    import shutil

    from textveil.mechanisms.earth_movers import EarthMoversPrivacy

    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5])])
    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    first = run_comparison(toy_corpora, plan, **folders)
    assert first["resume"]["points_read_back"] == 0
    assert run_comparison(toy_corpora, plan, **folders)["resume"]["points_read_back"] == 2

    original = EarthMoversPrivacy.fingerprint
    monkeypatch.setattr(EarthMoversPrivacy, "fingerprint", lambda self: {**original(self), "design": 2})
    changed = run_comparison(toy_corpora, plan, **folders)
    assert changed["resume"]["points_read_back"] == 1  # only the unmodified text

    # a point stored without a digest (an older textveil): kept while its releases are cached
    (stored,) = [path for path in (tmp_path / "state" / "points").glob("*.json")
                 if "release_digest" in json.loads(path.read_text())]
    point = json.loads(stored.read_text())
    del point["release_digest"]
    stored.write_text(json.dumps(point))
    assert run_comparison(toy_corpora, plan, **folders)["resume"]["points_read_back"] == 2
    stored.write_text(json.dumps(point))
    shutil.rmtree(tmp_path / "releases")
    assert run_comparison(toy_corpora, plan, **folders)["resume"]["points_read_back"] == 1
    # the cache holds the releases, written after the point (a later run released them and
    # stopped before measuring): the point's figures are of earlier releases, measured again
    stored.write_text(json.dumps(point))
    for release in (tmp_path / "releases").glob("*.json"):
        os.utime(release, (stored.stat().st_mtime + 60, stored.stat().st_mtime + 60))
    assert run_comparison(toy_corpora, plan, **folders)["resume"]["points_read_back"] == 1


def test_a_resumed_comparison_reads_the_clean_attacks_back(tmp_path, vectors, toy_corpora):
    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5])])
    first = run_comparison(toy_corpora, plan, state_folder=tmp_path / "state")
    plan.mechanisms = [ComparedMechanism("emp", [0.5, 3.0])]  # one more point: the clean attacks are not fitted again
    second = run_comparison(toy_corpora, plan, state_folder=tmp_path / "state")
    assert first["resume"]["attacks_read_back"] == 0 and second["resume"]["attacks_read_back"] == 2
    assert second["releases"][0]["point"]["attacks"] == first["releases"][0]["point"]["attacks"]


def test_an_unseeded_comparison_keeps_nothing(tmp_path, vectors, toy_corpora):
    plan = _plan(vectors, seed=None, mechanisms=[ComparedMechanism("redact")])
    results = run_comparison(toy_corpora, plan, state_folder=tmp_path / "state",
                             release_cache_folder=tmp_path / "releases")
    assert results["resume"]["points_read_back"] == 0 and not (tmp_path / "state").exists()
    assert not (tmp_path / "releases").exists()


def test_mechanism_specs_are_parsed_and_checked():
    assert parse_compared_mechanism("syntf:5, 10").grid == [5.0, 10.0]
    with pytest.raises(InvalidParameterError, match="names a epsilon twice"):
        parse_compared_mechanism("emp:10,10")
    with pytest.raises(InvalidParameterError, match="epsilon '-1'"):
        parse_compared_mechanism("emp:-1")
    with pytest.raises(Exception, match="textveil mechanisms"):
        parse_compared_mechanism("nope:1")


def test_the_same_mechanism_twice_is_refused_before_work(vectors, toy_corpora):
    from textveil.evaluation.comparison import validate_comparison

    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [1.0]), ComparedMechanism("emp", [2.0])])
    with pytest.raises(InvalidParameterError, match="given twice"):
        validate_comparison(plan, toy_corpora)
    plan.mechanisms = [ComparedMechanism("emp", [1.0]), ComparedMechanism("emp", [2.0], {"layout": "keep"})]
    validate_comparison(plan, toy_corpora)  # two layouts of one mechanism are two mechanisms
    with pytest.raises(InvalidParameterError, match="no mechanism"):
        validate_comparison(_plan(vectors, mechanisms=[]), toy_corpora)


def test_compare_command_writes_the_report_and_resumes_with_its_recorded_seed(
        tmp_path, vectors, toy_corpora, capsys, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    known = write_folders(tmp_path / "known", toy_corpora.risk_known)
    unknown = write_folders(tmp_path / "unknown", toy_corpora.risk_unknown)
    args = ["compare", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--out", str(tmp_path / "out"),
            "-m", "emp:0.5", "-m", "redact", "--set", "emp.layout=keep", "--embeddings", str(vectors),
            "--attacks", "char3-svm,length", "--utility", "unigram-cosine"]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "drawn from OS entropy" in err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["mechanism"] for r in results["releases"]] == ["emp [layout=keep]", "redact"]
    assert (tmp_path / "out" / "frontier.png").is_file() and (tmp_path / "out" / "report.html").is_file()
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0 and "resuming: 3 of 3 points" in err
    again = json.loads((tmp_path / "out" / "results.json").read_text())
    assert again["plan"]["seed"] == results["plan"]["seed"]


@pytest.mark.parametrize("extra, needle", [
    (["-m", "redact:5"], "redact has no parameter to sweep"),
    (["-m", "emp", "--set", "layout=keep"], "MECHANISM.NAME=VALUE"),
    (["-m", "emp", "--set", "syntf.epsilon=3"], "which no --mechanism gives"),
    (["-m", "emp", "--attacks", "nope"], "--list"),
    (["-m", "emp", "--thresholds", "0.1,high"], "--thresholds"),
    (["-m", "emp@/no/such/model"], "/no/such/model"),
])
def test_compare_bad_input_is_one_line_before_work(tmp_path, toy_corpora, capsys, monkeypatch, extra, needle):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    known = write_folders(tmp_path / "known", toy_corpora.risk_known)
    code, _, err = run_cli(["compare", "--risk-corpus", str(known), "--out", str(tmp_path / "out"), *extra],
                           capsys, monkeypatch)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out" / "results.json").exists()


def test_one_comparison_holds_a_mechanism_under_several_settings():
    """``-m NAME[PARAM=VALUE,...]:GRID``: the entry's own settings; ``--set`` fills the others."""
    from textveil.cli.compare import _mechanism_specs

    first, second = _mechanism_specs(["paraphrase[prompt=neutral,vocabulary=8000]:30,40", "paraphrase:25"],
                                     ["paraphrase.prompt=one-shot", "paraphrase.width=12"])
    assert (first.grid, first.options) == ([30.0, 40.0], {"prompt": "neutral", "vocabulary": "8000", "width": 12.0})
    assert (second.grid, second.options) == ([25.0], {"prompt": "one-shot", "width": 12.0})
    for bad, message in (("paraphrase[prompt=poem]:30", "unknown --prompt"), ("paraphrase[epsilon=3]", "after ':'"),
                         ("paraphrase[prompt=neutral", "close its settings"),
                         ("paraphrase[neutral]:30", "PARAM=VALUE")):
        with pytest.raises(InvalidParameterError, match=message):
            _mechanism_specs([bad], [])


def test_each_release_is_told_text_by_text_and_whole_when_read_back(tmp_path, vectors, toy_corpora):
    """``text_progress`` follows every release in texts (a language model's release of hundreds of
    documents shows in a log as it goes), and reaches each release's total also when the release
    is read back from the cache."""
    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5])])
    for run in range(2):  # released, then read back
        told: list[tuple[str, float, int]] = []
        run_comparison(toy_corpora, plan, state_folder=tmp_path / f"state-{run}",
                       release_cache_folder=tmp_path / "releases",
                       text_progress=lambda stage, done, total: told.append((stage, done, total)))
        stages = list(dict.fromkeys(stage for stage, _, _ in told))
        assert any(stage.endswith("releasing the unknown texts") for stage in stages)
        assert any(stage.endswith("releasing the known texts") for stage in stages)
        for stage in stages:
            counts = [(done, total) for s, done, total in told if s == stage]
            assert counts[0][0] == 0 and counts[-1][0] == counts[-1][1] > 0  # from none to all
            assert [done for done, _ in counts] == sorted(done for done, _ in counts)


def test_every_risk_has_its_interval_and_each_release_its_paired_test_against_the_reference(
        tmp_path, vectors, toy_corpora):
    from scipy import stats

    from textveil.evaluation.comparison_report import write_comparison_report

    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5, 3.0])], reference="emp:3")
    results = run_comparison(toy_corpora, plan, state_folder=tmp_path / "state",
                             release_cache_folder=tmp_path / "releases")
    low, high = (results["releases"][0]["risk"]["interval"][key] for key in ("low", "high"))
    releases = {r["setting"]: r for r in results["releases"]}
    assert results["reference"] == releases["epsilon 3"]["id"] and "paired" not in releases["epsilon 3"]
    paired = releases["epsilon 0.5"]["paired"]
    # the test reads each release's risk line, text by text
    ours = releases["epsilon 0.5"]["point"]["attacks" if releases["epsilon 0.5"]["risk"]["training"] == "clean"
                                            else "attacks_release"][releases["epsilon 0.5"]["risk"]["attack"]]
    assert len(ours["hits"]) == ours["n_unknown"] and ours["hits"].count("1") == round(ours["top1"] * ours["n_unknown"])
    discordant = paired["only_first"] + paired["only_second"]
    assert paired["p_value"] == (1.0 if discordant == 0 else
                                 pytest.approx(stats.binomtest(paired["only_first"], discordant).pvalue))
    assert low <= results["releases"][0]["risk"]["top1"] <= high
    report = write_comparison_report(results, tmp_path / "out")["report.md"].read_text()
    assert "risk against " in report and "the reference" in report and "McNemar" in report
    with pytest.raises(InvalidParameterError, match="names no release"):
        run_comparison(toy_corpora, _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5])], reference="syntf:3"))


def test_a_point_stored_without_each_texts_outcome_is_measured_again_from_the_cached_releases(
        tmp_path, vectors, toy_corpora):
    """Paired tests need each text's outcome; a point stored before it was kept is measured again
    where its releases are all cached, and nothing is released again."""
    plan = _plan(vectors, mechanisms=[ComparedMechanism("emp", [0.5])])
    folders = {"state_folder": tmp_path / "state", "release_cache_folder": tmp_path / "releases"}
    first = run_comparison(toy_corpora, plan, **folders)
    (stored,) = [path for path in (tmp_path / "state" / "points").glob("*.json")
                 if "release_digest" in json.loads(path.read_text())]
    point = json.loads(stored.read_text())
    for key in ("attacks", "attacks_release"):
        for result in point[key].values():
            del result["hits"]
    stored.write_text(json.dumps(point))
    again = run_comparison(toy_corpora, plan, **folders)
    assert again["resume"]["points_read_back"] == 1 and again["release_cache"]["misses"] == 0
    assert again["releases"][0]["point"]["attacks"] == first["releases"][0]["point"]["attacks"]
