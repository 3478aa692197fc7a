"""Assemble the corpora of an evaluation from paths, as the ``evaluate`` command takes them."""

from __future__ import annotations

from pathlib import Path

from textveil.corpus.labelled import (
    LabelledCorpus,
    first_labels,
    label_attributes,
    read_labelled_corpus,
    sample_per_label,
    split_first_k,
    split_stratified,
)
from textveil.errors import InputError
from textveil.evaluation.experiment_plan import EvaluationCorpora
from textveil.evaluation.splits import (
    CROSS_TOPIC,
    GIVEN,
    SAME_STREAM,
    check_split,
    corpus_topics,
    cross_topic_split,
    describe_split,
)


def _split_folders(path: Path) -> tuple[Path, Path] | None:
    """A folder holding a train and a test folder of label folders (the C50 layout)."""
    if not path.is_dir():
        return None
    children = [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    train = [p for p in children if "train" in p.name.lower()]
    test = [p for p in children if "test" in p.name.lower()]
    if len(children) == 2 and len(train) == 1 and len(test) == 1:
        return train[0], test[0]
    return None


def load_evaluation_corpora(
    risk_corpus: str | Path,
    *,
    risk_unknown: str | Path | None = None,
    utility_corpus: str | Path | None = None,
    text_field: str = "text",
    label_field: str = "label",
    utility_label_field: str | None = None,
    known_per_label: int | None = None,
    unknown_per_label: int | None = None,
    held_out: float = 0.2,
    encoding: str = "utf-8",
    utility_encoding: str | None = None,
    seed: int | None = 0,
    attribute_field: str | None = None,
    labels_limit: int | None = None,
    texts_per_label: int | None = None,
    split: str = SAME_STREAM,
    topic_field: str | None = None,
    topics: int | None = None,
) -> EvaluationCorpora:
    """Known and unknown risk texts, and utility train/test texts.

    Risk: ``risk_unknown`` given -> ``risk_corpus`` is known, it is unknown; a folder with a
    train and a test folder (C50) -> those; otherwise the first ``known_per_label`` texts of
    each label are known (default: half) and the rest unknown. ``unknown_per_label`` samples
    the unknown texts (a sweep releases them once per grid point). Utility: a stratified
    ``held_out`` split of ``utility_corpus``. ``attribute_field``: a field of the risk corpus's
    records holding each author's attribute (industry, gender) for the attribute-F1 task.
    ``labels_limit`` / ``texts_per_label``: a single risk corpus is first cut to its first
    labels and the first texts of each (:func:`~textveil.corpus.labelled.first_labels`), read in
    place; known and unknown corpora given apart are cut to the known corpus's first labels, and
    each to the first texts of each label.

    ``split`` (:mod:`textveil.evaluation.splits`): ``same-stream`` as above, or ``cross-topic``:
    per author, the known texts on the main topic and the unknown texts on other topics, the
    topics read from ``topic_field`` of a JSONL/CSV corpus or else from a topic model of
    ``topics`` topics; ``known_per_label`` caps the known texts. ``topic_field`` or ``topics``
    with the same-stream split measures how many unknown texts share a topic with their author's
    known ones. The corpora returned carry the split's description (``split``).
    """
    check_split(split, topics, topic_field)
    risk_path = Path(risk_corpus)
    folders = _split_folders(risk_path)
    cut = labels_limit is not None or texts_per_label is not None
    given_apart = risk_unknown is not None or folders is not None
    if given_apart and (split == CROSS_TOPIC or topic_field is not None or topics is not None):
        raise InputError("--split cross-topic, --topic-field and --topics read one corpus's topics: give "
                         "--risk-corpus alone (a JSONL/CSV file or a folder per author), not --risk-unknown or a "
                         "train/test folder pair")
    topic_of, topic_source, left_out, per_label = None, None, [], known_per_label
    if given_apart:
        known_path, unknown_path = (risk_path, Path(risk_unknown)) if risk_unknown is not None else folders  # type: ignore[misc]
        known = read_labelled_corpus(known_path, text_field, label_field, encoding)
        unknown = read_labelled_corpus(unknown_path, text_field, label_field, encoding)
        if cut:  # the known corpus's first authors, and only theirs among the unknown texts
            known = first_labels(known, labels_limit, texts_per_label)
            kept = set(known.labels)
            unknown = first_labels(unknown.subset([i for i, label in enumerate(unknown.labels) if label in kept]),
                                   None, texts_per_label)
    else:
        whole = read_labelled_corpus(risk_path, text_field, label_field, encoding)
        if labels_limit is not None or texts_per_label is not None:
            whole = first_labels(whole, labels_limit, texts_per_label)
        whole.validate(what="risk corpus")
        if split == CROSS_TOPIC or topic_field is not None or topics is not None:
            named, topic_source = corpus_topics(whole, risk_path, topic_field, topics, text_field, encoding)
            topic_of = dict(zip(whole.ids, named))
        if split == CROSS_TOPIC:
            known, unknown, left_out = cross_topic_split(whole, named, known_per_label, topic_source)
        else:
            per_label = known_per_label or max(1, min(whole.counts().values()) // 2)
            known, unknown = split_first_k(whole, per_label)
    if unknown_per_label is not None:
        unknown = sample_per_label(unknown, unknown_per_label, seed)
    description = describe_split(GIVEN if given_apart else split, known, unknown, topic_of, topic_source, per_label,
                                 unknown_per_label, seed, left_out)
    utility_train: LabelledCorpus | None = None
    utility_test: LabelledCorpus | None = None
    if utility_corpus is not None:
        whole_utility = read_labelled_corpus(
            utility_corpus, text_field, utility_label_field or label_field, utility_encoding or encoding
        ).validate(what="utility corpus")
        utility_train, utility_test = split_stratified(whole_utility, held_out, seed)
    attributes = None
    if attribute_field is not None:
        attributes = {}
        for source in [risk_path] + ([Path(risk_unknown)] if risk_unknown is not None else []):
            attributes.update(label_attributes(source, label_field, attribute_field, text_field, encoding))
        present = set(known.labels) | set(unknown.labels)  # the authors evaluated, not the whole file's
        attributes = {label: value for label, value in attributes.items() if label in present}
    return EvaluationCorpora(known, unknown, utility_train, utility_test, attributes, description)
