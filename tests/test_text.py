"""The text layer (lossless tokenising, casing, stop words) and how EarthMoversPrivacy uses it."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from conftest import TOY_WORDS, require_shared_data
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.text.casing import apply_casing
from textveil.text.stopwords import is_stop_word
from textveil.text.tokenize import TokenKind, detokenize, is_word, tokenize, word_key
from textveil.utility.preprocess import words as utility_words

# --------------------------------------------------------------------------------------
# Tokenising: detokenize(tokenize(text)) == text, always
# --------------------------------------------------------------------------------------

TRICKY = [
    "",
    " ",
    "\r\n",
    "Line one.\r\nLine two.\r\n\r\n",
    "old mac\rline endings\r",
    "\t\tindented\twith\ttabs \t\n",
    "naïve café Zürich Ångström İstanbul straße",
    "cafe\u0301 (decomposed accent)",
    "emoji 👍🏽 family 👨\u200d👩\u200d👧 flag 🇬🇧!",
    "curly: don\u2019t, \u2018quoted\u2019 and \u201cdouble\u201d",
    "straight: don't 'quoted' \"double\"",
    "...!?;:—–-",
    "12,345.67 and 3.5% and 1990s and 2nd",
    "well-known state-of-the-art e-mail",
    "snake_case_name __dunder__ _",
    "U.S. U.K. e.g. i.e.",
    "non\u00a0breaking\u2028line\u2029para\u200bzero-width",
    "日本語のテキスト, 中文; русский текст; עברית; العربية",
    "nul\x00byte and bell\x07 and escape\x1b",
    "\ufeffbyte order mark",
    "lone surrogate \ud800 here",
    "trailing spaces   ",
    "'",
    "a",
]


def _assert_well_formed(text: str) -> None:
    tokens = tokenize(text)
    assert detokenize(tokens) == text
    for token in tokens:
        assert token.text, "empty token"
        if token.kind is TokenKind.WORD:
            assert is_word(token.text)
        elif token.kind is TokenKind.SPACE:
            assert token.text.isspace()
        else:
            assert len(token.text) == 1 and not token.text.isspace()
    # adjacent tokens of one kind would mean a word or a run of spaces was split
    for left, right in zip(tokens, tokens[1:]):
        assert not (left.kind is right.kind is TokenKind.SPACE)
        assert not (left.kind is right.kind is TokenKind.WORD)


@pytest.mark.parametrize("text", TRICKY, ids=[repr(t)[:30] for t in TRICKY])
def test_round_trip_on_tricky_strings(text: str) -> None:
    _assert_well_formed(text)


def test_round_trip_on_random_strings() -> None:
    alphabet = list("aZé9 _-'\u2019.,\t\r\n\u00a0👍\u200d日") + ["\r\n"]
    rng = np.random.default_rng(0)
    for _ in range(500):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 40))))
        _assert_well_formed(text)


def _words(text: str) -> list[str]:
    return [t.text for t in tokenize(text) if t.is_word]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("don't", ["don't"]),
        ("Don\u2019t", ["Don\u2019t"]),
        ("O'Neil said", ["O'Neil", "said"]),
        ("rock'n'roll", ["rock'n'roll"]),
        ("U.S.", ["U", "S"]),
        ("well-known", ["well", "known"]),
        ("state-of-the-art", ["state", "of", "the", "art"]),
        ("snake_case", ["snake", "case"]),
        ("Reuters' view", ["Reuters", "view"]),
        ("'quoted'", ["quoted"]),
        ("3.5% in 1997", ["3", "5", "in", "1997"]),
        ("C50train", ["C50train"]),
        ("naïve", ["naïve"]),
        ("a--b", ["a", "b"]),
        ("!!!", []),
    ],
)
def test_word_tokens(text: str, words: list[str]) -> None:
    assert _words(text) == words


def test_token_kinds() -> None:
    kinds = [(t.text, t.kind) for t in tokenize("Hi,\r\n you!")]
    assert kinds == [
        ("Hi", TokenKind.WORD),
        (",", TokenKind.OTHER),
        ("\r\n ", TokenKind.SPACE),
        ("you", TokenKind.WORD),
        ("!", TokenKind.OTHER),
    ]


def test_word_key_normalises_case_and_apostrophes() -> None:
    assert word_key("Don\u2019t") == word_key("DON'T") == "don't"


def _round_trip_failures(paths: list[str]) -> tuple[list[str], int, int]:
    """(files that do not round-trip, files holding CRLF, word tokens seen)."""
    failures, with_crlf, words = [], 0, 0
    for path in paths:
        with open(path, newline="", encoding="utf-8") as handle:  # newline="": keep CRLF
            text = handle.read()
        tokens = tokenize(text)
        if detokenize(tokens) != text:
            failures.append(path)
        with_crlf += "\r\n" in text
        words += sum(t.kind is TokenKind.WORD for t in tokens)
    return failures, with_crlf, words


@pytest.mark.data
def test_round_trip_on_every_reuters_c50_document() -> None:
    root = require_shared_data("reuters_c50")
    files = {part: sorted(str(p) for p in (root / part).glob("*/*.txt")) for part in ("C50train", "C50test")}
    assert len(files["C50train"]) == 2500 and len(files["C50test"]) == 2500  # 50 authors x 50 texts each
    paths = files["C50train"] + files["C50test"]
    workers = max(1, min(os.cpu_count() or 1, 8))
    chunks = [paths[i::workers * 4] for i in range(workers * 4)]
    if workers == 1:
        results = [_round_trip_failures(chunk) for chunk in chunks]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_round_trip_failures, chunks))
    failures = [path for result in results for path in result[0]]
    assert failures == [], f"{len(failures)} documents do not round-trip, e.g. {failures[:3]}"
    assert sum(r[1] for r in results) == len(paths)  # the corpus is CRLF, and reading kept it
    assert sum(r[2] for r in results) > 2_000_000  # ~500 words a document


# --------------------------------------------------------------------------------------
# Casing and stop words
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "substitute", "expected"),
    [
        ("GDP", "growth", "GROWTH"),
        ("O'NEIL", "smith", "SMITH"),
        ("ÉCOLE", "school", "SCHOOL"),
        ("Market", "stocks", "Stocks"),
        ("I", "me", "Me"),  # one capital letter: capitalised, not shouted
        ("A", "the", "The"),
        ("McDonald", "burger", "Burger"),
        ("bank", "lender", "lender"),
        ("bank", "London", "London"),  # lower case keeps the vocabulary's own capitals
        ("iPhone", "phone", "phone"),
        ("", "word", "word"),
        ("Word", "", ""),
    ],
)
def test_apply_casing(original: str, substitute: str, expected: str) -> None:
    assert apply_casing(original, substitute) == expected


@pytest.mark.parametrize("word", ["the", "The", "THE", "and", "of", "Because", "whereas"])
def test_stop_words(word: str) -> None:
    assert is_stop_word(word)


@pytest.mark.parametrize("word", ["market", "Reuters", "", "zyzzyva", "the-", "1997"])
def test_not_stop_words(word: str) -> None:
    assert not is_stop_word(word)


# A contraction of stop words is a stop word; a content word with a clitic, or an apostrophe
# that is no clitic ("De'Andre": "de" is in scikit-learn's list), is not.
STOP_WORD_CASES = {
    "It's": True, "It\u2019s": True, "we're": True, "We\u2019re": True, "don't": True, "Don\u2019t": True,
    "can't": True, "won't": True, "I'm": True, "they've": True, "THE": True, "the": True,
    "market": False, "Market's": False, "market\u2019s": False, "De'Andre": False, "o'clock": False, "1997": False,
}


@pytest.mark.parametrize(("word", "expected"), STOP_WORD_CASES.items())
def test_one_stop_word_rule_for_mechanism_and_utility(word: str, expected: bool) -> None:
    # the mechanism (keep_stop_words, bag output) asks is_stop_word; the utility tasks drop
    # stop words through preprocess.words: both must drop the same words
    assert is_stop_word(word) is (utility_words(word, drop_stop_words=True) == [])
    assert is_stop_word(word) is expected


# --------------------------------------------------------------------------------------
# EarthMoversPrivacy through the text layer (toy embeddings: 50 real words, 8 dims)
# --------------------------------------------------------------------------------------

SAMPLE = (
    "The market rallied,\r\n  and the BANK's stocks rose 5%!\tGrowth\u2014fine (good) \u2026 "
    "Tokyo's yen fell; London's gold rose.\n"
)
OOV_WORD = "zyzzyva"


def _vocabulary(embeddings: WordEmbeddings) -> set[str]:
    """What emp may write: the words and the entity stage's placeholders (one entry each)."""
    return {word_key(w) for w in embeddings.with_placeholders().words}


