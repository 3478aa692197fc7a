"""``textveil audit`` end to end through the command line: the verdict and its exit status, the
JSON object, the report files, the user's pairs, and bad input as one line (issue 12)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_cli


def _audit(args, capsys, monkeypatch, vectors=None):
    extra = ["--embeddings", str(vectors)] if vectors is not None else []
    return run_cli(["audit", *args, *extra, "--seed", "3"], capsys, monkeypatch)


def _one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]


def test_emp_passes_with_json_object_and_exit_status_0(vectors, capsys, monkeypatch):
    code, out, err = _audit(["-m", "emp", "-e", "5", "--trials", "100", "--kinds", "canary,casing,punctuation",
                             "--format", "json"], capsys, monkeypatch, vectors)
    assert code == 0, err
    data = json.loads(out)
    assert data["passed"] is True and data["mechanism"] == "emp"
    assert [p["kind"] for p in data["pairs"]] == ["canary", "casing", "punctuation"]
    for pair in data["pairs"]:
        assert {"claim", "bound", "confidence", "passed", "power"} <= set(pair)
        assert pair["passed"] is True and pair["bound"] <= pair["claim"]
        assert pair["confidence"] == pytest.approx(1 - 0.01 / 3)  # the audit's 99% split over its three claims
    assert data["pairs"][0]["claim"] == pytest.approx(1.0, abs=1e-6)  # the canary's claim is one nat


def test_a_refuted_claim_exits_1(vectors, capsys, monkeypatch):
    """Noise at half the scale the Guarantee states, patched into the registered class: the
    canary refutes the claim and the command says so with exit status 1."""
    from textveil.mechanisms import earth_movers
    from textveil.mechanisms.sampling import sample_laplace_noise

    def half_noise(self, count, rng, second):
        return sample_laplace_noise(count, self.vocabulary.dim, 2 * self.epsilon, rng, second)

    monkeypatch.setattr(earth_movers.EarthMoversPrivacy, "_noise", half_noise)
    code, out, err = _audit(["-m", "emp", "-e", "5", "--trials", "1500", "--kinds", "canary"], capsys, monkeypatch,
                            vectors)
    assert code == 1, out + err
    assert "FAILED" in out and "fail" in out


def test_keep_layout_pairs_it_copies_are_no_claim(vectors, capsys, monkeypatch):
    code, out, err = _audit(["-m", "emp", "-e", "5", "--layout", "keep", "--trials", "60", "--kinds",
                             "casing,spacing,token-near", "--format", "json"], capsys, monkeypatch, vectors)
    data = json.loads(out)
    verdicts = {p["kind"]: p["verdict"] for p in data["pairs"]}
    assert verdicts["casing"] == verdicts["spacing"] == "no claim"
    assert verdicts["token-near"] == "pass" and code == 0
    assert all(p["passed"] is None for p in data["pairs"] if p["verdict"] == "no claim")


def test_no_formal_guarantee_is_never_passed(capsys, monkeypatch):
    code, out, err = _audit(["-m", "redact", "--format", "json"], capsys, monkeypatch)
    assert code == 1, err
    data = json.loads(out)
    assert data["passed"] is False and "no formal guarantee" in data["verdict"] and data["pairs"] == []


def test_pivot_l_privacy_on_a_given_corpus(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    weights = 1 / np.arange(1, 61)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(rng.choice(words, size=3000, p=weights / weights.sum())), encoding="utf-8")
    folder = tmp_path / "report"
    code, out, err = _audit(["-m", "pivot", "--set", "l=4", "--corpus", str(corpus), "--format", "json", "--report",
                             str(folder)], capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["guarantee"] == "l-privacy" and data["pairs"]
    assert all(p["bound"] <= p["claim"] == 0.25 for p in data["pairs"])
    assert data["l_privacy"]["corpus"]["source"] == "given"
    markdown = (folder / "audit.md").read_text()
    assert "the corpus given (1 text, 3,000 tokens) was encoded 3 times" in markdown
    assert "| key 1 of 3 |" in markdown and "releases of each input per stage" not in markdown


def test_report_files_and_no_overwrite(vectors, tmp_path, capsys, monkeypatch):
    folder = tmp_path / "report"
    args = ["-m", "random", "--trials", "40", "--kinds", "casing", "--report", str(folder)]
    code, out, err = _audit(args, capsys, monkeypatch, vectors)
    assert code == 0, err
    assert (folder / "audit.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((folder / "audit.json").read_text())["passed"] is True
    assert "| casing |" in (folder / "audit.md").read_text()
    before = (folder / "audit.json").read_bytes()
    code, _, err = _audit(args, capsys, monkeypatch, vectors)
    _one_line_error(code, err, "already holds an audit")
    assert (folder / "audit.json").read_bytes() == before


def test_users_pairs_are_audited(vectors, tmp_path, capsys, monkeypatch):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"first": "The market rallied.", "second": "the market rallied!", "kind": "mine"}) + "\n",
                     encoding="utf-8")
    code, out, err = _audit(["-m", "emp", "-e", "5", "--trials", "60", "--pairs", str(pairs), "--kinds", "mine",
                             "--format", "json"], capsys, monkeypatch, vectors)
    data = json.loads(out)
    assert [p["kind"] for p in data["pairs"]] == ["mine"] and data["pairs"][0]["setting"] == "your pair"
    assert code == (0 if data["passed"] else 1)


@pytest.mark.parametrize("args, words", [
    (["-m", "emp", "-e", "5", "--trials", "5"], ("trials", "20")),
    (["-m", "emp", "-e", "5", "--confidence", "1.5"], ("confidence",)),
    (["-m", "emp", "-e", "-1"], ("epsilon",)),
    (["-m", "nosuch"], ("nosuch",)),
    (["-m", "emp", "-e", "5", "--kinds", "nosuch"], ("--kinds", "casing")),
])
def test_bad_options_are_one_line(args, words, vectors, capsys, monkeypatch):
    code, out, err = _audit(args, capsys, monkeypatch, vectors)
    _one_line_error(code, err, *words)


def test_bad_pairs_file_is_one_line(vectors, tmp_path, capsys, monkeypatch):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"first": "a"}\n', encoding="utf-8")
    code, _, err = _audit(["-m", "emp", "-e", "5", "--pairs", str(pairs)], capsys, monkeypatch, vectors)
    _one_line_error(code, err, "pairs.jsonl", "line 1")


def test_paraphrase_on_its_own_model_passes_and_a_draw_without_the_clip_exits_1(tiny_lm_folder, capsys, monkeypatch):
    """paraphrase on the tiny model (``--model FOLDER``, or ``--set model=FOLDER``): its canaries (a
    toy language model, epsilon 4, L = 1; one-word texts and documents of two units) and a real pair (at most 50 releases per stage: here
    30); then raw logits as scores, patched into the registered class, refuted on the canary."""
    args = ["-m", "paraphrase", "-e", "4", "--set", "max_new_tokens=2", "--set", "width=10"]
    code, out, err = _audit([*args, "--model", str(tiny_lm_folder), "--trials", "30", "--kinds", "canary,name",
                             "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["passed"] is True and data["mechanism"] == "paraphrase" and data["guarantee"] == "dp"
    canary, units, name = data["pairs"]
    assert (canary["kind"], canary["trials"], canary["claim"]) == ("canary", 30, 4.0)
    assert (units["kind"], units["trials"], units["claim"]) == ("canary", 30, 8.0)  # two units: epsilon * L * 2
    assert (name["kind"], name["trials"], name["claim"]) == ("name", 30, 8.0)  # epsilon * L
    assert all(p["passed"] is True and p["bound"] <= p["claim"] for p in data["pairs"])

    from textveil.mechanisms.paraphrase import Paraphrase

    monkeypatch.setattr(Paraphrase, "score_range", lambda self: (-np.inf, np.inf, False))  # the raw logits
    code, out, err = _audit([*args, "--set", f"model={tiny_lm_folder}", "--trials", "600", "--kinds", "canary"],
                            capsys, monkeypatch)
    assert code == 1, out + err
    assert "FAILED" in out and "fail" in out
