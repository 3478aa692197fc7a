"""Paper 004's baselines, redaction and iterative translation: what they change, what they copy,
and that they say they guarantee nothing."""

from __future__ import annotations

import pytest

from conftest import run_cli
from test_cli import assert_one_line_error
from textveil.errors import InputError, InvalidParameterError
from textveil.mechanisms.redaction import Redaction
from textveil.mechanisms.translation import IterativeTranslation, translation_unavailable

POST = "Loved it!! see https://blog.example.com/p?id=3 or mail me@site.org, @anna #tbt 2,500 fans in 2019 on mp3s"


def test_redaction_replaces_each_chosen_feature_and_copies_the_rest():
    release = Redaction().sanitize(POST)
    assert release.text == ("Loved it!! see [URL] or mail [EMAIL], [USER] [HASHTAG] [NUMBER] fans in [NUMBER] on mp3s")
    assert [c.original for c in release.changes] == ["https://blog.example.com/p?id=3", "me@site.org", "@anna", "#tbt",
                                                     "2,500", "2019"]
    only = Redaction(features="handles,hashtags").sanitize(POST).text
    assert "[USER] [HASHTAG]" in only and "https://blog.example.com" in only and "2019" in only
    guarantee = release.guarantee
    assert guarantee.kind == "none" and guarantee.epsilon is None and "NO formal privacy guarantee" in guarantee.statement
    with pytest.raises(InvalidParameterError, match="use a comma-separated list"):
        Redaction(features="urls,faces")


def test_sanitize_with_redact_says_there_is_no_guarantee(capsys, monkeypatch):
    # paper 004's baseline alone: the entity stage (tests/test_pii.py) would take the URL and e-mail first
    code, out, err = run_cli(["sanitize", "--mechanism", "redact", "--entities", "off", "-"], capsys, monkeypatch,
                             stdin=POST.encode())
    assert code == 0, err
    assert "[URL]" in out and "guarantee: NONE" in err and "measured" in err


translation = pytest.mark.skipif(translation_unavailable() is not None, reason=str(translation_unavailable()))


@translation
@pytest.mark.parametrize("via", ["spa", "cat", "spa-cat"])
def test_a_round_trip_through_apertium_changes_a_known_sentence(via):
    sentence = "The market rallied on Friday, and stocks rose sharply after the announcement."
    release = IterativeTranslation(via=via).sanitize(sentence)
    assert release.text and release.text != sentence
    assert release.guarantee.kind == "none" and "Apertium" in release.guarantee.statement


@translation
def test_translation_keeps_one_release_per_text_and_is_deterministic():
    texts = ["First post.\nWith two lines.", "", "Second post about the weather today.", "3 cats"]
    first = [r.text for r in IterativeTranslation(rounds=2).sanitize_many(texts)]
    assert len(first) == 4 and first[1] == "" and "\n" not in first[0]
    assert first == [r.text for r in IterativeTranslation(rounds=2).sanitize_many(texts)]
    assert first[2] == IterativeTranslation(rounds=2).sanitize(texts[2]).text


def test_without_apertium_translation_fails_in_one_line_naming_the_packages(monkeypatch, capsys):
    import textveil.mechanisms.translation as module

    monkeypatch.setattr(module.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match="apt-get install apertium apertium-eng-spa"):
        IterativeTranslation()
    code, _, err = run_cli(["sanitize", "--mechanism", "translate", "-"], capsys, monkeypatch, stdin=b"hello")
    assert_one_line_error(code, err, "apertium-eng-cat")


def test_an_evaluation_report_of_redaction_says_it_guarantees_nothing(tmp_path, capsys, monkeypatch):
    import json

    rows = [{"text": f"post {i} by {user}: see https://{user}.example.org #{user} @{user}{i} and {i * 7} likes",
             "user": user} for user in ("ann", "bob", "cy") for i in range(6)]
    corpus = tmp_path / "posts.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(corpus), "--label-field", "user", "--known-per-label", "4",
                            "--attacks", "length", "--utility", "unigram-cosine", "-m", "redact", "--seed", "1",
                            "--out", str(tmp_path / "report")], capsys, monkeypatch)
    assert code == 0, err
    assert "guarantee: NONE: `redact` gives no formal privacy guarantee" in (tmp_path / "report" / "report.md").read_text()