def test_toy_vocabulary_has_the_intended_stop_words(toy_word_embeddings: WordEmbeddings) -> None:
    assert sum(is_stop_word(w) for w in toy_word_embeddings.words) == 10
    assert OOV_WORD not in toy_word_embeddings


@pytest.mark.parametrize("seed", range(5))
def test_only_word_tokens_change_and_everything_else_stays_in_place(toy_word_embeddings, seed: int) -> None:
    release = EarthMoversPrivacy(1.0, embeddings=toy_word_embeddings, layout="keep", seed=seed).sanitize(SAMPLE)
    before, after = tokenize(SAMPLE), tokenize(release.text)
    assert len(after) == len(before)
    vocabulary = _vocabulary(toy_word_embeddings)
    for old, new in zip(before, after):
        assert new.kind is old.kind
        if old.is_word:
            assert new.text == old.text or word_key(new.text) in vocabulary
        else:
            assert new.text == old.text
    assert release.text != SAMPLE  # at epsilon 1 on these vectors, words do change
    assert release.guarantee.words_protected == sum(t.is_word for t in before)
    # every recorded change points at the released token
    for change in release.changes:
        assert before[change.token_index].text == change.original
        assert after[change.token_index].text == change.released
    assert len(release.changes) + release.words_unchanged == release.guarantee.words_protected


