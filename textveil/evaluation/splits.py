"""Split strategies: which of each author's texts the attacker knows, and which are released and judged.

Two threats, two splits (``--split``):

- **same stream** (``same-stream``, the default): per author, the first K texts are known and the
  next ones judged (paper 004). Both sides come from one stream of the writer's texts, so they share
  subjects: a user who always writes about their band is found by the word "band", whatever a
  mechanism does with style. The pessimistic threat.
- **cross topic** (``cross-topic``): per author, the known texts are on the author's main topic
  (or the fewest topics that give the known count) and the judged texts on the author's other
  topics, so the two sides share no topic. The attacker holds texts the person wrote elsewhere,
  about other things (a public blog, reviews), and looks for them in a release on its own subject:
  the cross-topic and cross-domain splits of authorship research (PAN 2018 and 2019's cross-domain
  attribution, Stamatatos' cross-topic Guardian corpus). Style is what links the two sides.

Topics come from a field of the corpus when it has one (``topic_field``: PAN's fandom, a forum's
name), or else from a public, reproducible topic model (:func:`fit_topics`): NMF on the tf-idf of
each text's content words (the topic attack's rule: lower-cased words of three letters or more,
stop words left out), a fixed number of topics (:data:`DEFAULT_TOPICS` unless given) and a fixed
seed (:data:`TOPIC_MODEL_SEED`), each text given its strongest topic. An author whose texts are
all on one topic cannot be split across topics and is left out; the split's description
(:func:`describe_split`, kept in ``results.json`` as ``"split"``) counts them.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textveil.corpus.labelled import LabelledCorpus, group_indices, read_labelled_corpus
from textveil.errors import InputError, InvalidParameterError

SAME_STREAM = "same-stream"
CROSS_TOPIC = "cross-topic"
SPLITS = (SAME_STREAM, CROSS_TOPIC)
GIVEN = "given"
"""The split of known and unknown corpora given apart (``--risk-unknown``, C50's folder pair)."""
DEFAULT_TOPICS = 10
"""Topics of the topic model unless ``--topics`` says otherwise."""
TOPIC_MODEL_SEED = 0
"""The topic model's seed: fixed, so the same corpus always gets the same topics."""
NO_CONTENT = "no content words"
"""The topic of a text without a content word (the topic model has nothing to read in it)."""
LEFT_OUT_REASON = "all their texts on one topic"


def check_split(split: str, topics: int | None = None, topic_field: str | None = None) -> str:
    """The split's name, checked with the topic options that go with it.

    >>> check_split("cross-topic", topics=12)
    'cross-topic'
    >>> check_split("random")
    Traceback (most recent call last):
    ...
    textveil.errors.InvalidParameterError: --split 'random' is not a split; give same-stream or cross-topic
    """
    if split not in SPLITS:
        raise InvalidParameterError(f"--split '{split}' is not a split; give {' or '.join(SPLITS)}")
    if topics is not None and topic_field is not None:
        raise InvalidParameterError(f"--topics sets the topic model's size, and --topic-field '{topic_field}' "
                                    "names the topics instead of it: give one of the two")
    if topics is not None and topics < 2:
        raise InvalidParameterError(f"--topics must be at least 2, got {topics}")
    return split


def fit_topics(texts: Sequence[str], n_topics: int = DEFAULT_TOPICS, seed: int = TOPIC_MODEL_SEED,
               top_words: int = 6) -> tuple[list[str], dict[str, Any]]:
    """Each text's topic by a public topic model, and the model's description.

    NMF (``init="nndsvda"``, ``random_state=seed``) on the sublinear tf-idf of the texts' content
    words, with ``n_topics`` topics (fewer when the corpus has fewer texts or content words); each
    text gets its strongest topic, named ``topic 1`` .. ``topic K``, and a text without a content
    word gets :data:`NO_CONTENT`. The description holds the method, the topics asked for and used,
    the seed and each topic's strongest words.

    >>> texts = ["guitar band gig stage"] * 3 + ["oven bread flour dough"] * 3
    >>> topics, model = fit_topics(texts, n_topics=2)
    >>> len(set(topics[:3])), len(set(topics[3:])), topics[0] != topics[3], model["topics"]
    (1, 1, True, 2)
    """
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfVectorizer

    from textveil.text.stopwords import CONTENT_WORD_PATTERN, english_stop_words

    if n_topics < 2:
        raise InvalidParameterError(f"--topics must be at least 2, got {n_topics}")
    vectoriser = TfidfVectorizer(token_pattern=CONTENT_WORD_PATTERN, lowercase=True, sublinear_tf=True,
                                 stop_words=sorted(english_stop_words()), max_features=50_000)
    try:
        matrix = vectoriser.fit_transform(texts)
    except ValueError:  # scikit-learn: "empty vocabulary"
        matrix = None
    k = 0 if matrix is None else min(n_topics, matrix.shape[0], matrix.shape[1])
    description: dict[str, Any] = {
        "method": "nmf", "requested": n_topics, "topics": k, "seed": seed,
        "features": "tf-idf (sublinear) of content words: lower-cased words of three letters or more, "
                    "stop words left out"}
    if matrix is None or k < 2:
        description["top_words"] = {}
        return [NO_CONTENT] * len(texts), description
    model = NMF(n_components=k, init="nndsvda", random_state=seed, max_iter=500)
    with warnings.catch_warnings():  # each text's strongest topic settles long before NMF's tolerance
        warnings.simplefilter("ignore", ConvergenceWarning)
        weights = model.fit_transform(matrix)
    names = [f"topic {j + 1}" for j in range(k)]
    topics = [names[int(row.argmax())] if row.max() > 0 else NO_CONTENT for row in weights]
    vocabulary = vectoriser.get_feature_names_out()
    description["top_words"] = {name: [str(vocabulary[i]) for i in np.argsort(-component)[:top_words]]
                                for name, component in zip(names, model.components_)}
    return topics, description


def corpus_topics(corpus: LabelledCorpus, path: str | Path, topic_field: str | None = None,
                  n_topics: int | None = None, text_field: str = "text", encoding: str = "utf-8"
                  ) -> tuple[list[str], dict[str, Any]]:
    """Each text's topic: the value of ``topic_field`` in its record of the JSONL/CSV corpus at
    ``path`` (``corpus`` read from it, perhaps cut), or else :func:`fit_topics` on ``corpus``."""
    if topic_field is None:
        return fit_topics(corpus.texts, n_topics or DEFAULT_TOPICS)
    if Path(path).is_dir():
        raise InputError(f"corpus folder '{path}' has no fields: give a JSONL/CSV corpus to read --topic-field "
                         f"'{topic_field}' from, or leave --topic-field out for topics from the topic model")
    whole = read_labelled_corpus(path, text_field, topic_field, encoding, label_option="--topic-field")
    by_id = dict(zip(whole.ids, whole.labels))
    return [by_id[doc_id] for doc_id in corpus.ids], {"method": "field", "field": topic_field}


def cross_topic_split(corpus: LabelledCorpus, topics: Sequence[str], known_per_label: int | None = None,
                      topic_source: dict[str, Any] | None = None
                      ) -> tuple[LabelledCorpus, LabelledCorpus, list[str]]:
    """Known and unknown texts of each author on different topics, and the authors left out.

    ``topics``: each text's topic, in corpus order. Per author, the topics are ranked by their
    texts (ties: the first seen first); the known side takes the main topic's texts, or with
    ``known_per_label`` the fewest top topics that hold that many texts (never all the author's
    topics) and of them the first ``known_per_label`` texts, in corpus order; the unknown side
    every text on the author's other topics (:func:`~textveil.corpus.labelled.sample_per_label`
    draws some of them). An author with every text on one topic is left out. A corpus left with
    fewer than 2 authors, or with texts on fewer than 2 topics, raises :class:`InputError`
    (``topic_source`` says in it where the topics came from).

    >>> corpus = LabelledCorpus(["a1", "a2", "a3", "b1", "b2", "b3", "c1"], ["A"] * 3 + ["B"] * 3 + ["C"])
    >>> known, unknown, left_out = cross_topic_split(corpus, ["x", "y", "x", "y", "y", "x", "x"])
    >>> known.texts, unknown.texts, left_out
    (['a1', 'a3', 'b1', 'b2'], ['a2', 'b3'], ['C'])
    """
    if len(topics) != len(corpus):
        raise InvalidParameterError(f"{len(topics)} topics given for the {len(corpus)} texts of '{corpus.name}'")
    if known_per_label is not None and known_per_label < 1:
        raise InvalidParameterError("known texts per label must be at least 1")
    source = topic_source or {}
    present = set(topics)
    if len(present) < 2:
        more = "a --topic-field with several values" if source.get("method") == "field" else "more --topics"
        raise InputError(f"risk corpus '{corpus.name}' is too small for a cross-topic split: its texts are on "
                         f"{len(present)} topic ({topics_from(source)}); give more texts, {more}, or --split same-stream")
    labels, groups = group_indices(corpus.labels)
    known_rows: list[int] = []
    unknown_rows: list[int] = []
    left_out: list[str] = []
    for label, rows in zip(labels, groups):
        counts = Counter(topics[i] for i in rows)
        if len(counts) < 2:
            left_out.append(str(label))
            continue
        ranked = [topic for topic, _ in counts.most_common()]  # by count, ties in first-seen order
        chosen = ranked[:1]
        while (known_per_label is not None and sum(counts[t] for t in chosen) < known_per_label
               and len(chosen) < len(ranked) - 1):
            chosen.append(ranked[len(chosen)])
        known_rows += [i for i in rows if topics[i] in chosen][:known_per_label]
        unknown_rows += [i for i in rows if topics[i] not in chosen]
    kept = len(labels) - len(left_out)
    if kept < 2:
        raise InputError(f"risk corpus '{corpus.name}' is too small for a cross-topic split: {kept} author(s) have "
                         f"texts on two topics or more, {len(left_out)} left out ({LEFT_OUT_REASON}; topics: "
                         f"{topics_from(source)}); at least 2 are needed: give more authors who write on several "
                         "topics, or --split same-stream")
    return (corpus.subset(sorted(known_rows), f"{corpus.name} (known)"),
            corpus.subset(sorted(unknown_rows), f"{corpus.name} (unknown)"), left_out)


def describe_split(method: str, known: LabelledCorpus, unknown: LabelledCorpus,
                   topic_of: dict[str, str] | None = None, topic_source: dict[str, Any] | None = None,
                   known_per_label: int | None = None, unknown_per_label: int | None = None,
                   seed: int | None = None, left_out: Sequence[str] = ()) -> dict[str, Any]:
    """How a split was made, as ``results.json`` keeps it (``"split"``): the method, the authors
    kept and those ``left_out`` (all their texts on one topic), the texts on each side (in all,
    and the fewest and most of one author), chance, and where each text's topic is known
    (``topic_of``, by text id): where the topics came from, how many there are, and the share
    of unknown (judged) texts on a topic among their own author's known topics, 0 for a perfect
    cross-topic split.

    >>> known = LabelledCorpus(["a", "b"], ["A", "B"], name="k")
    >>> unknown = LabelledCorpus(["c", "d"], ["A", "B"], name="u")
    >>> topic_of = dict(zip(known.ids + unknown.ids, ["x", "y", "x", "z"]))
    >>> split = describe_split("same-stream", known, unknown, topic_of, known_per_label=1)
    >>> split["chance"], split["known"], split["shared_topic_share"]
    (0.5, {'texts': 2, 'per_author': [1, 1]}, 0.5)
    """
    def per_author(corpus: LabelledCorpus) -> dict[str, Any]:
        counts = list(corpus.counts().values())
        return {"texts": len(corpus), "per_author": [min(counts), max(counts)] if counts else [0, 0]}

    authors = len(known.label_set)
    split: dict[str, Any] = {
        "method": method, "known_per_label": known_per_label, "unknown_per_label": unknown_per_label,
        "seed": seed,
        "authors": {"kept": authors, "left_out": len(left_out), "left_out_labels": list(left_out[:20])}
        | ({"left_out_reason": LEFT_OUT_REASON} if left_out else {}),
        "known": per_author(known), "unknown": per_author(unknown),
        "chance": 1.0 / authors if authors else None,
    }
    if topic_of is not None:
        known_topics: dict[str, set[str]] = {}
        for doc_id, label in zip(known.ids, known.labels):
            known_topics.setdefault(label, set()).add(topic_of[doc_id])
        shared = [topic_of[doc_id] in known_topics.get(label, set())
                  for doc_id, label in zip(unknown.ids, unknown.labels)]
        split["topic_source"] = topic_source
        split["topics_from"] = topics_from(topic_source or {})
        split["topics_in_corpus"] = len(set(topic_of.values()))
        split["shared_topic_share"] = float(np.mean(shared)) if shared else None
    return split


def topics_from(source: dict[str, Any]) -> str:
    """Where a split's topics came from, in words.

    >>> topics_from({"method": "field", "field": "fandom"})
    "the corpus's field 'fandom'"
    >>> topics_from({"method": "nmf", "requested": 10, "topics": 10, "seed": 0})
    'NMF on the tf-idf of content words, 10 topics, seed 0, each text on its strongest topic'
    """
    if source.get("method") == "field":
        return f"the corpus's field '{source['field']}'"
    if source.get("method") == "nmf":
        asked = source["requested"]
        used = source["topics"]
        return (f"NMF on the tf-idf of content words, {used} topics"
                + (f" (of {asked} asked: the corpus has too few texts or words)" if used != asked else "")
                + f", seed {source['seed']}, each text on its strongest topic")
    return "given by the caller"


def split_lines(split: dict[str, Any] | None, content_clean: float | None = None) -> list[str]:
    """The report's lines on the split: how it was made, the authors kept and left out, the texts
    on each side, chance, and how far apart the sides are: the share of unknown texts on a topic
    their author's known texts are on, and ``content_clean``, the content-only attack's top-1 on
    the unmodified text (what topic words alone identify across the split)."""
    if not split:
        return []
    method = split["method"]
    if method == CROSS_TOPIC:
        head = ("split: cross-topic: per author, the known texts are on the author's main topic"
                + (f" (or the fewest topics that hold {split['known_per_label']} texts)" if split.get("known_per_label")
                   else "") + " and the unknown texts on the author's other topics")
    elif method == SAME_STREAM:
        head = (f"split: same stream: per author, the first {split['known_per_label']} texts are known and the next "
                "ones unknown, so both sides come from one stream of the writer's texts")
    else:
        head = "split: as given: the known and the unknown corpora were given apart"
    if split.get("unknown_per_label"):
        head += f"; {split['unknown_per_label']} unknown texts per author drawn with seed {split.get('seed')}"
    lines = [head]
    if split.get("topics_from"):
        lines.append(f"topics: {split['topics_from']}" + (f"; {split['topics_in_corpus']} topics in the corpus"
                                                          if split.get("topics_in_corpus") else ""))
        words = (split.get("topic_source") or {}).get("top_words") or {}
        if words:
            lines.append("topic model's topics: " + "; ".join(f"{name} ({', '.join(top[:4])})"
                                                             for name, top in words.items()))
    authors = split["authors"]
    lines.append(f"authors: {authors['kept']:,} kept"
                 + (f", {authors['left_out']:,} left out: {authors.get('left_out_reason', '')}"
                    if authors.get("left_out") else ", none left out"))
    known, unknown = split["known"], split["unknown"]
    lines.append(f"texts: {known['texts']:,} known ({_range(known['per_author'])} per author), {unknown['texts']:,} "
                 f"unknown ({_range(unknown['per_author'])} per author)"
                 + (f"; chance top-1 {split['chance']:.1%}" if split.get("chance") else ""))
    if split.get("shared_topic_share") is not None:
        lines.append(f"topics shared by the two sides: {split['shared_topic_share']:.1%} of the unknown texts are on a "
                     "topic their author's known texts are on (0% for a perfect cross-topic split)")
    if content_clean is not None:
        lines.append(f"content only on the unmodified text: {content_clean:.1%} top-1 (the content-only attack, "
                     "clean-trained): what content words alone identify across this split; the further apart the "
                     "topics of the two sides, the lower")
    return lines


def _range(bounds: Sequence[int]) -> str:
    low, high = bounds
    return f"{low}" if low == high else f"{low} to {high}"
