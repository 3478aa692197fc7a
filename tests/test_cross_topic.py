"""The cross-topic split (issue 47): per author, known and judged texts on different topics, from a
corpus field or a public topic model; authors on one topic left out and counted; a corpus too
small for it refused in one line; and every comparison's report showing the split and the risk
apart from what content alone gives away."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli
from textveil.corpus.labelled import LabelledCorpus, read_labelled_corpus
from textveil.errors import InputError, InvalidParameterError
from textveil.evaluation.corpora import load_evaluation_corpora
from textveil.evaluation.splits import cross_topic_split, fit_topics, split_lines

# Four subjects with vocabularies of their own: what a text is about.
SUBJECTS = {
    "music": ["guitar", "band", "drums", "concert", "melody", "chorus", "album", "stage"],
    "cooking": ["oven", "flour", "dough", "recipe", "butter", "garlic", "onion", "bake"],
    "football": ["goal", "striker", "referee", "match", "league", "keeper", "pitch", "penalty"],
    "garden": ["tomato", "compost", "seeds", "greenhouse", "soil", "weeds", "roses", "hedge"],
}
# How each author writes, whatever the subject: marks, not content words.
MARKS = ["!!!", "...", " :)", " ;-)", "?!", " ~"]
FILLER = ["the", "and", "was", "it", "on", "with", "so", "we"]


def topic_corpus(plan: dict[str, dict[str, int]], seed: int = 3) -> list[dict[str, str]]:
    """Records (author, subject, text): ``plan[author][subject]`` texts of that author on that subject,
    each a dozen words of the subject's vocabulary and stop words, ending in the author's mark."""
    rng = np.random.default_rng(seed)
    records = []
    for index, (author, subjects) in enumerate(plan.items()):
        for subject, count in subjects.items():
            for _ in range(count):
                words = [rng.choice(SUBJECTS[subject]) if rng.random() < 0.6 else rng.choice(FILLER)
                         for _ in range(14)]
                records.append({"author": author, "subject": subject,
                                "text": " ".join(words).capitalize() + MARKS[index % len(MARKS)]})
    return records


# Four authors on two subjects each, and one who writes on a single subject.
PLAN = {
    "ann": {"music": 6, "cooking": 4},
    "bob": {"cooking": 6, "football": 4},
    "cat": {"football": 6, "garden": 4},
    "dan": {"garden": 6, "music": 4},
    "eve": {"music": 6},
}


def write_jsonl(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def corpus_path(tmp_path) -> Path:
    return write_jsonl(tmp_path / "topics.jsonl", topic_corpus(PLAN))


def _field_of(path: Path, field: str = "subject") -> dict[str, str]:
    """Each record's value of ``field``, by the id textveil gives the record."""
    corpus = read_labelled_corpus(path, label_field=field)
    return dict(zip(corpus.ids, corpus.labels))


def test_the_topic_model_finds_the_subjects():
    records = topic_corpus(PLAN)
    topics, model = fit_topics([r["text"] for r in records], n_topics=4)
    assert model["method"] == "nmf" and model["topics"] == 4 and model["seed"] == 0
    # every subject's texts share one topic, and no two subjects share one
    by_subject: dict[str, set[str]] = {}
    for record, topic in zip(records, topics):
        by_subject.setdefault(record["subject"], set()).add(topic)
    assert all(len(found) == 1 for found in by_subject.values()), by_subject
    assert len({next(iter(found)) for found in by_subject.values()}) == 4
    # the model says what each topic is: its strongest words are the subject's
    for found, subject in ((next(iter(t)), s) for s, t in by_subject.items()):
        assert set(model["top_words"][found][:3]) <= set(SUBJECTS[subject])


