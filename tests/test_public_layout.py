"""The default release is a function of its privatised tokens only: layout never leaks.

Three claims, each tested end to end through ``EarthMoversPrivacy.sanitize``:

* inputs that differ only in casing, spacing or line breaks give the identical release for the
  same seed (property-based, with Hypothesis, and on real blog posts);
* inputs that differ in one punctuation mark give release distributions within the stated
  factor exp(epsilon * d) of each other (Clopper-Pearson bounds on the likelihood ratio of
  every output seen often enough); the same test catches ``layout="keep"``, which copies the
  mark, so it has power;
* the public rules write readable text from released tokens.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta

from conftest import require_shared_data
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.text.layout import PUBLIC_MARKS, is_mark, release_units, render_public_layout

WORDS = ["the", "market", "rallied", "today", "bank", "fell", "i", "london", "good", "news"]
MARKS = [",", ".", "!", "?", ";", "(", ")", '"', "-", "'"]


@pytest.fixture(scope="module")
def toy_with_marks() -> WordEmbeddings:
    """Ten words and nine marks in 4 dimensions, so that the marks can be released too."""
    rng = np.random.default_rng(11)
    entries = WORDS + MARKS
    return WordEmbeddings(entries, rng.normal(size=(len(entries), 4)), name="toy-words-and-marks")


def _release(embeddings: WordEmbeddings, text: str, seed: int, epsilon: float = 2.0, **options) -> str:
    return EarthMoversPrivacy(epsilon, embeddings=embeddings, seed=seed, **options).sanitize(text).text


# --------------------------------------------------------------------------------------
# Casing, spacing and line breaks never reach the release
# --------------------------------------------------------------------------------------

_token = st.sampled_from(WORDS + MARKS + ["Zyzzyva", "42", "\u2019", "\U0001F600"])
_space = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", "\n\n", " \u00a0"])


def _recase(word: str, how: int) -> str:
    return [str.lower, str.upper, str.title, lambda w: w.swapcase()][how % 4](word)


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(_token, min_size=1, max_size=12),
    spaces=st.lists(_space, min_size=13, max_size=13),
    other_spaces=st.lists(_space, min_size=13, max_size=13),
    casing=st.lists(st.integers(0, 3), min_size=12, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_casing_spacing_and_line_breaks_do_not_change_the_release(
    toy_with_marks, tokens, spaces, other_spaces, casing, seed
) -> None:
    # Words separated by at least one space stay the same words; marks may touch anything.
    plain = "".join(s + t for s, t in zip(spaces, tokens)) + spaces[-1]
    styled = "".join(s + _recase(t, c) for s, t, c in zip(other_spaces, tokens, casing)) + other_spaces[0]
    assert release_units(plain) == release_units(styled)
    assert _release(toy_with_marks, plain, seed) == _release(toy_with_marks, styled, seed)


def test_keep_layout_does_copy_casing_and_spacing(toy_with_marks) -> None:
    """The contrast: with ``layout="keep"`` the same two inputs give different releases."""
    plain, styled = "the market, today", "THE  market,\n\nToday"
    assert _release(toy_with_marks, plain, 1, 1e6) == _release(toy_with_marks, styled, 1, 1e6) == "The market, today"
    kept = {_release(toy_with_marks, text, 1, 1e6, layout="keep") for text in (plain, styled)}
    assert kept == {plain, styled}


def test_a_mark_is_written_as_released_never_as_typed(toy_with_marks) -> None:
    """A curly apostrophe is looked up as a straight one; when it decodes to that entry the
    release writes the entry, so the typographic habit does not survive."""
    assert toy_with_marks.vector("\u2019").tolist() == toy_with_marks.vector("'").tolist()
    for seed in range(5):
        curly = _release(toy_with_marks, "the \u2019 market \u2019", seed, 1e6)
        assert curly == _release(toy_with_marks, "the ' market '", seed, 1e6) and "\u2019" not in curly


@pytest.mark.data
@pytest.mark.slow
def test_real_posts_restyled_give_identical_releases() -> None:
    """Blog posts, and the same posts in upper case with their spacing and line breaks changed,
    released with the default embeddings and one seed: every release is identical."""
    from textveil.embeddings.default_model import load_embeddings

    path = require_shared_data("blog_short", "blog_short.jsonl")
    posts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()[:2000:20]]
    restyled = [re.sub(r"\s+", lambda m: "\n\n \t" if len(m.group()) % 2 else " ", post.upper()) for post in posts]
    embeddings = load_embeddings()
    first = EarthMoversPrivacy(15.0, embeddings=embeddings, seed=4).sanitize_many(posts)
    second = EarthMoversPrivacy(15.0, embeddings=embeddings, seed=4).sanitize_many(restyled)
    assert [r.text for r in first] == [r.text for r in second]
    assert all("\n" not in r.text and "  " not in r.text for r in first)


# --------------------------------------------------------------------------------------
# One punctuation mark: release frequencies within exp(epsilon * d)
# --------------------------------------------------------------------------------------

def _counts(embeddings: WordEmbeddings, text: str, epsilon: float, n: int, seed: int, **options) -> Counter[str]:
    """How often each output event occurs over ``n`` releases of ``text``. The event is the
    third token of the release as a reader tokenizes it: a function of the release text, so
    any bound on the release holds for it (post-processing)."""
    mechanism = EarthMoversPrivacy(epsilon, embeddings=embeddings, seed=seed, **options)
    return Counter(release_units(r.text)[2] for r in mechanism.sanitize_many([text] * n))


def _largest_ratio_lower_bound(first: Counter[str], second: Counter[str], n: int, alpha: float) -> float:
    """The largest, over every release seen at least 30 times under either input, of a lower
    confidence bound on P(release | first) / P(release | second): Clopper-Pearson bounds at
    level ``alpha`` each, Bonferroni-corrected over the releases compared."""
    outputs = [y for y in set(first) | set(second) if max(first[y], second[y]) >= 30]
    level = alpha / (2 * max(1, len(outputs)))
    largest = 0.0
    for y in outputs:
        for a, b in ((first, second), (second, first)):
            low = beta.ppf(level, a[y], n - a[y] + 1) if a[y] else 0.0
            high = beta.ppf(1 - level, b[y] + 1, n - b[y]) if b[y] < n else 1.0
            largest = max(largest, low / high if high > 0 else math.inf)
    return largest


def test_one_punctuation_mark_changes_release_frequencies_by_at_most_the_claim(toy_with_marks) -> None:
    epsilon, n = 0.6, 20_000
    text, other = "the market, today", "the market! today"
    distance = float(np.linalg.norm(toy_with_marks.vector(",") - toy_with_marks.vector("!")))
    claim = math.exp(epsilon * distance)  # the Guarantee's factor for this pair: one position differs
    release = EarthMoversPrivacy(epsilon, embeddings=toy_with_marks, seed=0).sanitize(text)
    assert release.guarantee.sequence_bound(distance) == pytest.approx(claim)
    first = _counts(toy_with_marks, text, epsilon, n, seed=101)
    second = _counts(toy_with_marks, other, epsilon, n, seed=202)
    audited = _largest_ratio_lower_bound(first, second, n, alpha=1e-3)
    assert 1.0 < audited <= claim, (audited, claim)
    # Power: the layout that copies punctuation is caught at once by the same test.
    kept_first = _counts(toy_with_marks, text, epsilon, 2_000, seed=101, layout="keep")
    kept_second = _counts(toy_with_marks, other, epsilon, 2_000, seed=202, layout="keep")
    assert _largest_ratio_lower_bound(kept_first, kept_second, 2_000, alpha=1e-3) > 10 * claim


# --------------------------------------------------------------------------------------
# The public rules
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (["i", "saw", "london", "."], "I saw London."),
        (["it", "costs", "$", "1", ",", "000", "at", "10", ":", "30", "!"], "It costs $1,000 at 10:30!"),
        (["he", "said", '"', "no", '"', "and", "left", "."], 'He said "no" and left.'),
        (["a", "(", "b", ")", "c", "?", "d"], "A (b) c? D"),
        (["state", "-", "of", "-", "the", "-", "art", ";", "ok"], "State-of-the-art; ok"),
        ([".", ".", ".", "wait"], "... Wait"),
        ([], ""),
    ],
)
def test_public_rules(tokens: list[str], expected: str) -> None:
    assert render_public_layout(tokens, {"london": "London"}) == expected


def test_release_units_drop_whitespace_and_case_only() -> None:
    text = "Hi  THERE,\r\n\tyou\u2019re 2nd :)"
    assert release_units(text) == ["hi", "there", ",", "you're", "2nd", ":", ")"]
    assert all(is_mark(m) for m in PUBLIC_MARKS)


@pytest.mark.slow
def test_public_casing_table_spells_common_names() -> None:
    from textveil.text.casing import public_casing_table

    table = public_casing_table()
    assert table["london"] == "London" and table["nasa"] == "NASA" and table["monday"] == "Monday"
    assert "bank" not in table and "may" not in table
