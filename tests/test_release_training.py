"""Release-trained attacks: the attacker knows the mechanism, so every attack is also fitted on
known texts released by it, and the risk is the best attack over both trainings."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, style_corpus

from textveil.evaluation import EvaluationCorpora, ExperimentPlan, run_experiment, validate, write_report
from textveil.evaluation.trainings import attack_lines, best_attack
from textveil.errors import InvalidParameterError
from textveil.pii import EntityOptions

ATTACKS = ["char3-svm", "embedding-1nn"]


def plan_for(vectors: Path, **changes) -> ExperimentPlan:
    # the mechanism's own behaviour on toy text: the entity stage (tests/test_pii.py) is off
    plan = ExperimentPlan(grid=[0.5], seed=3, embeddings=str(vectors), top_k=3, attacks=ATTACKS,
                          utility=["unigram-cosine"], entities=EntityOptions(operator="off"))
    return replace(plan, **changes)


def test_both_trainings_are_measured_and_the_risk_is_the_best_of_both(vectors, corpora, tmp_path):
    ticks = []
    results = run_experiment(corpora, plan_for(vectors, grid=[0.5, 200.0]), progress=lambda *tick: ticks.append(tick))
    assert results["plan"]["trainings"] == ["clean", "release"]
    clean, noisy, faint = results["points"]
    for point in results["points"]:
        assert list(point["attacks"]) == list(point["attacks_release"]) == ATTACKS
        assert {r["training"] for r in point["attacks"].values()} == {"clean"}
        assert {r["training"] for r in point["attacks_release"].values()} == {"release"}
        top1s = [result["top1"] for _, _, result in attack_lines(point)]
        # the risk is the best of all four, and it names the attack and training that reached it
        assert point["risk"]["top1"] == max(top1s) >= min(top1s)
        winner = point["risk"]
        key = "attacks" if winner["training"] == "clean" else "attacks_release"
        assert point[key][winner["attack"]]["top1"] == winner["top1"]
    # A fresh attack fitted on released known texts is another attack than the clean-trained one.
    assert any(noisy["attacks"][name]["topk"] != noisy["attacks_release"][name]["topk"] for name in ATTACKS)
    changed = [p["known_release"]["words_changed_fraction"] for p in (noisy, faint)]
    assert changed[0] > 0.7 > 0.1 > changed[1]
    # The unmodified text has no mechanism: one clean-trained measurement, recorded under both.
    assert clean["release_training_is_clean"] and "known_release" not in clean
    assert [{**r, "training": "clean"} for r in clean["attacks_release"].values()] == list(clean["attacks"].values())
    # Progress names every stage: per graded point, release, 2 clean attacks, the known
    # release, 2 release-trained attacks, 1 utility task; the unmodified point has no release training.
    stages = [stage for stage, _, _ in ticks]
    assert [done for _, done, _ in ticks] == list(range(1, 4 + 7 + 7 + 1)) and ticks[-1][2] == 18
    assert stages[:8] == ["epsilon none: released", "epsilon none: char3-svm (clean-trained)",
                          "epsilon none: embedding-1nn (clean-trained)", "epsilon none: unigram-cosine",
                          "epsilon 0.5: released", "epsilon 0.5: char3-svm (clean-trained)",
                          "epsilon 0.5: embedding-1nn (clean-trained)", "epsilon 0.5: released known texts"]
    assert stages[8] == "epsilon 0.5: char3-svm (release-trained)"
    assert {"release known texts", "attacks (release-trained)"} <= set(results["timings"])
    assert {"release known texts", "attacks (release-trained)"} <= set(noisy["seconds"])
    assert {"fit char3-svm (release-trained)", "attack embedding-1nn (release-trained)"} <= set(results["task_seconds"])
    json.dumps(results)  # results.json stays plain data

    write_report(results, tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    risk = noisy["risk"]
    assert "| 0.5 |" in markdown and f"{risk['top1']:.1%}: {risk['attack']} ({risk['training']}-trained)" in markdown
    assert "char3-svm (release-trained): correct / 12" in markdown and "| 0.5 | char3-svm | release |" in markdown


def test_one_training_alone(vectors, corpora):
    release_only = run_experiment(corpora, plan_for(vectors, trainings=["release"]))
    clean, noisy = release_only["points"]
    # no clean-trained results at all; the unmodified point is measured clean, under "release"
    assert "attacks" not in clean and "attacks" not in noisy
    assert clean["release_training_is_clean"] and noisy["risk"]["training"] == "release"
    clean_only = run_experiment(corpora, plan_for(vectors, trainings=["clean"]))
    assert all("attacks_release" not in p and "known_release" not in p for p in clean_only["points"])
    assert clean_only["points"][1]["risk"]["training"] == "clean"
    # the release-trained measurement does not disturb the clean one
    both = run_experiment(corpora, plan_for(vectors))
    assert both["points"][1]["attacks"] == clean_only["points"][1]["attacks"]
    assert both["points"][1]["attacks_release"] == release_only["points"][1]["attacks_release"]


def test_known_release_is_cached_with_its_own_seed(vectors, toy_word_embeddings, tmp_path):
    rng = np.random.default_rng(9)
    same = style_corpus(list(toy_word_embeddings.words), rng, 3, 4)
    # Known and unknown texts identical: only the seed can tell their releases apart.
    corpora = EvaluationCorpora(same, same)
    cache = tmp_path / "cache"
    clean_only = run_experiment(corpora, plan_for(vectors, trainings=["clean"], utility=[]), cache_folder=cache)
    assert clean_only["release_cache"]["misses"] == 1
    first = run_experiment(corpora, plan_for(vectors, utility=[]), cache_folder=cache)
    # the unknown release is the one cached before (adding the known release moved no seed);
    # the known release is a new entry, under a seed of its own, so its text differs
    assert first["release_cache"] == {**first["release_cache"], "hits": 1, "misses": 1}
    releases = [json.loads(path.read_text()) for path in sorted(cache.glob("*.json"))]
    assert len(releases) == 2 and releases[0] != releases[1]
    second = run_experiment(corpora, plan_for(vectors, utility=[]), cache_folder=cache)
    assert second["release_cache"]["hits"] == 2 and second["release_cache"]["misses"] == 0
    assert [p["attacks_release"] for p in second["points"]] == [p["attacks_release"] for p in first["points"]]
    # unseeded: nothing is cached, every release is fresh
    unseeded = run_experiment(corpora, plan_for(vectors, utility=[], seed=None), cache_folder=cache)
    assert unseeded["release_cache"]["hits"] == 0 and len(list(cache.glob("*.json"))) == 2


def test_repeats_combine_release_trained_results(vectors, corpora):
    results = run_experiment(corpora, plan_for(vectors, repeats=2, utility=[]))
    noisy = results["points"][1]
    for name in ATTACKS:
        result = noisy["attacks_release"][name]
        assert len(result["top1_values"]) == 2 and result["top1"] == pytest.approx(np.mean(result["top1_values"]))
        assert result["training"] == "release"
    assert noisy["known_release"]["releases"] == 2


def test_validation_rejects_bad_trainings_and_options(corpora):
    for trainings, needle in (([], "empty"), (["dirty"], "unknown training"), (["clean", "clean"], "twice")):
        with pytest.raises(InvalidParameterError, match=needle):
            validate(ExperimentPlan(grid=[10.0], attacks=["char3-svm"], utility=[], trainings=trainings), corpora)
    for options, needle in (({"layout": "tidy"}, "layout"), ({"output": "poem"}, "output"), ({"colour": 1}, "colour")):
        with pytest.raises(InvalidParameterError, match=needle):
            validate(ExperimentPlan(grid=[10.0], attacks=["char3-svm"], utility=[], mechanism_options=options), corpora)


def point(parameter, clean, release, topic):
    return {"label": "none" if parameter is None else f"{parameter:g}", "parameter": parameter,
            "attacks": {"svm": {"top1": clean}}, "attacks_release": {"svm": {"top1": release}},
            "utility": {"topic": {"value": topic}}}


def test_halving_reads_the_best_attack_over_both_trainings():
    from textveil.evaluation.tradeoff import BEST_ATTACK, halving_point, halving_points

    # Clean-trained, identification halves at 30; release-trained it does only at 10.
    points = [point(None, 0.8, 0.8, 0.9), point(30.0, 0.3, 0.6, 0.9), point(10.0, 0.1, 0.2, 0.8)]
    assert halving_point(points, "svm", "topic", "clean")["measured_parameter"] == 30.0
    assert halving_point(points, "svm", "topic", "release")["measured_parameter"] == 10.0
    best = halving_point(points, BEST_ATTACK, "topic")
    assert best["measured_parameter"] == 10.0
    assert best["measured_best"] == {"attack": "svm", "training": "release", "top1": 0.2}
    found = halving_points({"points": points}, ["topic"])
    assert [(f["attack"], f["training"]) for f in found] == [(BEST_ATTACK, None), ("svm", "clean"), ("svm", "release")]
    assert best_attack(points[1]) == {"attack": "svm", "training": "release", "top1": 0.6}


# -- the command line ------------------------------------------------------------------


def one_line_error(code, err, *needles):
    lines = [line for line in err.splitlines() if line.strip()]
    return code == 2 and len(lines) == 1 and "Traceback" not in err and all(n in lines[0] for n in needles)


def test_evaluate_chooses_trainings_and_passes_mechanism_options(folders, vectors, tmp_path, capsys, monkeypatch):
    known, unknown = folders
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--embeddings",
                            str(vectors), "--grid", "0.5", "--attacks", "char3-svm", "--utility", "unigram-cosine",
                            "--seed", "1", "--top-k", "2", "--trainings", "release", "--layout", "keep",
                            "--bag-of-words", "--out", str(tmp_path / "out")], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["plan"]["trainings"] == ["release"]
    assert results["plan"]["mechanism_options"] == {"layout": "keep", "output": "bag"}  # only what was given
    assert results["mechanism"]["parameters"]["decode"] == "exact"  # the defaults, in the fingerprint
    released = json.loads(next((tmp_path / "cache" / "releases").glob("*.json")).read_text())["texts"]
    assert released[0] == " ".join(sorted(released[0].split()))  # a sorted bag of words
    assert "attacks_release" in results["points"][1] and "attacks" not in results["points"][1]
    assert "release-trained" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize(("extra", "needles"), [
    (["--trainings", "clean,dirty"], ("dirty", "clean, release")),
    (["--trainings", ","], ("--trainings", "empty")),
    (["--layout", "tidy"], ("--layout", "tidy", "public, keep")),
])
def test_evaluate_bad_new_options_are_one_line_errors(folders, tmp_path, capsys, monkeypatch, extra, needles):
    known, unknown = folders
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown),
                            "--out", str(tmp_path / "out"), *extra], capsys, monkeypatch)
    assert one_line_error(code, err, *needles), err
    assert not (tmp_path / "out").exists()


def test_attack_releases_the_known_texts_first_and_caches_them(folders, vectors, capsys, monkeypatch):
    known, unknown = folders
    args = ["attack", "--known", str(known), "--unknown", str(unknown), "--attack", "char3-svm", "--top-k", "2",
            "--format", "json", "--release-known-with", "emp", "--epsilon", "0.5", "--embeddings", str(vectors)]
    code, out, err = run_cli([*args, "--release-seed", "4"], capsys, monkeypatch)
    assert code == 0, err
    first = json.loads(out)
    assert first["training"] == "release" and first["known_release"]["cached"] is False
    assert first["known_release"]["parameters"] == {"epsilon": 0.5, "decode": "exact", "keep_stop_words": False,
                                                    "oov": "perturb", "output": "text", "layout": "public", "seed": 4}
    code, out, err = run_cli([*args, "--release-seed", "4"], capsys, monkeypatch)
    again = json.loads(out)
    assert again["known_release"]["cached"] is True and again["topk"] == first["topk"] and "release cache" in err
    code, out, _ = run_cli(args[:11], capsys, monkeypatch)  # the clean-trained attack, as before
    assert code == 0 and json.loads(out)["training"] == "clean" and "known_release" not in json.loads(out)


@pytest.mark.parametrize(("extra", "needles"), [
    (["--release-known-with", "emp"], ("--epsilon", "emp")),
    (["--release-known-with", "nope", "--epsilon", "3"], ("nope", "emp")),
    (["--epsilon", "3"], ("--epsilon", "--release-known-with")),
    (["--release-seed", "3", "--bag-of-words"], ("--release-seed, --bag-of-words", "--release-known-with")),
    (["--release-known-with", "emp", "--epsilon", "0"], ("--epsilon",)),
    (["--release-known-with", "emp", "--epsilon", "3", "--layout", "tidy"], ("--layout", "tidy")),
])
def test_attack_bad_release_options_are_one_line_errors(folders, capsys, monkeypatch, extra, needles):
    known, unknown = folders
    code, _, err = run_cli(["attack", "--known", str(known), "--unknown", str(unknown), *extra], capsys, monkeypatch)
    assert one_line_error(code, err, *needles), err