def test_casing_is_carried_over(toy_word_embeddings) -> None:
    text = "MARKET Market market"
    for seed in range(10):
        released = _words(EarthMoversPrivacy(0.5, embeddings=toy_word_embeddings, layout="keep", seed=seed).sanitize(text).text)
        assert released[0].isupper() and released[1][0].isupper() and released[2].islower()


def test_bag_output_lower_cases_and_drops_stop_words_and_punctuation(toy_word_embeddings) -> None:
    # every word of this text is in the toy vocabulary (so none is embedded through pieces)
    text = "The market rallied,\r\n  and the BANK stocks rose!\tGrowth\u2014fine (good) \u2026 Tokyo yen fell; London gold rose.\n"
    assert all(t.text in toy_word_embeddings for t in tokenize(text) if t.is_word)
    content = [t.text for t in tokenize(text) if t.is_word and not is_stop_word(t.text)]
    # no noise to speak of: the bag is the lower-cased content words, sorted (a bag keeps no order)
    quiet = EarthMoversPrivacy(1e6, embeddings=toy_word_embeddings, output="bag", seed=0).sanitize(text)
    assert quiet.text == " ".join(sorted(word_key(w) for w in content))
    assert quiet.guarantee.words_protected == len(content)
    # with noise: the same number of words, each a (lower-case) vocabulary word, no punctuation
    noisy = EarthMoversPrivacy(0.5, embeddings=toy_word_embeddings, output="bag", seed=0).sanitize(text)
    released = noisy.text.split(" ")
    assert len(released) == len(content)
    assert all(is_word(w) and w == w.lower() for w in released)
    changed = [w for w in released if w not in {word_key(c) for c in content}]
    assert changed and all(w in _vocabulary(toy_word_embeddings) for w in changed)
    assert released == sorted(released)  # written in sorted order: the input's word order is not released


def test_keep_stop_words_passes_them_through_and_counts_them(toy_word_embeddings) -> None:
    text = "The market and the bank of London."
    for seed in range(5):
        release = EarthMoversPrivacy(0.01, embeddings=toy_word_embeddings, keep_stop_words=True, layout="keep", seed=seed).sanitize(text)
        words = _words(release.text)
        assert [words[i] for i in (0, 2, 3, 5)] == ["The", "and", "the", "of"]
        assert release.guarantee.tokens_passed_through == 4
        assert release.guarantee.words_protected == 3
        assert "NOT protected" in release.guarantee.statement
    default = EarthMoversPrivacy(0.01, embeddings=toy_word_embeddings, layout="keep", seed=0).sanitize(text)
    assert default.guarantee.words_protected == 7 and default.guarantee.tokens_passed_through == 0


def test_oov_keep_passes_unknown_words_and_counts_them(toy_word_embeddings) -> None:
    text = f"The {OOV_WORD} market, {OOV_WORD.upper()}!"
    release = EarthMoversPrivacy(0.01, embeddings=toy_word_embeddings, oov="keep", layout="keep", seed=3).sanitize(text)
    words = _words(release.text)
    assert words[1] == OOV_WORD and words[3] == OOV_WORD.upper()
    assert release.guarantee.tokens_passed_through == 2
    assert release.guarantee.words_protected == 2
    assert release.guarantee.tokens_dropped == 0


def test_oov_drop_removes_unknown_words_and_counts_them(toy_word_embeddings) -> None:
    text = f"{OOV_WORD} market {OOV_WORD} rallied {OOV_WORD} {OOV_WORD} stocks"
    release = EarthMoversPrivacy(1e6, embeddings=toy_word_embeddings, oov="drop", layout="keep", seed=0).sanitize(text)
    assert release.text == "market rallied stocks"
    assert release.guarantee.tokens_dropped == 4
    assert release.guarantee.words_protected == 3
    assert "4 word token(s) were dropped" in release.guarantee.statement
    bag = EarthMoversPrivacy(1e6, embeddings=toy_word_embeddings, oov="drop", output="bag", layout="keep", seed=0).sanitize(text)
    assert bag.text == "market rallied stocks"
    assert bag.guarantee.tokens_dropped == 4


