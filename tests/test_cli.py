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


def test_an_input_that_holds_no_document_is_refused_in_one_line(tmp_path, toy_vectors, capsys, monkeypatch):
    """An empty folder (or one whose files are all hidden) releases nothing: one line naming it,
    not "released 0 documents" and success."""
    empty = tmp_path / "posts"
    empty.mkdir()
    (empty / ".hidden.txt").write_text("The market rallied.")
    code, out, err = run_cli(["sanitize", str(empty), "-e", "5", "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, str(empty), "no document to release")
    assert out == ""


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
    code, out, err = run_cli(
        ["sanitize", str(corpus), "-e", "3", "--embeddings", str(toy_vectors), "--format", "json", "--entities", "off"],
        capsys, monkeypatch)  # emp's own guarantee: the entity stage would make "Bank" <ORGANIZATION>, 6 tokens
    assert "NOT a release" in err  # it holds the changed words as they were
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


def test_calibrate_samples_the_words_of_a_given_text(tmp_path, toy_vectors, capsys, monkeypatch):
    """With an input, the tokens come from that text (not the vocabulary), and a text without a
    word is one line."""
    words = (tmp_path / "words.txt")
    words.write_text("the cat sat on the mat with a dog " * 5, encoding="utf-8")
    code, out, err = run_cli(["calibrate", str(words), "--embeddings", str(toy_vectors), "--epsilons", "1,50",
                              "--samples", "100", "--seed", "1", "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    data = json.loads(out)
    assert data["tokens_from"] == "your text" and len(data["points"]) == 2
    empty = tmp_path / "marks.txt"
    empty.write_text("... !!! ???", encoding="utf-8")
    code, _, err = run_cli(["calibrate", str(empty), "--embeddings", str(toy_vectors)], capsys, monkeypatch)
    assert_one_line_error(code, err, "no words")


# -- the language-model mechanisms (paraphrase, restyle), on the tiny random model ---------


LM_TEXTS = ["The market rallied on Friday.", "I went to the zoo with my sister.", "Oil prices fell in London."]


def test_mechanisms_lists_paraphrase_and_restyle(capsys, monkeypatch):
    code, out, err = run_cli(["mechanisms", "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    listed = {m["name"]: m for m in json.loads(out)}
    assert listed["paraphrase"]["guarantee"] == "dp" and listed["restyle"]["guarantee"] == "none"
    for name in ("paraphrase", "restyle"):
        assert {"model", "max_new_tokens", "max_input_tokens", "seed"} <= {p["name"] for p in listed[name]["parameters"]}
    code, out, _ = run_cli(["mechanisms"], capsys, monkeypatch)
    assert code == 0 and "paraphrase" in out and "restyle" in out


class _RecordingBar:
    """Stands in for the progress bar: records how far each task advanced."""

    def __init__(self) -> None:
        self.totals, self.advanced = {}, {}

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, description, total=None, **_):
        self.totals[description] = total
        self.advanced[description] = 0
        return description

    def advance(self, task, done) -> None:
        self.advanced[task] += done

    def update(self, task, completed=None, **_) -> None:
        if completed is not None:
            self.advanced[task] = completed


def test_paraphrase_sanitizes_with_a_language_model_given_by_set_or_by_model(tmp_path, tiny_lm_folder, capsys,
                                                                              monkeypatch):
    """-m paraphrase with the model as --set model=FOLDER or as --model FOLDER (a Hugging Face folder,
    not a trained mechanism): the same seeded release, the library's, each with its Guarantee."""
    import textveil.cli.sanitize as cli
    from textveil.mechanisms.paraphrase import Paraphrase

    corpus = tmp_path / "posts.jsonl"
    corpus.write_text("".join(json.dumps({"text": text}) + "\n" for text in LM_TEXTS))
    bars = []
    monkeypatch.setattr(cli, "progress_bar", lambda: bars.append(_RecordingBar()) or bars[-1])
    base = ["sanitize", str(corpus), "-m", "paraphrase", "-e", "2", "--seed", "7", "--set", "max_new_tokens=6",
            "--format", "json"]
    code, by_set, err = run_cli([*base, "--set", f"model={tiny_lm_folder}"], capsys, monkeypatch)
    assert code == 0, err
    items = [json.loads(line) for line in by_set.split("\n") if line]
    library = Paraphrase(2.0, max_new_tokens=6, model=str(tiny_lm_folder), seed=7).sanitize_many(LM_TEXTS)
    assert [item["text"] for item in items] == [r.text for r in library]
    for item in items:
        guarantee = item["guarantee"]
        assert guarantee["kind"] == "dp" and guarantee["epsilon"] == 2.0 and guarantee["document_epsilon"] == 12.0
        assert "(12)-differentially private" in guarantee["statement"]
    assert "epsilon-differential privacy" in err and "epsilon=12 per document" in err
    assert "nothing copied from the input" in err and "the number of tokens" not in err
    assert "WARNING" not in err  # the template's public rules are the Guarantee's own, not exceptions
    words = sum(len(text.split()) for text in LM_TEXTS)  # the bar counts the input's words, to the last
    assert bars[-1].advanced == {"sanitising words": words} and bars[-1].totals == {"sanitising words": words}
    code, by_model, err = run_cli([*base, "--model", str(tiny_lm_folder)], capsys, monkeypatch)
    assert code == 0, err
    assert by_model == by_set


def test_restyle_with_a_model_folder_reports_no_guarantee(tmp_path, tiny_lm_folder, capsys, monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text(LM_TEXTS[0])
    code, out, err = run_cli(["sanitize", str(doc), "-m", "restyle", "--model", str(tiny_lm_folder), "--seed", "3",
                              "--set", "max_new_tokens=5", "--set", "temperature=3"], capsys, monkeypatch)
    assert code == 0, err
    assert "guarantee: NONE" in err and "anything the model copies from the input" in err
    assert "documents perturbed" not in err


def test_model_that_is_neither_a_trained_mechanism_nor_a_language_model_is_one_line(tmp_path, tiny_lm_folder, capsys,
                                                                                      monkeypatch):
    doc = tmp_path / "a.txt"
    doc.write_text("The market rallied.")
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"\x00" * 16)
    for model in (tmp_path, weights, tmp_path / "missing"):
        code, out, err = run_cli(["sanitize", str(doc), "-m", "paraphrase", "-e", "2", "--model", str(model)],
                                 capsys, monkeypatch)
        assert_one_line_error(code, err, "neither", "manifest.json", ".gguf", "config.json")
        assert out == ""
    code, _, err = run_cli(["sanitize", str(doc), "--model", str(tiny_lm_folder)], capsys, monkeypatch)
    assert_one_line_error(code, err, "language model", "--mechanism paraphrase")
    code, _, err = run_cli(["sanitize", str(doc), "-m", "emp", "-e", "2", "--model", str(tiny_lm_folder)], capsys,
                           monkeypatch)
    assert_one_line_error(code, err, "emp takes none")
    code, _, err = run_cli(["sanitize", str(doc), "-m", "paraphrase", "-e", "2", "--model", str(tiny_lm_folder),
                            "--set", f"model={tmp_path}"], capsys, monkeypatch)
    assert_one_line_error(code, err, "two language models")


def test_evaluate_sweeps_paraphrase_with_a_release_aware_attacker(tmp_path, tiny_lm_folder, vectors, capsys,
                                                                  monkeypatch):
    """End to end on a tiny labelled corpus: the attacker that knows the mechanism releases its
    known texts with paraphrase too (the same language model), and the report is written."""
    from conftest import write_folders
    from textveil.corpus.labelled import LabelledCorpus

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    styles = {"ann": "The market rallied and the bank said so.", "bob": "I went to the zoo with my sister.",
              "cat": "We knit a scarf with soft wool."}
    known = LabelledCorpus([f"{text} Day {i}." for i in range(3) for text in styles.values()], list(styles) * 3)
    unknown = LabelledCorpus(list(styles.values()), list(styles))
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(write_folders(tmp_path / "known", known)),
                            "--risk-unknown", str(write_folders(tmp_path / "unknown", unknown)), "-m", "paraphrase",
                            "--model", str(tiny_lm_folder), "--set", "max_new_tokens=6", "--grid", "2", "--attacks",
                            "length", "--utility", "stylometric-l2", "--seed", "1", "--embeddings", str(vectors),
                            "--out", str(tmp_path / "report")], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["mechanism"]["mechanism"] == "paraphrase"
    assert results["mechanism"]["parameters"]["model"] == str(tiny_lm_folder)
    released = results["points"][-1]
    assert released["parameter"] == 2.0 and released["attacks_release"]["length"]["training"] == "release"
    assert released["known_release"]["words_protected"] == 6 * len(known)  # the known texts, released too
