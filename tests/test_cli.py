"""The command line as a user meets it: releases, file layouts, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli  # noqa: F401  (the shared helper)


@pytest.fixture
def toy_vectors(tmp_path: Path) -> Path:
    """A small GloVe-format file: 300 random words in 16 dims, plus a few real ones."""
    rng = np.random.default_rng(0)
    words = ["the", "market", "rallied", "today", "bank", "shares", "fell"] + [f"word{i}" for i in range(293)]
    lines = [w + " " + " ".join(f"{x:.5f}" for x in rng.normal(size=16)) for w in words]
    path = tmp_path / "toy.glove.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("epsilon", ["0", "-1", "nan", "inf"])
def test_bad_epsilon_is_one_line_error(epsilon, tmp_path, toy_vectors, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text("The market rallied.")
    code, out, err = run_cli(["sanitize", str(doc), f"--epsilon={epsilon}", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, "epsilon")
    assert out == ""


def test_unknown_mechanism_lists_valid_ones(tmp_path, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text("x")
    code, _, err = run_cli(["sanitize", str(doc), "-e", "10", "--mechanism", "nope"], capsys, monkeypatch)
    assert_one_line_error(code, err, "nope", "emp")


def test_missing_corrupt_and_mismatched_embeddings(tmp_path, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text("The market rallied.")
    code, _, err = run_cli(["sanitize", str(doc), "-e", "10", "--embeddings", str(tmp_path / "none.vec")], capsys, monkeypatch)
    assert_one_line_error(code, err, "none.vec", "does not exist")

    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\x01not a header\xff" * 10)
    code, _, err = run_cli(["sanitize", str(doc), "-e", "10", "--embeddings", str(garbage)], capsys, monkeypatch)
    assert_one_line_error(code, err, "garbage.bin")

    ragged = tmp_path / "ragged.txt"
    ragged.write_text("the 0.1 0.2 0.3\nmarket 0.1 0.2\n")
    code, _, err = run_cli(["sanitize", str(doc), "-e", "10", "--embeddings", str(ragged)], capsys, monkeypatch)
    assert_one_line_error(code, err, "ragged.txt")


def test_non_utf8_input_names_file_offset_and_fix(tmp_path, toy_vectors, capsys, monkeypatch):
    doc = tmp_path / "latin.txt"
    doc.write_bytes("The café rallied".encode("latin-1"))
    code, _, err = run_cli(["sanitize", str(doc), "-e", "10", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, "latin.txt", "byte offset 7", "--encoding")
    code, out, _ = run_cli(
        ["sanitize", str(doc), "-e", "10", "--embeddings", str(toy_vectors), "--encoding", "latin-1"], capsys, monkeypatch
    )
    assert code == 0 and out


def test_output_equal_to_input_is_refused_and_input_kept(tmp_path, toy_vectors, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text("The market rallied today.")
    before = doc.read_bytes()
    code, _, err = run_cli(
        ["sanitize", str(doc), "-e", "1", "--embeddings", str(toy_vectors), "-o", str(doc)], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "never writes over its input")
    assert doc.read_bytes() == before
    # a folder written onto itself is refused too
    code, _, err = run_cli(
        ["sanitize", str(tmp_path), "-e", "1", "--embeddings", str(toy_vectors), "-o", str(tmp_path)], capsys, monkeypatch
    )
    assert_one_line_error(code, err, "never writes over its input")
    assert doc.read_bytes() == before


def test_jsonl_missing_text_field(tmp_path, toy_vectors, capsys, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"user": "u1", "body": "The market"}) + "\n")
    code, _, err = run_cli(["sanitize", str(corpus), "-e", "5", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, "c.jsonl", "'text'", "body", "--text-field")


def test_empty_input_gives_empty_output(tmp_path, toy_vectors, capsys, monkeypatch):
    doc = tmp_path / "empty.txt"
    doc.write_text("")
    code, out, _ = run_cli(["sanitize", str(doc), "-e", "5", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert code == 0 and out == ""
    code, out, _ = run_cli(["sanitize", "-", "-e", "5", "--embeddings", str(toy_vectors)], capsys, monkeypatch, stdin=b"")
    assert code == 0 and out == ""


def test_stdin_release_keeps_layout_when_asked_and_warns_once(toy_vectors, capsys, monkeypatch):
    text = "The market rallied,\r\n  today!\n"
    code, out, err = run_cli(
        ["sanitize", "-", "-e", "0.5", "--seed", "3", "--embeddings", str(toy_vectors), "--layout", "keep"],
        capsys, monkeypatch, stdin=text.encode(),
    )
    assert code == 0
    assert out.count("\r\n") == 1 and out.endswith("!\n") and ",\r\n  " in out
    assert "released 1 document" in err and "4 words perturbed" in err
    assert err.count("WARNING") == 1 and "NOT protected" in err and "casing" in err


def test_default_release_normalises_layout_and_names_only_the_length(tmp_path, toy_vectors, capsys, monkeypatch):
    vectors = tmp_path / "with_marks.glove.txt"  # a vectors file that knows some marks, as GloVe does
    rng = np.random.default_rng(1)
    marks = [m + " " + " ".join(f"{x:.5f}" for x in rng.normal(size=16)) for m in ",.!"]
    vectors.write_text(toy_vectors.read_text() + "\n".join(marks) + "\n")
    text = "The MARKET rallied,\r\n  today!\n"
    code, out, err = run_cli(
        ["sanitize", "-", "-e", "1000", "--seed", "3", "--embeddings", str(vectors)], capsys, monkeypatch,
        stdin=text.encode(),
    )
    assert code == 0 and out == "The market rallied, today!\n"
    assert "6 tokens perturbed" in err and "released unprotected: the number of tokens" in err
    assert "WARNING" not in err


def test_folder_output_mirrors_relative_paths(tmp_path, toy_vectors, capsys, monkeypatch):
    source = tmp_path / "in"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_text("The market rallied.")
    (source / "sub" / "b.txt").write_text("Bank shares fell today.")
    out_dir = tmp_path / "out"
    code, out, _ = run_cli(
        ["sanitize", str(source), "-e", "2", "--embeddings", str(toy_vectors), "-o", str(out_dir)], capsys, monkeypatch
    )
    assert code == 0 and out == ""
    assert sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file()) == ["a.txt", "sub/b.txt"]
    assert (out_dir / "sub" / "b.txt").read_text().strip()
    assert not list(out_dir.rglob("*.part"))  # atomic writes leave no temporary files


def test_json_format_and_jsonl_fields_kept(tmp_path, toy_vectors, capsys, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    rows = [{"user": "u1", "text": "The market rallied."}, {"user": "u2", "text": "Bank shares fell."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run_cli(["sanitize", str(corpus), "-e", "3", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    released = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["user"] for r in released] == ["u1", "u2"]
    code, out, _ = run_cli(
        ["sanitize", str(corpus), "-e", "3", "--embeddings", str(toy_vectors), "--format", "json"], capsys, monkeypatch
    )
    items = [json.loads(line) for line in out.splitlines()]
    assert [i["record"] for i in items] == [0, 1]
    for item in items:
        assert {"text", "changed", "guarantee"} <= set(item)
        # the public layout releases the three words and the full stop, and names only their number
        assert item["guarantee"]["epsilon"] == 3.0 and item["guarantee"]["words_protected"] == 4
        assert item["guarantee"]["unprotected"] == ["the number of tokens (4)"]
        for change in item["changed"]:
            assert change["from"] != change["to"]


def test_seed_reproduces_and_entropy_varies(tmp_path, toy_vectors, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text(" ".join(["market"] * 40))
    args = ["sanitize", str(doc), "-e", "0.5", "--embeddings", str(toy_vectors)]
    first = run_cli([*args, "--seed", "11"], capsys, monkeypatch)[1]
    second = run_cli([*args, "--seed", "11"], capsys, monkeypatch)[1]
    assert first == second
    unseeded = {run_cli(args, capsys, monkeypatch)[1] for _ in range(2)}
    assert len(unseeded) == 2


def test_calibrate_on_toy_vectors_prints_table_and_plot(tmp_path, toy_vectors, capsys, monkeypatch):
    plot = tmp_path / "cal.png"
    code, out, err = run_cli(
        ["calibrate", "--embeddings", str(toy_vectors), "--epsilons", "0.5,50", "--samples", "200", "--seed", "1",
         "--plot", str(plot), "--format", "json"],
        capsys, monkeypatch,
    )
    assert code == 0, err
    points = json.loads(out)["points"]
    assert points[0]["unchanged_fraction"] < points[1]["unchanged_fraction"]
    assert plot.read_bytes().startswith(b"\x89PNG")
    code, _, err = run_cli(["calibrate", "--embeddings", str(toy_vectors), "--epsilons", "10,-2"], capsys, monkeypatch)
    assert_one_line_error(code, err, "-2")
