"""``textveil train synth`` and ``textveil synthesize`` (paper 004) as a user meets them."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import run_cli
from test_cli import assert_one_line_error
from textveil.cli import app

TINY = ["--set", "hidden=8", "--set", "epochs=2", "--set", "batch_size=4", "--set", "max_length=40"]
WRITING = {"ann": "the cat sat on the mat and purred", "bob": "dogs run far away fast in the park"}


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _corpus(folder: Path, name: str, per_user: int) -> Path:
    """A tiny corpus of two users, each with a style of their own."""
    return _jsonl(folder / name, [{"text": f"{WRITING[u]} {i}", "user": u} for i in range(per_user) for u in WRITING])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny GRU synth trained once through the command line, with a validation corpus."""
    folder = tmp_path_factory.mktemp("synth")
    result = CliRunner().invoke(app, [
        "train", "synth", "--model", "gru", "--corpus", str(_corpus(folder, "train.jsonl", 8)),
        "--dev-corpus", str(_corpus(folder, "dev.jsonl", 2)), "--user-field", "user", "--out", str(folder / "model"),
        "--seed", "1", "--device", "cpu", *TINY])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "validation" in result.output and "textveil synthesize --model" in result.output
    return folder / "model"


def test_train_saves_the_chosen_network_and_the_users(trained):
    manifest = json.loads((trained / "manifest.json").read_text())
    assert manifest["mechanism"] == "synth"
    assert manifest["parameters"]["architecture"] == "gru" and manifest["parameters"]["hidden"] == 8
    assert (trained / "checkpoint.pt").is_file() and (trained / "state.npz").is_file()


def test_synthesize_writes_per_user_counts_of_the_release_set(tmp_path, trained, capsys, monkeypatch):
    counts = _jsonl(tmp_path / "release.jsonl", [{"text": "?", "user": u} for u in ["bob", "ann", "bob", "bob"]])
    out = tmp_path / "synthetic.jsonl"
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--counts-from", str(counts), "--out", str(out),
                            "--temperature", "0.8", "--seed", "3"], capsys, monkeypatch)
    assert code == 0, err
    rows = _rows(out)
    assert all(set(r) == {"user", "text"} and isinstance(r["text"], str) for r in rows)
    assert [r["user"] for r in rows] == ["bob", "ann", "bob", "bob"]  # the counts file's users, in its order
    assert Counter(r["user"] for r in rows) == Counter(r["user"] for r in _rows(counts))
    assert "synthesised 4 text(s) for 2 user(s)" in err and "temperature 0.8" in err
    assert "NO formal privacy guarantee" in err and "memorised" in err
    # Without --counts-from: --per-user texts for every trained user (1 by default).
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--out", str(tmp_path / "one.jsonl")],
                           capsys, monkeypatch)
    assert code == 0, err
    assert sorted(r["user"] for r in _rows(tmp_path / "one.jsonl")) == ["ann", "bob"]
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--per-user", "3", "--user-field", "author",
                            "--text-field", "body", "--out", str(tmp_path / "three.jsonl")], capsys, monkeypatch)
    assert code == 0, err
    assert Counter(r["author"] for r in _rows(tmp_path / "three.jsonl")) == {"ann": 3, "bob": 3}


def test_seed_reproduces_the_corpus_and_another_seed_varies(tmp_path, trained, capsys, monkeypatch):
    def write(name: str, seed: str) -> bytes:
        code, _, err = run_cli(["synthesize", "--model", str(trained), "--per-user", "20", "--seed", seed,
                                "--out", str(tmp_path / name)], capsys, monkeypatch)
        assert code == 0, err
        return (tmp_path / name).read_bytes()

    first = write("a.jsonl", "5")
    assert write("b.jsonl", "5") == first
    assert write("c.jsonl", "6") != first  # the seed is used, not the training run's


