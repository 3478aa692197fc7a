"""The public sentence stop (``end_after``): once a unit's reply holds enough tokens, a drawn token
that opens a new sentence right after one closed ends the reply and is not kept. It reads only the
drawn tokens, so it may only cut a reply short: the draws before the stop are those without it."""

from __future__ import annotations

import numpy as np
import pytest

from textveil.errors import InvalidParameterError
from textveil.mechanisms.paraphrase import Paraphrase
from textveil.mechanisms.restyle import Restyle
from textveil.mechanisms.task_phrases import PhraseBan, ReplyTails
from textveil.mechanisms.unit_plan import sentence_stop
from textveil.models.engines.batching import DecodeJob, SentenceStop
from textveil.models.toy_language_model import toy_language_model

WORDS = ["calm", "sea.", "storm", "wind.", "rain", "sun!", "3.5"]
# Sentence ends are likely, so that a reply of a few tokens meets several.
LOGITS = {"calm": {"sea.": 2.0, "storm": 1.0}, "storm": {"wind.": 2.5, "rain": 1.0},
          "system": {"sun!": 1.5, "calm": 1.0}, "rain": {"3.5": 1.0}}
TEXTS = ["calm sea. storm wind.", "storm wind. rain\n\ncalm sea. sun!\n\nstorm", "rain 3.5 calm"]


@pytest.fixture(scope="module")
def toy():
    return toy_language_model(WORDS, LOGITS)


def test_the_decoder_ends_a_reply_where_a_new_sentence_opens_once_it_is_long_enough() -> None:
    stop = SentenceStop(2, closing=frozenset({9}), opening=frozenset({5, 6}))
    job = DecodeJob([[1, 2], [1, 3], [1, 4]], 1, 10, lambda logits, rows: rows, frozenset({0}), sentence_stop=stop)
    early, cut, dotted = [], [], []
    # a sentence ends after one token: too short, the reply goes on
    assert [job.add_token(0, early, token) for token in (9, 5, 7)] == [False, False, False]
    # after two tokens, a token that opens a sentence ends it, and is not kept
    assert [job.add_token(1, cut, token) for token in (7, 9, 5)] == [False, False, True]
    # a token written without a space after the stop ("3.5") goes on
    assert [job.add_token(2, dotted, token) for token in (7, 9, 8)] == [False, False, False]
    assert job.results[1] == ([7, 9], True) and early == [9, 5, 7] and dotted == [7, 9, 8]


def test_the_model_sets_are_read_from_the_tokenizer(toy) -> None:
    stop = sentence_stop(toy, 3)
    closing = sorted(toy.decode([token]) for token in stop.closing)
    assert closing == ["sea.", "sun!", "wind."]  # "3.5" does not end with a stop
    assert all(toy.encode(word)[0] in stop.opening for word in ("calm", "storm", "rain"))
    assert sentence_stop(toy, 0) is None


def _rewriter(toy, cls=Paraphrase, **params):
    settings = {"max_new_tokens": 12, "seed": 5, "context": "none", **params}
    if cls is Paraphrase:
        return Paraphrase(8.0, score="public-base", language_model=toy, **settings)
    return Restyle(language_model=toy, **settings)


@pytest.mark.parametrize("cls", [Paraphrase, Restyle])
def test_the_stop_only_cuts_each_reply_where_its_rule_says(toy, cls) -> None:
    """Each unit's reply under the stop is a prefix of the same unit's reply without it (same seed,
    same draws), it ends right after a sentence end once it holds end_after tokens, and it is cut no
    earlier (power: the replies without the stop go on past such a point)."""
    after = 3
    stop = sentence_stop(toy, after)
    seeds = list(range(40))
    texts = [TEXTS[i % len(TEXTS)] for i in seeds]
    cut = _rewriter(toy, cls, end_after=after).sanitize_records(texts, seeds)
    whole = _rewriter(toy, cls).sanitize_records(texts, seeds)
    went_on = 0
    for short, long in zip(cut, whole):
        for a, b in zip(short.text.split("\n\n"), long.text.split("\n\n")):
            mine, theirs = toy.encode(a), toy.encode(b)
            assert theirs[: len(mine)] == mine
            ends = [k for k in range(after, len(mine) + 1) if mine[k - 1] in stop.closing]
            assert ends in ([], [len(mine)])  # no sentence end after `after` tokens but at the very end
            if len(theirs) > len(mine):
                went_on += 1
                assert mine and mine[-1] in stop.closing and len(mine) >= after
    assert went_on >= 10


def test_the_guarantee_names_the_rule_and_keeps_its_bound(toy) -> None:
    mechanism = _rewriter(toy, end_after=3)
    release = mechanism.sanitize(TEXTS[1])
    assert release.guarantee.document_epsilon == pytest.approx(8.0 * 12 * 3)  # L per unit, as without it
    assert "once it held 3 tokens, by a drawn token that opened a new sentence" in release.guarantee.how
    assert "once it held" not in _rewriter(toy).sanitize(TEXTS[1]).guarantee.how
    restyled = _rewriter(toy, Restyle, end_after=3).sanitize(TEXTS[1]).guarantee
    assert "first sentence end after 3 tokens" in restyled.how


def test_the_fingerprint_leaves_it_out_when_off(toy) -> None:
    """Releases cached before the rule existed are still read (no stop: no new key); a stop is
    another release."""
    assert "end_after" not in _rewriter(toy).fingerprint()["parameters"]
    assert _rewriter(toy, end_after=4).fingerprint()["parameters"]["end_after"] == 4
    assert _rewriter(toy, end_after=4).fingerprint() != _rewriter(toy).fingerprint()
    with pytest.raises(InvalidParameterError):
        _rewriter(toy, end_after=-2)


def test_reply_tails_forget_a_reply_the_stop_ended(toy) -> None:
    stop = sentence_stop(toy, 1)
    candidates = np.arange(toy.vocabulary_size)
    tails = ReplyTails(PhraseBan.for_model(toy, ("calm storm",)), candidates, ends=(), limit=50, stop=stop)
    sea, calm = toy.encode("sea.")[0], toy.encode("calm")[0]
    tails.drawn([0, 1], [sea, calm])
    tails.drawn([0, 1], [calm, calm])  # reply 0 opened a sentence after one closed: it ended
    assert 0 not in tails._counts and tails._counts[1] == 2
