"""``textveil pivot`` and ``textveil attack frequency`` as a user meets them: the key stays apart
from the release, everything maps back, and every refusal is one line that changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from test_cli import assert_one_line_error
from textveil.mechanisms.pivot import PivotKey, normalised_tokens

WORDS = ("the market rallied and stocks rose while oil prices fell in london as the bank said growth was good "
         "but inflation policy and tax budget talks went on for the economy").split()


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A folder of texts in two sub-folders, as C50 is laid out."""
    rng = np.random.default_rng(0)
    root = tmp_path / "corpus"
    for author in ("alice", "bob"):
        (root / author).mkdir(parents=True)
        for number in range(6):
            words = rng.choice(WORDS, size=60, p=np.linspace(2, 1, len(WORDS)) / np.linspace(2, 1, len(WORDS)).sum())
            text = " ".join(words).capitalize() + ".\r\n  Really, " + " ".join(words[:10]) + "!\n"
            (root / author / f"{number}.txt").write_text(text, encoding="utf-8")
    return root


def _encode(corpus: Path, tmp_path: Path, capsys, monkeypatch, *extra: str):
    return run_cli(["pivot", "encode", str(corpus), "--l", "3", "--out", str(tmp_path / "release"),
                    "--key", str(tmp_path / "owner" / "corpus.key"), "--seed", "1", *extra], capsys, monkeypatch)


def test_encode_then_decode_round_trips_and_the_key_stays_apart(corpus, tmp_path, capsys, monkeypatch):
    # the round trip of PIVOT itself: the entity stage (on by default, tested below) would return placeholders
    code, _, err = _encode(corpus, tmp_path, capsys, monkeypatch, "--entities", "off")
    assert code == 0, err
    assert "l-privacy with l = 3" in err and "released unprotected" in err
    key_path = tmp_path / "owner" / "corpus.key"
    assert key_path.stat().st_mode & 0o777 == 0o600
    key = PivotKey.load(key_path)
    assert key.l == 3 and str(key) in err  # only the digest is shown
    released = sorted((tmp_path / "release").rglob("*"))
    files = [p for p in released if p.is_file()]
    assert [p.relative_to(tmp_path / "release") for p in files] == \
        [p.relative_to(corpus) for p in sorted(corpus.rglob("*.txt"))]
    mapping_words = set(key.decoder.values())
    for path in files:  # nothing next to the release holds the key or any original token
        content = path.read_text(encoding="utf-8")
        assert "code_words" not in content and not set(content.split()) & mapping_words
    code, _, err = run_cli(["pivot", "decode-text", str(tmp_path / "release"), "--key", str(key_path),
                            "--out", str(tmp_path / "decoded")], capsys, monkeypatch)
    assert code == 0, err
    for original in sorted(corpus.rglob("*.txt")):
        decoded = (tmp_path / "decoded" / original.relative_to(corpus)).read_text(encoding="utf-8")
        assert decoded.split() == normalised_tokens(original.read_text(encoding="utf-8"))


def test_decode_vectors_maps_code_word_vectors_to_words(corpus, tmp_path, capsys, monkeypatch):
    assert _encode(corpus, tmp_path, capsys, monkeypatch)[0] == 0
    key = PivotKey.load(tmp_path / "owner" / "corpus.key")
    rng = np.random.default_rng(1)
    codes = sorted(key.decoder)
    vectors = tmp_path / "trained.txt"
    vectors.write_text(f"{len(codes)} 3\n" + "".join(f"{c} {' '.join(map(str, rng.random(3)))}\n" for c in codes))
    code, out, err = run_cli(["pivot", "decode-vectors", str(vectors), "--key", str(tmp_path / "owner" / "corpus.key")],
                             capsys, monkeypatch)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{len(key.code_words)} 3" and {line.split()[0] for line in lines[1:]} == set(key.code_words)
    other = tmp_path / "other.txt"
    other.write_text("2 3\nfoo 1 2 3\nbar 1 2 3\n")
    code, _, err = run_cli(["pivot", "decode-vectors", str(other), "--key", str(tmp_path / "owner" / "corpus.key")],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "not trained on this key's release")


