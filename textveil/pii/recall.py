"""How much the entity stage finds: recall and precision per entity type on labelled sentences.

The sentences come from presidio-evaluator's generator (templates such as "my name is
{{person}}" filled with Faker values, each value's span known), seeded, so the set is made
again from its seed rather than stored; or from a labelled file written by hand
(``tests/data/pii_second_set.jsonl``, read by :func:`labelled_file`), which the generator did
not make. A labelled entity counts as *removed* when every letter
and digit of it lies inside a replaced span (of any type): what privacy needs. A replaced span
is *right* when it overlaps a labelled entity (of any type). ``benchmarks/privacy/pii_recall.py`` writes
the figures the Guarantee quotes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# presidio-evaluator's label -> the stage's type that should remove it (None: not targeted).
GOLD_TYPES: dict[str, str | None] = {
    "PERSON": "PERSON", "GPE": "LOCATION", "LOCATION": "LOCATION", "STREET_ADDRESS": "LOCATION",
    "ORGANIZATION": "ORGANIZATION", "NRP": "NRP", "EMAIL_ADDRESS": "EMAIL_ADDRESS", "PHONE_NUMBER": "PHONE_NUMBER",
    "DOMAIN_NAME": "URL", "URL": "URL", "IP_ADDRESS": "IP_ADDRESS", "CREDIT_CARD": "CREDIT_CARD",
    "IBAN_CODE": "IBAN_CODE", "US_SSN": "US_SSN", "DATE_TIME": "DATE_TIME", "AGE": None, "TITLE": None,
    "ZIP_CODE": None, "USERNAME": None,
}


@dataclass(frozen=True)
class LabelledSentence:
    """A sentence and its labelled entities: ``(label, start, end)``."""

    text: str
    spans: tuple[tuple[str, int, int], ...]


def generated_sentences(count: int, seed: int) -> list[LabelledSentence]:
    """``count`` labelled sentences from presidio-evaluator's generator with ``seed`` (the same
    seed gives the same sentences, but for the dates in them). Needs the test extra
    (``pip install presidio-evaluator``); the global random generators are left as they were."""
    import contextlib
    import io
    import warnings

    from presidio_evaluator.data_generator import PresidioSentenceFaker

    import random

    import numpy as np

    saved = random.getstate(), np.random.get_state()
    try:
        # The generator seeds Python's and NumPy's global generators only after it has drawn its
        # table of fake people from them: seeded here first, the set is the same in every process
        # (but for DATE_TIME values, which Faker draws relative to the clock).
        random.seed(seed)
        np.random.seed(seed)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")  # it would fetch a list of hospitals, and says so when offline
            faker = PresidioSentenceFaker(locale="en_US", lower_case_ratio=0.05, random_seed=seed)
            records = faker.generate_new_fake_sentences(count)
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
    # The address templates write line breaks as the two characters backslash-n: made real line
    # breaks (and a space, so every offset stays where it was).
    return [LabelledSentence(r.full_text.replace("\\n", " \n"),
                             tuple((s.entity_type, s.start_position, s.end_position) for s in r.spans))
            for r in records]


def labelled_file(path: str | Path) -> list[LabelledSentence]:
    """The labelled sentences of a JSON-lines file: one object a line with ``text`` and ``spans``,
    each span ``[label, start, end, value]`` where ``value`` is ``text[start:end]`` (written out so
    that a reader sees what is labelled, and checked here: an offset that does not match fails).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "set.jsonl"
    ...     _ = path.write_text('{"text": "I am Ann", "spans": [["PERSON", 5, 8, "Ann"]]}\\n', encoding="utf-8")
    ...     labelled_file(path)
    [LabelledSentence(text='I am Ann', spans=(('PERSON', 5, 8),))]
    """
    import json

    sentences = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        text, spans = record["text"], []
        for label, start, end, value in record["spans"]:
            if not 0 <= start < end <= len(text) or text[start:end] != value:
                raise ValueError(f"{path}, line {number}: {label} [{start}, {end}) reads "
                                 f"{text[start:end]!r}, not {value!r}")
            spans.append((label, start, end))
        sentences.append(LabelledSentence(text, tuple(spans)))
    return sentences


HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "mister"})
"""Words a labelled name may start with that identify nobody: left in place, the name still counts as removed."""


def removed(text: str, start: int, end: int, replaced: Sequence[Any]) -> bool:
    """Whether every word (run of letters and digits) of ``text[start:end]`` lies inside a
    replaced span, honorifics aside.

    >>> from types import SimpleNamespace as S
    >>> removed("call Ann Lee now", 5, 12, [S(start=5, end=8), S(start=9, end=12)])
    True
    >>> removed("call Ann Lee now", 5, 12, [S(start=5, end=8)])
    False
    >>> removed("to Mr. Ann Lee", 3, 14, [S(start=7, end=14)])
    True
    """
    import re

    covered = [False] * (end - start)
    for span in replaced:
        for i in range(max(span.start, start), min(span.end, end)):
            covered[i - start] = True
    for word in re.finditer(r"\w+", text[start:end]):
        if word.group().casefold() not in HONORIFICS and not all(covered[word.start():word.end()]):
            return False
    return True


def score(sentences: Sequence[LabelledSentence], replaced: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Recall (labelled entities removed) per labelled type, mapped to the stage's types, and
    precision (replaced spans that overlap a labelled entity) per replaced type.

    >>> from types import SimpleNamespace as S
    >>> result = score([LabelledSentence("I am Ann", (("PERSON", 5, 8),))], [[S(entity_type="PERSON", start=5, end=8)]])
    >>> result["per_type"]["PERSON"]["recall"], result["per_type"]["PERSON"]["precision"]
    (1.0, 1.0)
    """
    found, labelled, right, made = Counter(), Counter(), Counter(), Counter()
    by_label: dict[str, list[int]] = {}
    for sentence, spans in zip(sentences, replaced):
        for label, start, end in sentence.spans:
            kind = GOLD_TYPES.get(label, None) or f"{label} (not targeted)"
            hit = removed(sentence.text, start, end, spans)
            labelled[kind] += 1
            found[kind] += hit
            by_label.setdefault(label, [0, 0])
            by_label[label][0] += hit
            by_label[label][1] += 1
        for span in spans:
            made[span.entity_type] += 1
            right[span.entity_type] += any(span.start < end and start < span.end for _, start, end in sentence.spans)
    kinds = sorted(set(labelled) | set(made))
    per_type = {kind: {"labelled": labelled[kind], "removed": found[kind],
                       "recall": round(found[kind] / labelled[kind], 4) if labelled[kind] else None,
                       "replaced": made[kind],
                       "precision": round(right[kind] / made[kind], 4) if made[kind] else None}
                for kind in kinds}
    total_labelled = sum(labelled.values())
    return {"sentences": len(sentences), "per_type": per_type,
            "per_label": {label: {"labelled": n, "removed": hit, "recall": round(hit / n, 4)}
                          for label, (hit, n) in sorted(by_label.items())},
            "overall": {"recall": round(sum(found.values()) / total_labelled, 4) if total_labelled else None,
                        "precision": round(sum(right.values()) / sum(made.values()), 4) if made else None}}
