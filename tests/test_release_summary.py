"""One summary of a set of releases (issue 59): computed once from the Guarantees' fields,
combined over a job's shards to the summary of the whole, stored by the manifest, read back from
a budget ledger's records, and rendered in the same words by every face."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conftest import run_cli
from textveil.mechanisms.base import Release
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.privacy.guarantee import Guarantee
from textveil.release.job import ReleaseJob, run_release
from textveil.release.seeds import record_seeds
from textveil.release.shards import MechanismSpec
from textveil.release.summary import ReleaseSummary, summarise, summarise_records

TEXTS = ["The market rallied on Friday.", "Bank shares fell, the analyst said.", "Gold and oil rose.",
         "Stocks fell in London.", "The dollar rose today!"]


@pytest.fixture
def releases(toy_word_embeddings) -> list[Release]:
    emp = EarthMoversPrivacy(8.0, toy_word_embeddings, keep_stop_words=True, seed=4)
    return emp.sanitize_many(TEXTS)


def test_the_totals_are_the_releases_own(releases):
    summary = summarise(releases)
    assert summary.documents == len(TEXTS) and summary.kind == "metric" and summary.epsilon == 8.0
    assert summary.total("words_protected") == sum(r.guarantee.words_protected for r in releases)
    assert summary.total("passed_through") == sum(r.guarantee.tokens_passed_through for r in releases) > 0
    assert summary.total("unchanged") == sum(r.words_unchanged for r in releases)
    # the policy is stated as a policy, and what it passes through as unprotected, in general words
    assert summary.policies == ("stop words kept unchanged",)
    assert summary.unprotected == releases[0].guarantee.unprotected_in_general
    assert not any(char.isdigit() for item in summary.unprotected for char in item)


def test_shard_summaries_combine_to_the_summary_of_the_whole(releases):
    whole = summarise(releases)
    parts = [summarise(releases[:2]), summarise(releases[2:3]), summarise([]), summarise(releases[3:])]
    combined = ReleaseSummary()
    for part in parts:
        combined = combined.combine(ReleaseSummary.from_dict(json.loads(json.dumps(part.to_dict()))))
    assert combined == whole


def test_records_read_back_give_the_summary_of_the_releases(releases):
    """A replayed request has only its stored records: they summarise as the releases did."""
    records = json.loads(json.dumps([release.to_dict() for release in releases]))
    assert summarise_records(records) == summarise(releases)


def test_a_record_stored_before_the_guarantee_was_data_still_summarises():
    old = {"text": "x", "changed": [], "words_unchanged_by_noise": 1, "entities": [{"type": "PERSON"}],
           "guarantee": {"schema": "textveil.guarantee/4", "mechanism": "emp", "epsilon": 2.0, "metric": "d",
                         "words_protected": 3, "unprotected": ["the number of tokens (3)"], "statement": "as it was"}}
    summary = summarise_records([old, old])
    assert summary.documents == 2 and summary.total("words_protected") == 6 and summary.entities == {"PERSON": 2}
    assert summary.unprotected == ("the number of tokens (3)",)  # as the old record stated it


def test_what_some_records_leave_unprotected_is_counted_by_record():
    seen = ("this text was in the model's training data", None)
    plain = Guarantee("aedp", 1.0, kind="dp", composition="sequential", words_protected=4)
    flagged = dataclasses.replace(plain, unprotected_in_record=(seen,))
    summary = summarise([Release("a", plain), Release("b", flagged), Release("c", flagged)])
    assert summary.exceptions == {seen[0]: 2}
    assert summary.document_epsilon == (4.0, 4.0)
    warnings = [line.text for line in summary.lines("released 3 document(s)") if line.warning]
    assert warnings == [f"WARNING: 2 document(s): {seen[0]}"]


def test_a_rewriters_summary_counts_units_and_bounds_each(tiny_language_model):
    from textveil.mechanisms.paraphrase import Paraphrase

    releases = Paraphrase(2.0, max_new_tokens=5, max_units=1, language_model=tiny_language_model,
                          seed=1).sanitize_many(["One line.\n\nAnother line.", "Short."])
    summary = summarise(releases)
    assert summary.tokens_per_unit == 5 and summary.epsilon_per_rewritten_unit == 10.0
    assert summary.total("units_rewritten") == 2 and summary.total("units_left_out") == 1
    assert summary.document_epsilon == (10.0, 10.0)
    released = summary.lines("released 2 document(s)")[0].text
    assert "2 unit(s) rewritten" in released and "1 unit(s) LEFT OUT" in released


def test_the_manifest_stores_the_summary_of_the_releases_the_library_makes(tmp_path, vectors):
    from textveil.embeddings import load_embeddings

    posts = tmp_path / "posts.jsonl"
    posts.write_text("".join(json.dumps({"id": i, "text": text}) + "\n" for i, text in enumerate(TEXTS)))
    spec = MechanismSpec("emp", {"epsilon": 8.0}, str(vectors), entities={"operator": "off"})
    outcome = run_release(ReleaseJob([str(posts)], tmp_path / "out", spec, shard_size=2, seed=11))
    stored = ReleaseSummary.from_dict(outcome.manifest["summary"])
    library = EarthMoversPrivacy(8.0, load_embeddings(str(vectors))).sanitize_records(TEXTS, record_seeds(11, 0, len(TEXTS)))
    assert stored == summarise(library, entity_stage={"operator": "off"})


def test_sanitize_and_release_print_the_summarys_lines(tmp_path, vectors, capsys, monkeypatch):
    """Both commands render the one summary: the same guarantee and the same unprotected list."""
    posts = tmp_path / "posts.jsonl"
    posts.write_text("".join(json.dumps({"text": text}) + "\n" for text in TEXTS))
    common = ["-m", "emp", "-e", "8", "--embeddings", str(vectors), "--entities", "off", "--seed", "5"]
    code, _, sanitized = run_cli(["sanitize", str(posts), *common], capsys, monkeypatch)
    assert code == 0, sanitized
    code, _, released = run_cli(["release", str(posts), "--out", str(tmp_path / "out"), "--workers", "0", *common],
                                capsys, monkeypatch)
    assert code == 0, released
    summary = ReleaseSummary.from_dict(json.loads((tmp_path / "out" / "manifest.json").read_text())["summary"])
    for line in summary.lines("released", noun="record")[2:]:  # after the entity stage's and the head's
        assert line.text in released
        assert line.text.replace("record", "document") in sanitized


def test_what_only_a_later_record_names_in_general_is_kept():
    # a policy that passed nothing through in the first record may in a later one: the summary of
    # both must still name what it leaves unprotected
    first = Guarantee("emp", 1.0, "d", 3)
    later = Guarantee("emp", 1.0, "d", 3, tokens_passed_through=2)
    assert later.unprotected_in_general != first.unprotected_in_general
    summary = summarise([Release("a b c", first), Release("a b c d e", later)])
    assert set(later.unprotected_in_general) <= set(summary.unprotected)