def test_refusals_are_one_line_and_write_nothing(corpus, tmp_path, capsys, monkeypatch):
    release, key = tmp_path / "release", tmp_path / "owner" / "corpus.key"
    cases = [
        (["--l", "1"], "greater than 1"),
        (["--l", "500"], "fewer than l = 500"),
    ]
    for extra, message in cases:
        code, _, err = run_cli(["pivot", "encode", str(corpus), "--out", str(release), "--key", str(key), *extra],
                               capsys, monkeypatch)
        assert_one_line_error(code, err, message)
    assert not release.exists() and not key.exists()
    code, _, err = run_cli(["pivot", "encode", str(corpus), "--out", str(release), "--key", str(release / "k.key")],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "inside the release folder")
    code, _, err = run_cli(["pivot", "encode", str(corpus), "--out", str(release), "--key", str(corpus / "k.key")],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "inside the input")
    assert not release.exists()
    assert _encode(corpus, tmp_path, capsys, monkeypatch)[0] == 0
    before = key.read_bytes()
    code, _, err = _encode(corpus, tmp_path, capsys, monkeypatch)
    assert_one_line_error(code, err, "never overwritten", "--force")
    assert key.read_bytes() == before
    # A key of another release is refused before anything is decoded.
    code, _, err = run_cli(["pivot", "encode", str(corpus / "alice"), "--out", str(tmp_path / "other"),
                            "--key", str(tmp_path / "other.key"), "--l", "2"], capsys, monkeypatch)
    assert code == 0, err
    code, _, err = run_cli(["pivot", "decode-text", str(release), "--key", str(tmp_path / "other.key"),
                            "--out", str(tmp_path / "decoded")], capsys, monkeypatch)
    assert_one_line_error(code, err, "does not match this key")
    assert not (tmp_path / "decoded").exists()


def test_attack_frequency_scores_a_release_with_its_key(corpus, tmp_path, capsys, monkeypatch):
    assert _encode(corpus, tmp_path, capsys, monkeypatch)[0] == 0
    args = ["attack", "frequency", str(tmp_path / "release"), "--reference", "corpus", "--corpus", str(corpus),
            "--key", str(tmp_path / "owner" / "corpus.key"), "--format", "json"]
    code, out, err = run_cli(args + ["--l", "3"], capsys, monkeypatch)
    assert code == 0, err
    result = json.loads(out)
    assert result["score"]["tokens_recovered"] < 0.5 and len(result["guesses"]) > 10
    code, _, err = run_cli(["attack", "frequency", str(tmp_path / "release"), "--reference", "corpus"],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "--corpus")


def test_sanitize_sends_pivot_users_to_pivot_encode(capsys, monkeypatch):
    code, _, err = run_cli(["sanitize", "--mechanism", "pivot", "-"], capsys, monkeypatch, stdin=b"some text")
    assert_one_line_error(code, err, "textveil pivot encode")


def test_record_fields_besides_the_text_are_named_as_copied_unprotected(tmp_path, capsys, monkeypatch):
    rows = [{"text": " ".join(WORDS[i:i + 12]), "user": f"u{i % 3}"} for i in range(20)]
    corpus = tmp_path / "posts.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run_cli(["pivot", "encode", str(corpus), "--l", "2", "--out", str(tmp_path / "release.jsonl"),
                            "--key", str(tmp_path / "k.key")], capsys, monkeypatch)
    assert code == 0, err
    assert "other fields (user)" in err and "NOT protected" in err
    released = [json.loads(line) for line in (tmp_path / "release.jsonl").read_text().splitlines()]
    assert [r["user"] for r in released] == [r["user"] for r in rows]  # copied, as the warning says


def test_names_are_replaced_before_encoding(tmp_path, capsys, monkeypatch):
    from conftest import skip_without_entity_stage

    skip_without_entity_stage()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "note.txt").write_text("Margaret Okafor lives in Portland and writes every day.\n")
    code, _, err = run_cli(["pivot", "encode", str(tmp_path / "in"), "--l", "2", "--out", str(tmp_path / "release"),
                            "--key", str(tmp_path / "owner.key"), "--seed", "1"], capsys, monkeypatch)
    assert code == 0, err
    assert "entity stage (placeholder): replaced" in err
    code, _, err = run_cli(["pivot", "decode-text", str(tmp_path / "release"), "--key", str(tmp_path / "owner.key"),
                            "--out", str(tmp_path / "decoded")], capsys, monkeypatch)
    decoded = next((tmp_path / "decoded").rglob("*.txt")).read_text()
    assert code == 0 and "margaret" not in decoded.lower() and "portland" not in decoded.lower()
    assert "<PERSON>" in decoded and "<LOCATION>" in decoded  # each placeholder one token, decoded whole
