"""Labelled corpora for evaluation: texts with an author (or topic) label each.

Layouts read: a folder per label (``C50train/<Author>/*.txt``, ``bbc/<topic>/*.txt``), JSON
Lines and CSV with chosen text and label fields. Splits follow the papers: known and unknown
texts per author (paper 001, appendix B.1), the first K texts of each user known and the
rest unknown (paper 004), a stratified held-out fraction (topic utility), and truncation to
a common length N (mechanisms with a guarantee for bags of equal size).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from textveil.corpus.reading import decode_bytes, expand_inputs, read_documents
from textveil.errors import InputError, InvalidParameterError
from textveil.text.tokenize import tokenize


@dataclass
class LabelledCorpus:
    """Parallel lists of texts, labels and ids; ``name`` says where it came from.

    >>> corpus = LabelledCorpus(["a b", "c d", "e f"], ["x", "y", "x"], name="toy")
    >>> len(corpus), corpus.label_set, corpus.counts()
    (3, ['x', 'y'], {'x': 2, 'y': 1})
    """

    texts: list[str]
    labels: list[str]
    ids: list[str] = field(default_factory=list)
    name: str = "corpus"

    def __post_init__(self) -> None:
        if not self.ids:
            self.ids = [f"{self.name}:{i}" for i in range(len(self.texts))]
        if not (len(self.texts) == len(self.labels) == len(self.ids)):
            raise InvalidParameterError(f"corpus '{self.name}': texts, labels and ids differ in length")

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def label_set(self) -> list[str]:
        return sorted(set(self.labels))

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(self.labels).items()))

    def subset(self, indices: Sequence[int], name: str | None = None) -> LabelledCorpus:
        return LabelledCorpus(
            [self.texts[i] for i in indices], [self.labels[i] for i in indices], [self.ids[i] for i in indices],
            name=name or self.name,
        )

    def with_texts(self, texts: Sequence[str], name: str | None = None) -> LabelledCorpus:
        """The same labels and ids with other texts (a release of this corpus)."""
        if len(texts) != len(self):
            raise InvalidParameterError(f"corpus '{self.name}': {len(texts)} texts given for {len(self)} documents")
        return LabelledCorpus(list(texts), list(self.labels), list(self.ids), name=name or self.name)

    def content_hash(self) -> str:
        """A digest of texts and labels: identical corpora share cached releases."""
        digest = hashlib.sha256()
        for text, label in zip(self.texts, self.labels):
            digest.update(label.encode("utf-8") + b"\x00" + text.encode("utf-8") + b"\x01")
        return digest.hexdigest()[:16]

    def validate(self, min_labels: int = 2, what: str = "corpus") -> LabelledCorpus:
        """Fail with a clear message on corpora no attack or task can use."""
        if len(self) == 0:
            raise InputError(f"{what} '{self.name}' holds no documents")
        if len(self.label_set) < min_labels:
            raise InputError(
                f"{what} '{self.name}' has {len(self.label_set)} label(s) ({', '.join(self.label_set)}); "
                f"at least {min_labels} are needed to attribute or classify"
            )
        for text, doc_id in zip(self.texts, self.ids):
            if not text.strip():
                raise InputError(f"{what} '{self.name}': document '{doc_id}' is empty; remove it or give it text")
        return self


def label_attributes(
    path: str | Path, label_field: str, attribute_field: str, text_field: str = "text", encoding: str = "utf-8"
) -> dict[str, str]:
    """Each label's value of ``attribute_field`` (a user's industry or gender) in a JSONL/CSV
    corpus; a label that carries two values is refused, since an attribute belongs to the writer.

    >>> import json, pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
    >>> _ = path.write_text("\\n".join(json.dumps(r) for r in [{"text": "a", "user": "u1", "job": "law"},
    ...                                                        {"text": "b", "user": "u2", "job": "arts"}]))
    >>> label_attributes(path, "user", "job")
    {'u1': 'law', 'u2': 'arts'}
    """
    if Path(path).is_dir():
        raise InputError(f"corpus folder '{path}' has no fields: give a JSONL/CSV corpus to read '{attribute_field}' from")
    labels = read_labelled_corpus(path, text_field, label_field, encoding).labels
    values = read_labelled_corpus(path, text_field, attribute_field, encoding).labels
    attributes: dict[str, str] = {}
    for label, value in zip(labels, values):
        if attributes.setdefault(label, value) != value:
            raise InputError(f"{path}: '{label}' has two values of '{attribute_field}' ({attributes[label]!r} and "
                             f"{value!r}); an attribute must be one per {label_field}")
    return attributes


def read_labelled_corpus(
    path: str | Path, text_field: str = "text", label_field: str = "label", encoding: str = "utf-8",
    label_option: str = "--label-field",
) -> LabelledCorpus:
    """Read a labelled corpus: a folder of label folders, or a JSONL/CSV file with fields.

    In a folder, every sub-folder is a label and every file below it a document; a file that
    does not decode (e.g. BBC's Latin-1 bytes) names its path and offset and asks for
    ``--encoding``. ``label_option``: the option a record without ``label_field`` is told to
    set (the field read as labels may be another, e.g. each text's topic, ``--topic-field``).
    """
    path = Path(path)
    if path.is_dir():
        label_dirs = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not label_dirs:
            raise InputError(f"corpus folder '{path}' has no label sub-folders; expected <folder>/<label>/<file>")
        texts, labels, ids = [], [], []
        for label_dir in label_dirs:
            for source in expand_inputs([str(label_dir)], "text"):
                assert source.path is not None
                texts.append(decode_bytes(source.path.read_bytes(), source.display, encoding))
                labels.append(label_dir.name)
                ids.append(f"{label_dir.name}/{source.relative.as_posix()}")
        return LabelledCorpus(texts, labels, ids, name=path.name)
    if not path.is_file():
        raise InputError(f"corpus '{path}' does not exist; give a folder of label folders or a JSONL/CSV file")
    files = expand_inputs([str(path)])
    if files[0].fmt == "text":
        raise InputError(f"corpus '{path}' is a plain text file; give a folder of label folders or a .jsonl/.csv file")
    documents = read_documents(files, text_field, encoding)
    labels = []
    for document in documents:
        if label_field not in document.fields:
            fields = ", ".join(sorted(map(str, document.fields))) or "none"
            kind = "label field" if label_option == "--label-field" else "field"
            raise InputError(
                f"{path}: record {document.record} has no {kind} '{label_field}' (fields: {fields}); "
                f"pass {label_option} with the name of the {kind}"
            )
        labels.append(str(document.fields[label_field]))
    return LabelledCorpus(
        [d.text for d in documents], labels, [f"{path.name}:{d.record}" for d in documents], name=path.name
    )


def group_indices(groups: Sequence[Hashable]) -> tuple[list[Hashable], list[list[int]]]:
    """Group keys in first-seen order and the positions of each group's members.

    Here, not in the attacks, because attacks (a user's texts judged together) and utility
    tasks (a user's distribution) both group texts by label, and utility must not depend on attacks.

    >>> group_indices(["b", "a", "b"])
    (['b', 'a'], [[0, 2], [1]])
    """
    order: dict[Hashable, list[int]] = {}
    for position, key in enumerate(groups):
        order.setdefault(key, []).append(position)
    return list(order), list(order.values())


def split_first_k(corpus: LabelledCorpus, known_per_label: int, unknown_per_label: int | None = None
                  ) -> tuple[LabelledCorpus, LabelledCorpus]:
    """Per label, the first ``known_per_label`` texts are known, the next ones unknown (paper 004).

    >>> c = LabelledCorpus(["1", "2", "3", "4"], ["a", "a", "b", "b"])
    >>> [x.texts for x in split_first_k(c, 1)]
    [['1', '3'], ['2', '4']]
    """
    if known_per_label < 1:
        raise InvalidParameterError("known texts per label must be at least 1")
    seen: dict[str, int] = defaultdict(int)
    known, unknown = [], []
    for index, label in enumerate(corpus.labels):
        position = seen[label]
        seen[label] += 1
        if position < known_per_label:
            known.append(index)
        elif unknown_per_label is None or position < known_per_label + unknown_per_label:
            unknown.append(index)
    return corpus.subset(known, f"{corpus.name} (known)"), corpus.subset(unknown, f"{corpus.name} (unknown)")


def split_stratified(corpus: LabelledCorpus, held_out: float = 0.2, seed: int | None = 0
                     ) -> tuple[LabelledCorpus, LabelledCorpus]:
    """A stratified random split: ``held_out`` of each label's texts go to the second part."""
    if not 0 < held_out < 1:
        raise InvalidParameterError(f"the held-out fraction must lie between 0 and 1, got {held_out}")
    rng = np.random.default_rng(seed)
    by_label: dict[str, list[int]] = defaultdict(list)
    for index, label in enumerate(corpus.labels):
        by_label[label].append(index)
    train, test = [], []
    for label in sorted(by_label):
        indices = np.array(by_label[label])
        rng.shuffle(indices)
        cut = max(1, int(round(len(indices) * held_out))) if len(indices) > 1 else 0
        test.extend(indices[:cut].tolist())
        train.extend(indices[cut:].tolist())
    return corpus.subset(sorted(train), f"{corpus.name} (train)"), corpus.subset(sorted(test), f"{corpus.name} (test)")


def first_labels(corpus: LabelledCorpus, labels: int | None = None, per_label: int | None = None) -> LabelledCorpus:
    """The first ``labels`` labels in order of first appearance, and of each the first
    ``per_label`` texts, in corpus order: a subset read in place (no copy of the corpus written).

    >>> c = LabelledCorpus(["1", "2", "3", "4", "5"], ["a", "a", "b", "a", "c"])
    >>> first_labels(c, labels=2, per_label=2).texts
    ['1', '2', '3']
    """
    for value, option in ((labels, "--first-labels"), (per_label, "--texts-per-label")):
        if value is not None and value < 1:
            raise InvalidParameterError(f"{option} must be at least 1, got {value}")
    kept = set(list(dict.fromkeys(corpus.labels))[:labels] if labels is not None else corpus.labels)
    seen: dict[str, int] = defaultdict(int)
    chosen = []
    for index, label in enumerate(corpus.labels):
        if label in kept and (per_label is None or seen[label] < per_label):
            seen[label] += 1
            chosen.append(index)
    return corpus.subset(chosen)


def sample_per_label(corpus: LabelledCorpus, per_label: int, seed: int | None = 0) -> LabelledCorpus:
    """At most ``per_label`` texts of each label, drawn at random (order kept)."""
    rng = np.random.default_rng(seed)
    by_label: dict[str, list[int]] = defaultdict(list)
    for index, label in enumerate(corpus.labels):
        by_label[label].append(index)
    chosen: list[int] = []
    for label in sorted(by_label):
        indices = by_label[label]
        if len(indices) > per_label:
            indices = sorted(rng.choice(indices, size=per_label, replace=False).tolist())
        chosen.extend(indices)
    return corpus.subset(sorted(chosen))


def known_text_unknown_snippet(corpus: LabelledCorpus, known_words: int = 2000, unknown_words: int = 1000
                               ) -> tuple[LabelledCorpus, LabelledCorpus]:
    """Paper 001, appendix B.1: the first ``known_words`` words of each text are a known TEXT,
    the last ``unknown_words`` words an unknown SNIPPET (layout between words is kept)."""
    known_texts, unknown_texts = [], []
    for text in corpus.texts:
        starts = [m for m, t in enumerate(tokenize(text)) if t.is_word]
        tokens = tokenize(text)
        head_end = starts[min(known_words, len(starts)) - 1] + 1 if starts else 0
        tail_start = starts[max(0, len(starts) - unknown_words)] if starts else 0
        known_texts.append("".join(t.text for t in tokens[:head_end]))
        unknown_texts.append("".join(t.text for t in tokens[tail_start:]))
    return corpus.with_texts(known_texts, f"{corpus.name} (known TEXT)"), corpus.with_texts(
        unknown_texts, f"{corpus.name} (unknown SNIPPET)"
    )


def truncate_to_common_length(corpus: LabelledCorpus, length: int | None = None) -> LabelledCorpus:
    """Cut every text after its first N words (N = the shortest text's word count unless given),
    so a mechanism whose guarantee compares bags of equal size N applies to all of them."""
    counts = [sum(t.is_word for t in tokenize(text)) for text in corpus.texts]
    n = min(counts) if length is None else length
    if n < 1:
        raise InvalidParameterError(f"corpus '{corpus.name}' has a text with no words; cannot truncate to a common length")
    texts = []
    for text in corpus.texts:
        tokens = tokenize(text)
        seen, cut = 0, len(tokens)
        for index, token in enumerate(tokens):
            if token.is_word:
                seen += 1
                if seen == n:
                    cut = index + 1
                    break
        texts.append("".join(t.text for t in tokens[:cut]))
    return corpus.with_texts(texts, f"{corpus.name} (first {n} words)")


def split_by_fractions(corpus: LabelledCorpus, fractions: Sequence[float]) -> list[LabelledCorpus]:
    """Each label's texts cut, in corpus order, into consecutive parts of the given fractions
    (paper 002's 70/10/20 train/dev/evaluation split): a label of n texts gives part j the texts
    from round(n * sum(fractions[:j])) on, so every text lands in exactly one part.

    >>> parts = split_by_fractions(LabelledCorpus([str(i) for i in range(10)], ["a"] * 10), [0.7, 0.1, 0.2])
    >>> [p.texts for p in parts]
    [['0', '1', '2', '3', '4', '5', '6'], ['7'], ['8', '9']]
    """
    if not fractions or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise InvalidParameterError(f"split fractions {list(fractions)} must be positive and sum to 1 (e.g. 70,10,20)")
    _, groups = group_indices(corpus.labels)
    parts: list[list[int]] = [[] for _ in fractions]
    for rows in groups:
        bounds = [round(len(rows) * sum(fractions[:j])) for j in range(len(fractions) + 1)]
        for j in range(len(fractions)):
            parts[j] += rows[bounds[j]:bounds[j + 1]]
    return [corpus.subset(sorted(rows), f"{corpus.name} (part {j + 1})") for j, rows in enumerate(parts)]
