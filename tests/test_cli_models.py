"""The ``train`` and ``split`` commands, and ``--model`` for sanitize and evaluate, as a user meets them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from test_cli import assert_one_line_error

TINY = ["--set", "hidden=8", "--set", "layers=1", "--set", "epochs=1", "--set", "pretrain_epochs=0",
        "--set", "batch_size=4", "--set", "vocabulary_size=100"]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def labelled(tmp_path, corpora) -> Path:
    corpus = corpora.risk_known
    return _jsonl(tmp_path / "corpus.jsonl", [{"text": t, "user": u} for t, u in zip(corpus.texts, corpus.labels)])


@pytest.fixture
def trained(tmp_path, labelled, vectors, capsys, monkeypatch) -> Path:
    """A tiny ER-AE trained through the command line."""
    code, _, err = run_cli(["train", "erae", "--corpus", str(labelled), "--out", str(tmp_path / "model"),
                            "--embeddings", str(vectors), "--seed", "1", "--device", "cpu", *TINY], capsys, monkeypatch)
    assert code == 0, err
    return tmp_path / "model"


def test_split_cuts_each_author_in_order_and_never_overwrites(tmp_path, labelled, capsys, monkeypatch):
    args = ["split", str(labelled), "--label-field", "user", "--fractions", "50,25,25", "--out", str(tmp_path / "parts")]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    rows = {name: [json.loads(line) for line in (tmp_path / "parts" / f"{name}.jsonl").read_text().splitlines()]
            for name in ("train", "dev", "eval")}
    whole = [json.loads(line) for line in labelled.read_text().splitlines()]
    assert sorted(json.dumps(r, sort_keys=True) for part in rows.values() for r in part) == \
        sorted(json.dumps(r, sort_keys=True) for r in whole)  # every text in exactly one part
    first = next(r for r in whole)
    mine = [r["text"] for r in whole if r["user"] == first["user"]]
    assert [r["text"] for r in rows["train"] if r["user"] == first["user"]] == mine[: len(mine) // 2]
    before = (tmp_path / "parts" / "train.jsonl").read_bytes()
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert_one_line_error(code, err, "already holds", "nothing was overwritten")
    assert (tmp_path / "parts" / "train.jsonl").read_bytes() == before
    code, _, err = run_cli(["split", str(labelled), "--label-field", "user", "--fractions", "a,b",
                            "--out", str(tmp_path / "other")], capsys, monkeypatch)
    assert_one_line_error(code, err, "--fractions")


def test_train_then_sanitize_with_the_model_is_reproducible(tmp_path, trained, vectors, capsys, monkeypatch):
    manifest = json.loads((trained / "manifest.json").read_text())
    assert manifest["mechanism"] == "erae" and manifest["parameters"]["hidden"] == 8
    assert (trained / "checkpoint.pt").is_file() and (trained / "state.npz").is_file()
    doc = tmp_path / "new.txt"
    doc.write_text("The market rallied today and the bank shares fell.")
    args = ["sanitize", str(doc), "--model", str(trained), "--epsilon", "20", "--seed", "3", "--embeddings", str(vectors)]
    code, first, err = run_cli(args, capsys, monkeypatch)
    assert code == 0, err
    assert "erae with epsilon=20" in err and "the number of tokens" in err and "trained on texts other" in err
    code, second, _ = run_cli(args, capsys, monkeypatch)
    assert first == second and first.strip()


def test_sanitize_with_a_text_the_model_was_trained_on_warns(tmp_path, trained, labelled, vectors, capsys, monkeypatch):
    code, _, err = run_cli(["sanitize", str(labelled), "--model", str(trained), "--epsilon", "20", "--seed", "3",
                            "--embeddings", str(vectors)], capsys, monkeypatch)
    assert code == 0, err
    assert "WARNING" in err and "training data" in err


def test_model_errors_are_one_line(tmp_path, trained, labelled, vectors, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    other = tmp_path / "other.vec"  # the same words, one vector moved: another vocabulary
    lines = vectors.read_text().splitlines()
    word, first, *rest = lines[1].split(" ")
    other.write_text("\n".join([lines[0], " ".join([word, str(float(first) + 1.0), *rest]), *lines[2:]]) + "\n")
    doc.write_text("The market rallied.")
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(trained), "-m", "syntf", "-e", "10",
                            "--embeddings", str(vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, "erae", "syntf")
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(tmp_path / "none"), "-e", "10"], capsys, monkeypatch)
    assert_one_line_error(code, err, "manifest.json")
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(trained), "-e", "10", "--embeddings", str(other)],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "another vocabulary")
    state = trained / "state.npz"
    state.write_bytes(state.read_bytes()[:1000])
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(trained), "-e", "10", "--embeddings", str(vectors)],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "state.npz", "truncated or corrupt")
    state.unlink()
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(trained), "-e", "10", "--embeddings", str(vectors)],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "state.npz", "missing")


def test_train_refuses_to_overwrite_and_mechanisms_that_learn_nothing(tmp_path, trained, labelled, vectors, capsys,
                                                                      monkeypatch):
    before = (trained / "manifest.json").read_bytes()
    code, _, err = run_cli(["train", "erae", "--corpus", str(labelled), "--out", str(trained),
                            "--embeddings", str(vectors), *TINY], capsys, monkeypatch)
    assert_one_line_error(code, err, "already holds a trained model")
    assert (trained / "manifest.json").read_bytes() == before
    code, _, err = run_cli(["train", "random", "--corpus", str(labelled), "--out", str(tmp_path / "r")], capsys, monkeypatch)
    assert_one_line_error(code, err, "learns nothing")


def test_continue_from_trains_a_copy_on_for_more_epochs_and_keeps_the_source(tmp_path, trained, labelled, vectors,
                                                                              capsys, monkeypatch):
    """--continue-from copies a trained model's checkpoint into a new folder and trains on from
    its last epoch; the result equals a model asked for 2 epochs from the start, and the source
    is untouched. Misuse is one line."""
    before = {p.name: p.read_bytes() for p in trained.iterdir()}
    longer = ["epochs=2" if s == "epochs=1" else s for s in TINY]
    common = ["--corpus", str(labelled), "--embeddings", str(vectors), "--seed", "1", "--device", "cpu", *longer]
    code, _, err = run_cli(["train", "erae", "--continue-from", str(trained), "--out", str(tmp_path / "more"), *common],
                           capsys, monkeypatch)
    assert code == 0, err
    assert "resuming" in err and {p.name: p.read_bytes() for p in trained.iterdir()} == before
    code, _, err = run_cli(["train", "erae", "--out", str(tmp_path / "fresh"), *common], capsys, monkeypatch)
    assert code == 0, err
    more, fresh = (json.loads((tmp_path / name / "manifest.json").read_text()) for name in ("more", "fresh"))
    assert more["parameters"]["epochs"] == 2 and len(more["state"]["history_"]) == 2
    with np.load(tmp_path / "more" / "state.npz") as a, np.load(tmp_path / "fresh" / "state.npz") as b:
        assert np.array_equal(a["weights_"], b["weights_"])
    code, _, err = run_cli(["train", "erae", "--continue-from", str(tmp_path / "nothing"), "--out",
                            str(tmp_path / "x"), *common], capsys, monkeypatch)
    assert_one_line_error(code, err, "--continue-from", "checkpoint.pt")
    code, _, err = run_cli(["train", "erae", "--continue-from", str(tmp_path / "more"), "--out", str(tmp_path / "y"),
                            "--corpus", str(labelled), "--embeddings", str(vectors), "--seed", "1", "--device", "cpu",
                            *TINY], capsys, monkeypatch)
    assert_one_line_error(code, err, "has trained 2 epochs, more than the 1 asked for")
    interrupted = tmp_path / "interrupted"
    interrupted.mkdir()
    (interrupted / "checkpoint.pt").write_bytes(b"a run of its own")
    code, _, err = run_cli(["train", "erae", "--continue-from", str(trained), "--out", str(interrupted), *common],
                           capsys, monkeypatch)
    assert_one_line_error(code, err, "already holds a checkpoint")
    assert (interrupted / "checkpoint.pt").read_bytes() == b"a run of its own"


def test_evaluate_releases_with_the_trained_model_without_fitting_again(tmp_path, trained, folders, vectors, capsys,
                                                                        monkeypatch):
    known, unknown = folders
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--model", str(trained),
                            "--grid", "20", "--attacks", "length", "--utility", "stylometric-l2", "--seed", "1",
                            "--embeddings", str(vectors), "--out", str(tmp_path / "report")], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["plan"]["mechanism"] == "erae" and results["plan"]["model"] == str(trained)
    assert results["mechanism"]["model"] and results["mechanism"]["training_data"]
    assert "fit mechanism" not in results["timings"]
    assert [p["label"] for p in results["points"]] == ["none", "20"]
    # --no-unmodified: only the release (another run of the same corpora measured the original text)
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(known), "--risk-unknown", str(unknown), "--model", str(trained),
                            "--grid", "20", "--attacks", "length", "--utility", "stylometric-l2", "--seed", "1",
                            "--embeddings", str(vectors), "--no-unmodified", "--out", str(tmp_path / "alone")],
                           capsys, monkeypatch)
    assert code == 0, err
    alone = json.loads((tmp_path / "alone" / "results.json").read_text())
    assert [p["label"] for p in alone["points"]] == ["20"]
    for measure in ("seed", "attacks", "attacks_release", "risk", "utility"):  # the same release, measured alike
        assert alone["points"][0][measure] == results["points"][1][measure], measure
