"""Strict corpus readers (issue 48, "Corpus readers are strict"): a CSV or JSONL record the reader
cannot delimit is refused with one line naming the file, the line the record starts on and the
fix, never guessed. Before, ``x,"unterminated`` followed by ``y,fine`` was released as one
record: the second author vanished and its text went out under the first. Every face is checked
(``sanitize``, ``release``, ``compare --risk-corpus`` and the service's upload): exit code 2 or
a 400, one line, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from textveil.corpus.reading import InputFile, parse_documents
from textveil.errors import InputError
from textveil.release.records import iter_records, release_inputs

# (case, file name, content, what the one line must say)
MALFORMED = [
    ("unclosed_quote", "posts.csv", 'author,text\nann,"unterminated\nbob,fine\n',
     ["posts.csv: line 2 opens a quote that never closes", "close the quote opened on line 2"]),
    ("more_fields", "posts.csv", "author,text\nann,one\nbob,two, three,four\n",
     ["posts.csv: line 3 has 4 fields, the header has 2", "quote fields that hold a comma"]),
    ("fewer_fields", "posts.csv", "author,text\nann,one\nbob\n",
     ["posts.csv: line 3 has 1 field, the header has 2", "give every record all the header's fields"]),
    ("invalid_json", "posts.jsonl", '{"author": "ann", "text": "one"}\n{"author": "bob", "text": "two"\n',
     ["posts.jsonl: line 2 is not valid JSON", "each line must be one {...} object"]),
    ("json_list", "posts.jsonl", '{"author": "ann", "text": "one"}\n\n["bob", "two"]\n',
     ["posts.jsonl: line 3 is not a JSON object (it is a list)", "each line must be one {...} object"]),
    ("json_number", "posts.jsonl", '{"author": "ann", "text": "one"}\n{"author": "cy", "text": "two"}\n42\n',
     ["posts.jsonl: line 3 is not a JSON object (it is a number)", "each line must be one {...} object"]),
]
IDS = [case[0] for case in MALFORMED]


def one_error_line(code: int, out: str, err: str, says: list[str]) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("textveil: error: "), err
    assert all(part in lines[0] for part in says), lines[0]
    assert out == "" and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("case, name, content, says", MALFORMED, ids=IDS)
def test_sanitize_refuses_a_malformed_corpus_writing_nothing(tmp_path, capsys, monkeypatch, case, name, content, says):
    corpus = tmp_path / name
    corpus.write_text(content, encoding="utf-8")
    target = tmp_path / ("released" + corpus.suffix)
    code, out, err = run_cli(["sanitize", str(corpus), "-m", "redact", "--entities", "off", "-o", str(target)],
                             capsys, monkeypatch)
    one_error_line(code, out, err, [str(corpus), *says])
    assert not target.exists()
    code, out, err = run_cli(["sanitize", str(corpus), "-m", "redact", "--entities", "off"], capsys, monkeypatch)
    one_error_line(code, out, err, says)  # nothing on stdout either


@pytest.mark.parametrize("case, name, content, says", MALFORMED, ids=IDS)
def test_release_refuses_a_malformed_corpus_writing_nothing(tmp_path, capsys, monkeypatch, case, name, content, says):
    corpus = tmp_path / name
    corpus.write_text(content, encoding="utf-8")
    out_folder = tmp_path / "out"
    code, out, err = run_cli(["release", str(corpus), "--out", str(out_folder), "-m", "redact", "--entities", "off",
                              "--workers", "0", "--shard-size", "1"], capsys, monkeypatch)
    one_error_line(code, out, err, [str(corpus), *says])
    assert not out_folder.exists()  # no shard, no manifest, no job state


def test_release_refuses_a_bad_record_after_many_good_ones_before_any_shard(tmp_path, capsys, monkeypatch):
    """The records are checked before the job starts: a bad one far down leaves no shard behind."""
    corpus = tmp_path / "posts.csv"
    corpus.write_text("author,text\n" + "".join(f"u{i},text {i}\n" for i in range(50)) + 'zed,"never closed\n',
                      encoding="utf-8")
    out_folder = tmp_path / "out"
    code, out, err = run_cli(["release", str(corpus), "--out", str(out_folder), "-m", "redact", "--entities", "off",
                              "--workers", "0", "--shard-size", "5"], capsys, monkeypatch)
    one_error_line(code, out, err, ["posts.csv: line 52 opens a quote that never closes"])
    assert not out_folder.exists()


@pytest.mark.parametrize("case, name, content, says", MALFORMED, ids=IDS)
def test_compare_refuses_a_malformed_risk_corpus_writing_nothing(tmp_path, capsys, monkeypatch, case, name, content,
                                                                 says):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / name
    corpus.write_text(content, encoding="utf-8")
    out_folder = tmp_path / "out"
    code, out, err = run_cli(["compare", "--risk-corpus", str(corpus), "--label-field", "author", "--out",
                              str(out_folder), "-m", "redact", "--entities", "off", "--attacks", "length", "--utility",
                              "unigram-cosine", "--seed", "1"], capsys, monkeypatch)
    one_error_line(code, out, err, [str(corpus), *says])
    assert not out_folder.exists()


@pytest.mark.parametrize("case, name, content, says", MALFORMED, ids=IDS)
def test_the_service_upload_refuses_a_malformed_file_with_a_400(toy_word_embeddings, case, name, content, says):
    pytest.importorskip("fastapi", reason="the service needs fastapi (pip install -e .)")
    from fastapi.testclient import TestClient

    from textveil.service import ServiceSettings, create_app

    client = TestClient(create_app(ServiceSettings(embeddings=toy_word_embeddings)))
    response = client.post("/v1/sanitize/upload", files={"file": (name, content.encode("utf-8"))},
                           data={"parameters": '{"epsilon": 10}'})
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"detail"}, body  # no release, no inputs
    detail = body["detail"]
    assert isinstance(detail, str) and "\n" not in detail and detail.startswith(name + ": "), detail
    assert all(part in detail for part in says), detail


# -- the readers themselves -----------------------------------------------------------------


def _both_readers(path: Path) -> tuple[list, list]:
    """What the in-memory reader (sanitize, compare, the service) and the streaming one (release) read."""
    source = release_inputs([str(path)])[0]
    in_memory = [(d.record, d.fields) for d in parse_documents(source, path.read_bytes().decode())]
    streamed = [(r.where, r.fields) for r in iter_records([source])]
    return in_memory, streamed


def test_well_formed_inputs_still_read_alike_with_the_line_each_record_starts_on(tmp_path):
    csv_file = tmp_path / "posts.csv"
    csv_file.write_bytes(b'\r\nauthor,text\r\nann,"two\r\nlines, one ""quoted"""\r\n\r\nbob,fine\r\ncy,')
    in_memory, streamed = _both_readers(csv_file)
    fields = [{"author": "ann", "text": 'two\r\nlines, one "quoted"'}, {"author": "bob", "text": "fine"},
              {"author": "cy", "text": ""}]
    assert in_memory == list(enumerate(fields))
    assert streamed == list(zip(["line 3", "line 6", "line 7"], fields))
    jsonl_file = tmp_path / "posts.jsonl"
    jsonl_file.write_text('{"text": "a\u2028b"}\n\n{"text": "c"}', encoding="utf-8")  # U+2028 is no line break
    in_memory, streamed = _both_readers(jsonl_file)
    assert in_memory == [(0, {"text": "a\u2028b"}), (1, {"text": "c"})]
    assert streamed == [("line 1", {"text": "a\u2028b"}), ("line 3", {"text": "c"})]