@pytest.mark.parametrize(
    ("template", "expected"),
    [("market {0}.", "market."), ("market {0}", "market"), ("({0} market)", "(market)"), ("{0}, market", ", market")],
)
def test_oov_drop_leaves_no_stray_space(toy_word_embeddings, template: str, expected: str) -> None:
    release = EarthMoversPrivacy(1e6, embeddings=toy_word_embeddings, oov="drop", layout="keep", seed=0).sanitize(template.format(OOV_WORD))
    assert release.text == expected


def test_oov_perturb_never_passes_an_unknown_word_through(toy_word_embeddings) -> None:
    text = " ".join([OOV_WORD, "Bankers", "xq"] * 100)
    release = EarthMoversPrivacy(0.01, embeddings=toy_word_embeddings, seed=5).sanitize(text)
    words = _words(release.text)
    assert len(words) == 300
    assert all(word_key(w) in _vocabulary(toy_word_embeddings) for w in words)
    assert release.guarantee.words_protected == 300 and release.guarantee.tokens_passed_through == 0
    # at low epsilon the substitutes vary: the unknown word is not mapped to one fixed word
    assert len({word_key(w) for w in words[::3]}) > 5


@pytest.mark.parametrize("text", ["", "   ", "...!\r\n", "\u2014 \U0001F44D"])
def test_text_without_words_comes_back_unchanged(toy_word_embeddings, text: str) -> None:
    release = EarthMoversPrivacy(1.0, embeddings=toy_word_embeddings, layout="keep", seed=0).sanitize(text)
    assert release.text == text
    assert release.guarantee.words_protected == 0
    assert release.changes == ()
    bag = EarthMoversPrivacy(1.0, embeddings=toy_word_embeddings, layout="keep", seed=0, output="bag").sanitize(text)
    assert bag.text == "" and bag.guarantee.words_protected == 0


def test_huge_epsilon_returns_the_text_unchanged(toy_word_embeddings) -> None:
    text = "The MARKET rallied, and Tokyo stocks rose!\r\n" * 3
    release = EarthMoversPrivacy(1e6, embeddings=toy_word_embeddings, layout="keep", seed=1).sanitize(text)
    assert release.text == text
    assert release.changes == ()
    assert release.words_unchanged == release.guarantee.words_protected == 21


def test_tiny_epsilon_changes_almost_every_word(toy_word_embeddings) -> None:
    """At epsilon -> 0 the substitute no longer depends on the input; over every vocabulary
    word the expected fraction left unchanged is 1 / |V| (2% here)."""
    text = " ".join(list(TOY_WORDS) * 4)
    release = EarthMoversPrivacy(1e-3, embeddings=toy_word_embeddings, seed=2).sanitize(text)
    changed = sum(a != b for a, b in zip(_words(text), _words(release.text)))
    assert changed >= 0.9 * len(TOY_WORDS) * 4


def test_sanitize_refuses_non_text(toy_word_embeddings) -> None:
    from textveil.errors import InvalidParameterError

    mechanism = EarthMoversPrivacy(1.0, embeddings=toy_word_embeddings)
    with pytest.raises(InvalidParameterError, match="str"):
        mechanism.sanitize(b"bytes")  # type: ignore[arg-type]
    for bad in (dict(oov="ignore"), dict(output="json"), dict(decode="fast"), dict(batch_words=0)):
        with pytest.raises(InvalidParameterError):
            EarthMoversPrivacy(1.0, embeddings=toy_word_embeddings, **bad)


@pytest.mark.data
def test_substitutes_from_glove_are_words_of_the_text_layer() -> None:
    """Regression test for a fixed bug: with embeddings read from a file (read_embeddings), the decoding
    vocabulary keeps every entry of the file, including GloVe's punctuation and abbreviation
    tokens (",", ".", "'s", "--", "u.s.", "1,000", ... 246 of the first 10,000). A word can
    then be released as "," or "'s", so the text-mode release no longer keeps the input's
    punctuation and token structure (the default embeddings avoid this by keeping only
    is_word() entries; file-loaded ones do not)."""
    from textveil.embeddings.readers import read_embeddings

    glove = read_embeddings(require_shared_data("glove_6B_50d_10k", "glove.6B.50d.10k.txt"))
    text = (
        "The company said its quarterly profit rose sharply as sales of its new products grew "
        "in Asia and Europe, and analysts expected the shares to trade higher next week. "
    ) * 20
    release = EarthMoversPrivacy(2.0, embeddings=glove, layout="keep", seed=0).sanitize(text)
    bad = sorted({c.released for c in release.changes if not is_word(c.released)})
    assert bad == [], f"non-word substitutes released: {bad[:10]}"