def test_known_and_judged_texts_are_on_different_topics_and_the_split_is_reproducible(corpus_path):
    subject_of = _field_of(corpus_path)
    corpora = load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topics=4,
                                      unknown_per_label=2, seed=5)
    known, judged = corpora.risk_known, corpora.risk_unknown
    for author in ("ann", "bob", "cat", "dan"):
        known_subjects = {subject_of[i] for i, a in zip(known.ids, known.labels) if a == author}
        judged_subjects = {subject_of[i] for i, a in zip(judged.ids, judged.labels) if a == author}
        assert known_subjects == set(list(PLAN[author])[:1])  # the main subject, all 6 of its texts
        assert judged_subjects and not known_subjects & judged_subjects
    assert known.counts() == {"ann": 6, "bob": 6, "cat": 6, "dan": 6}
    assert judged.counts() == {"ann": 2, "bob": 2, "cat": 2, "dan": 2}
    split = corpora.split
    assert split["method"] == "cross-topic" and split["shared_topic_share"] == 0.0
    assert split["chance"] == pytest.approx(0.25)
    assert split["topic_source"]["method"] == "nmf" and split["topic_source"]["topics"] == 4
    # the same seed, the same split; the judged texts are drawn with the seed, so another may differ
    again = load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topics=4,
                                    unknown_per_label=2, seed=5)
    assert (again.risk_known.ids, again.risk_unknown.ids) == (known.ids, judged.ids)
    others = [load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topics=4,
                                      unknown_per_label=2, seed=seed).risk_unknown.ids for seed in range(6, 12)]
    assert any(ids != judged.ids for ids in others)
    assert all(o == again.risk_known.ids for o in [load_evaluation_corpora(
        corpus_path, label_field="author", split="cross-topic", topics=4, seed=9).risk_known.ids])


def test_an_author_on_one_topic_is_left_out_and_counted(corpus_path):
    corpora = load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topics=4)
    assert "eve" not in corpora.risk_known.label_set and "eve" not in corpora.risk_unknown.label_set
    authors = corpora.split["authors"]
    assert authors["kept"] == 4 and authors["left_out"] == 1 and authors["left_out_labels"] == ["eve"]
    lines = split_lines(corpora.split, content_clean=0.25)
    assert "authors: 4 kept, 1 left out: all their texts on one topic" in lines
    assert any(line.startswith("split: cross-topic") for line in lines)
    assert any("0.0% of the unknown texts are on a topic their author's known texts are on" in line for line in lines)
    assert any("content only on the unmodified text: 25.0% top-1" in line for line in lines)


def test_known_per_label_takes_the_fewest_topics_that_hold_it_and_never_all():
    corpus = LabelledCorpus([f"t{i}" for i in range(8)], ["a"] * 4 + ["b"] * 4)
    topics = ["x", "x", "y", "z", "x", "y", "y", "y"]
    known, judged, left_out = cross_topic_split(corpus, topics, known_per_label=3)
    # a: x holds 2 < 3, so x and y are known (the first 3 of them); z alone is judged
    # b: y holds 3; x is judged
    assert known.texts == ["t0", "t1", "t2", "t5", "t6", "t7"] and judged.texts == ["t3", "t4"] and not left_out
    with pytest.raises(InvalidParameterError):
        cross_topic_split(corpus, topics[:3])


def test_a_corpus_field_names_the_topics(tmp_path):
    # the field disagrees with the words on purpose: "forum" alternates whatever the text is about,
    # so a split that follows it cannot be the topic model's
    records = topic_corpus({a: s for a, s in PLAN.items() if a != "eve"})
    for position, record in enumerate(records):
        record["forum"] = "north" if position % 3 else "south"
    path = write_jsonl(tmp_path / "forums.jsonl", records)
    corpora = load_evaluation_corpora(path, label_field="author", split="cross-topic", topic_field="forum")
    forum_of = _field_of(path, "forum")
    assert {forum_of[i] for i in corpora.risk_known.ids} == {"north"}
    assert {forum_of[i] for i in corpora.risk_unknown.ids} == {"south"}
    assert corpora.split["topic_source"] == {"method": "field", "field": "forum"}
    assert corpora.split["topics_from"] == "the corpus's field 'forum'"
    # with the same-stream split the field measures how far apart the sides are instead
    same = load_evaluation_corpora(path, label_field="author", known_per_label=6, topic_field="forum")
    assert same.split["method"] == "same-stream" and same.split["shared_topic_share"] > 0.5
    # and so does the topic model's, with --topics: the first 3 texts known, the next 3 on the same subject
    modelled = load_evaluation_corpora(path, label_field="author", known_per_label=3, topics=4)
    assert modelled.split["topic_source"]["method"] == "nmf"
    assert modelled.split["shared_topic_share"] == pytest.approx(12 / 28)


def test_bad_topic_options_are_refused(corpus_path, tmp_path):
    with pytest.raises(InvalidParameterError, match="not a split"):
        load_evaluation_corpora(corpus_path, label_field="author", split="by-topic")
    with pytest.raises(InvalidParameterError, match="give one of the two"):
        load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topics=4, topic_field="subject")
    with pytest.raises(InputError, match="--topic-field"):
        load_evaluation_corpora(corpus_path, label_field="author", split="cross-topic", topic_field="fandom")
    with pytest.raises(InputError, match="give --risk-corpus alone"):
        load_evaluation_corpora(corpus_path, risk_unknown=corpus_path, label_field="author", split="cross-topic")