@pytest.mark.parametrize("content, says", [
    # the quote that never closes opened on line 3, inside a record that starts on line 2
    ('author,note,text\nann,"two\nlines","never closed\nbob,x,y\n',
     "the record starting on line 2 opens a quote on line 3 that never closes"),
    # a quote closed by the next record's quote: text follows it, and the quote opened on line 2
    ('author,text\nann,"unterminated\nbob,fine\ncy,"other\n',
     "line 2 has text after the closing quote of a field opened on line 2 (on line 4)"),
    ('author,"text\nann,one\n', "line 1 opens a quote that never closes"),  # in the header
])
def test_the_line_a_quote_opened_on_is_named(tmp_path, content, says):
    path = tmp_path / "posts.csv"
    path.write_text(content, encoding="utf-8")
    source = release_inputs([str(path)])[0]
    for read in (lambda: parse_documents(source, content), lambda: list(iter_records([source]))):
        with pytest.raises(InputError) as caught:
            read()
        assert says in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_an_upload_reads_as_a_file_does():
    upload = InputFile(Path("posts.csv"), Path("posts.csv"), "csv")
    with pytest.raises(InputError, match=r"^posts\.csv: line 2 opens a quote that never closes"):
        parse_documents(upload, 'author,text\nx,"unterminated\ny,fine\n')