def test_existing_output_and_inputs_are_never_overwritten(tmp_path, trained, capsys, monkeypatch):
    out = tmp_path / "synthetic.jsonl"
    out.write_text("keep me\n")
    args = ["synthesize", "--model", str(trained), "--out", str(out), "--seed", "1"]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert_one_line_error(code, err, "exists", "--force")
    assert out.read_text() == "keep me\n"
    code, _, err = run_cli([*args, "--force"], capsys, monkeypatch)
    assert code == 0, err
    assert [r["user"] for r in _rows(out)] == ["ann", "bob"]
    counts = _corpus(tmp_path, "release.jsonl", 1)
    before = counts.read_bytes()
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--counts-from", str(counts), "--out", str(counts),
                            "--force"], capsys, monkeypatch)
    assert_one_line_error(code, err, "--counts-from")
    assert counts.read_bytes() == before
    manifest = (trained / "manifest.json").read_bytes()
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--out", str(trained / "manifest.json"), "--force"],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "model folder")
    assert (trained / "manifest.json").read_bytes() == manifest


def test_a_record_without_its_user_is_one_line_naming_field_and_file(tmp_path, capsys, monkeypatch):
    corpus = _jsonl(tmp_path / "posts.jsonl", [{"text": "a text", "user": "ann"}, {"text": "no writer", "who": "x"}])
    code, _, err = run_cli(["train", "synth", "--corpus", str(corpus), "--user-field", "user",
                            "--out", str(tmp_path / "m"), *TINY], capsys, monkeypatch)
    assert_one_line_error(code, err, "'user'", "posts.jsonl", "record 2")
    assert not (tmp_path / "m").exists()
    code, _, err = run_cli(["train", "synth", "--corpus", str(corpus), "--out", str(tmp_path / "m"), *TINY],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "--user-field")


def test_unknown_users_of_the_counts_file_are_one_line(tmp_path, trained, capsys, monkeypatch):
    counts = _jsonl(tmp_path / "release.jsonl", [{"text": "?", "user": "ann"}, {"text": "?", "user": "carol"}])
    out = tmp_path / "synthetic.jsonl"
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--counts-from", str(counts), "--out", str(out)],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "'carol'")
    assert not out.exists()
    code, _, err = run_cli(["synthesize", "--model", str(trained), "--counts-from", str(counts), "--per-user", "2",
                            "--out", str(out)], capsys, monkeypatch)
    assert_one_line_error(code, err, "not both")


def test_options_a_mechanism_does_not_have_are_one_line(tmp_path, capsys, monkeypatch):
    corpus = _corpus(tmp_path, "train.jsonl", 2)
    code, _, err = run_cli(["train", "erae", "--model", "gru", "--corpus", str(corpus), "--out", str(tmp_path / "e")],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "erae", "--model")
    code, _, err = run_cli(["train", "syntf", "--user-field", "user", "--corpus", str(corpus),
                            "--out", str(tmp_path / "s")], capsys, monkeypatch)
    assert_one_line_error(code, err, "syntf", "--user-field")
    code, _, err = run_cli(["train", "synth", "--model", "lstm", "--user-field", "user", "--corpus", str(corpus),
                            "--out", str(tmp_path / "l"), *TINY], capsys, monkeypatch)
    assert_one_line_error(code, err, "lstm")
    assert not any((tmp_path / name).exists() for name in ("e", "s", "l"))


def test_a_corrupt_or_foreign_model_is_one_line(tmp_path, trained, capsys, monkeypatch):
    broken = shutil.copytree(trained, tmp_path / "broken")
    state = broken / "state.npz"
    state.write_bytes(state.read_bytes()[:200])
    out = tmp_path / "synthetic.jsonl"
    code, _, err = run_cli(["synthesize", "--model", str(broken), "--out", str(out)], capsys, monkeypatch)
    assert_one_line_error(code, err, "state.npz", "truncated or corrupt")
    from textveil.mechanisms.registry import MECHANISMS

    MECHANISMS.make("redact").save(tmp_path / "redact")
    code, _, err = run_cli(["synthesize", "--model", str(tmp_path / "redact"), "--out", str(out)], capsys, monkeypatch)
    assert_one_line_error(code, err, "redact", "textveil train synth")
    assert not out.exists()


def test_sanitize_sends_synth_users_to_synthesize(trained, capsys, monkeypatch):
    code, _, err = run_cli(["sanitize", "--mechanism", "synth", "-"], capsys, monkeypatch, stdin=b"some text")
    assert_one_line_error(code, err, "textveil synthesize --model")
    assert "key" not in err  # synth keeps no key: the redirect names none
    code, _, err = run_cli(["sanitize", "--model", str(trained), "-"], capsys, monkeypatch, stdin=b"some text")
    assert_one_line_error(code, err, "textveil synthesize --model")