@pytest.mark.parametrize("plan, needle", [
    # every author on one subject: no author can be split across topics
    ({"ann": {"music": 4}, "bob": {"cooking": 4}, "cat": {"garden": 4}}, "0 author(s) have texts on two topics"),
    # one author on two subjects is not enough to attribute
    ({"ann": {"music": 4, "cooking": 3}, "bob": {"cooking": 4}}, "1 author(s) have texts on two topics"),
])
def test_a_corpus_too_small_for_a_cross_topic_split_gets_one_line(tmp_path, capsys, monkeypatch, plan, needle):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    path = write_jsonl(tmp_path / "small.jsonl", topic_corpus(plan))
    for command, mechanism in (("compare", ["-m", "emp:1"]), ("evaluate", ["-m", "emp", "--grid", "1"])):
        code, _, err = run_cli([command, "--risk-corpus", str(path), "--label-field", "author", "--out",
                                str(tmp_path / command), *mechanism, "--split", "cross-topic",
                                "--topic-field", "subject"], capsys, monkeypatch)
        assert code == 2, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "too small for a cross-topic split" in err and needle in err and "--split same-stream" in err
        assert not (tmp_path / command / "results.json").exists()
    # a corpus whose texts are all on one topic says so, and what to change
    one = write_jsonl(tmp_path / "one.jsonl", topic_corpus({"ann": {"music": 3}, "bob": {"music": 3}}))
    code, _, err = run_cli(["compare", "--risk-corpus", str(one), "--label-field", "author", "--out",
                            str(tmp_path / "one"), "-m", "emp:1", "--split", "cross-topic", "--topic-field", "subject"],
                           capsys, monkeypatch)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "on 1 topic" in err


def test_compare_on_a_cross_topic_split_reports_the_split_and_the_risk_apart_from_content(
        tmp_path, corpus_path, vectors, capsys, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    code, _, err = run_cli(["compare", "--risk-corpus", str(corpus_path), "--label-field", "author", "--out", str(out),
                            "-m", "emp:0.5", "--embeddings", str(vectors), "--entities", "off", "--utility",
                            "unigram-cosine", "--seed", "3", "--split", "cross-topic", "--topics", "4",
                            "--collapse-per-label"], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    # topic-svm runs by default, beside the style attacks
    assert results["plan"]["attacks"] == ["char3-svm", "word1-svm", "length", "topic-svm"]
    split = results["split"]
    assert split["method"] == "cross-topic" and split["authors"]["left_out"] == 1
    assert split["topic_source"]["topics"] == 4 and split["shared_topic_share"] == 0.0
    markdown = (out / "report.md").read_text()
    for needle in ("split: cross-topic", "topics: NMF on the tf-idf of content words, 4 topics, seed 0",
                   "authors: 4 kept, 1 left out: all their texts on one topic", "chance top-1 25.0%",
                   "texts: 24 known (6 per author), 16 unknown (4 per author)",
                   "content only on the unmodified text:"):
        assert needle in markdown, needle
    header = next(line for line in markdown.splitlines() if line.startswith("| mechanism | setting |"))
    assert "content only: best top-1 (topic-svm)" in header and "style adds: risk − content only" in header
    releases = markdown.split("## Releases")[1].split("##")[0]
    rows = [line for line in releases.splitlines() if line.startswith(("| unmodified text", "| emp"))]
    assert len(rows) == 2 and all(line.count(" pts |") == 1 for line in rows)


def test_evaluate_takes_the_split_too(tmp_path, corpus_path, vectors, capsys, monkeypatch):
    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    code, _, err = run_cli(["evaluate", "--risk-corpus", str(corpus_path), "--label-field", "author", "--out", str(out),
                            "-m", "emp", "--grid", "0.5", "--embeddings", str(vectors), "--entities", "off",
                            "--attacks", "length,topic-svm", "--utility", "unigram-cosine", "--seed", "3",
                            "--split", "cross-topic", "--topic-field", "subject"], capsys, monkeypatch)
    assert code == 0, err
    results = json.loads((out / "results.json").read_text())
    assert results["split"]["topic_source"] == {"method": "field", "field": "subject"}
    markdown = (out / "report.md").read_text()
    assert "topics: the corpus's field 'subject'" in markdown and "1 left out" in markdown
