"""The entity stage's placeholders are one public token to every mechanism (issue 38): the
tokenizer reads ``<PERSON>`` as one word, emp perturbs it as one vocabulary entry at its own
vector, SynTF gives it no content rating, the language-model mechanisms keep it whole in their
prompt and may copy it, the translation shields it, and each Guarantee states the rule.

A vocabulary holds them only where a stage before the mechanism may write them, each where the
user's space can place it at a point of its own (issue 48): with the stage off, or in a space
that knows none of their describing words, emp is paper 001's mechanism over the user's words
alone (its one-dimensional Laplace check holds)."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from conftest import require_shared_data, skip_without_entity_stage
from textveil.embeddings.word_embeddings import WordEmbeddings
from textveil.mechanisms.earth_movers import EarthMoversPrivacy
from textveil.mechanisms.random_replacement import RandomReplacement
from textveil.mechanisms.registry import mechanism_class
from textveil.mechanisms.syntf import SynTF
from textveil.text.layout import PUBLIC_MARKS, release_units
from textveil.text.placeholders import PLACEHOLDER_TYPES, describing_words, placeholders
from textveil.text.tokenize import detokenize, find_words, tokenize, word_key

SCREENED = "We met <PERSON> in <LOCATION> today, and <ORGANIZATION> paid <PERSON> for the encryption work."


def _placing(embeddings: WordEmbeddings) -> WordEmbeddings:
    """``embeddings`` with every describing word of every placeholder added (random vectors), so
    that each placeholder has a point of its own (the 50 toy words know only "company")."""
    extra = sorted({w for t in PLACEHOLDER_TYPES for w in describing_words(t)} - set(embeddings.words))
    rng = np.random.default_rng(48)
    return WordEmbeddings(embeddings.words + extra,
                          np.concatenate([embeddings.vectors, rng.standard_normal((len(extra), embeddings.dim))]),
                          name=f"{embeddings.name}+describing")


def _bare_angles(text: str) -> list[str]:
    """The angle brackets of ``text`` that are not part of a whole placeholder."""
    without = re.sub(r"<[^\W\d_]\w*>", " ", text)
    return [c for c in without if c in "<>"]


# -- one token ----------------------------------------------------------------------------


def test_a_placeholder_is_one_word_token_whatever_its_case_and_the_text_stays_lossless() -> None:
    text = "Ask <PERSON>'s team in <Location>, not a <3 or a < b > c."
    assert [t.text for t in tokenize(text) if t.is_word][:4] == ["Ask", "<PERSON>", "s", "team"]
    assert detokenize(tokenize(text)) == text
    assert "<Location>" in find_words(text) and "3" in find_words(text)
    assert word_key("<Location>") == word_key("<LOCATION>") == "<LOCATION>"
    assert release_units("in <location>") == release_units("IN <LOCATION>") == ["in", "<LOCATION>"]
    assert "<" not in PUBLIC_MARKS and ">" not in PUBLIC_MARKS


def test_each_placeholder_is_one_entry_at_the_mean_of_its_public_words(toy_word_embeddings) -> None:
    known = _placing(toy_word_embeddings)
    extended = known.with_placeholders()
    assert extended.words[: len(known)] == known.words
    assert extended.words[len(known):] == placeholders()
    for entity_type in PLACEHOLDER_TYPES:
        expected = known.embed(list(describing_words(entity_type))).mean(axis=0)
        assert np.allclose(extended.vector(f"<{entity_type}>"), expected)
    assert extended is known.with_placeholders()  # built once
    # Never two entries at one point: every placeholder's vector is its own.
    assert len({row.tobytes() for row in extended.vectors}) == len(extended)


def test_a_placeholder_the_space_cannot_place_at_a_point_of_its_own_is_no_entry(toy_word_embeddings) -> None:
    """Only describing words the embeddings know place a placeholder (never a guess for an unknown
    word: those all fell on one point); with none known, or at a point an entry already has, it is
    left out."""
    two = WordEmbeddings(["a", "b"], [[0.0], [1.0]])
    assert two.with_placeholders() is two  # knows no describing word: no placeholder at all
    # The toy words know only "company": <ORGANIZATION> would sit on it, so it is left out too.
    assert toy_word_embeddings.with_placeholders() is toy_word_embeddings
    some = WordEmbeddings(["person", "name", "number", "cat"], [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [5.0, 0.0]])
    extended = some.with_placeholders()
    # <PERSON>: the mean of the two of its words known; <CUSTOM> ("name", "word") and the four
    # "number" types would sit on a word's vector: left out.
    assert extended.words == ["person", "name", "number", "cat", "<PERSON>"]
    assert extended.vector("<PERSON>").tolist() == [0.5, 0.5]
    # A word cut from a vocabulary still places one (the full table knows it).
    cut = _placing(toy_word_embeddings)
    top = cut.restrict_to_top(len(toy_word_embeddings))
    assert "city" not in top and top.with_placeholders().words[len(top):] == placeholders()
    assert np.allclose(top.with_placeholders().vector("<LOCATION>"), cut.with_placeholders().vector("<LOCATION>"))


# -- emp ----------------------------------------------------------------------------------


def test_emp_keeps_a_placeholder_at_large_epsilon_and_replaces_it_by_words_of_its_kind_at_small() -> None:
    words = ["we", "met", "in", "today", "person", "someone", "name", "place", "city", "country", "cat", "tax"]
    rng = np.random.default_rng(0)
    toy = WordEmbeddings(words, rng.standard_normal((len(words), 8)))
    loud = EarthMoversPrivacy(1e6, embeddings=toy, seed=1, placeholders=True).sanitize(
        "We met <PERSON> in <LOCATION> today")
    assert loud.text == "We met <PERSON> in <LOCATION> today"
    draws = Counter()
    mechanism = EarthMoversPrivacy(3.0, embeddings=toy, seed=2, placeholders=True)
    for release in mechanism.sanitize_many(["<LOCATION>"] * 3000):
        draws[word_key(release.text)] += 1
    near = sum(draws[w] for w in ("<LOCATION>", "place", "city", "country"))
    far = sum(draws[w] for w in ("cat", "tax"))
    assert near > 2 * far  # perturbed like a word: its own neighbourhood first, but every entry possible
    assert len(draws) > 5


@pytest.mark.parametrize("epsilon", [5.0, 15.0, 40.0])
def test_emp_never_writes_a_bare_angle_bracket(epsilon: float) -> None:
    """Whatever it reads (placeholders, bare "<" and ">"), emp writes angle brackets only as whole
    placeholders: the marks it may write hold none."""
    from textveil.embeddings.default_model import load_embeddings

    texts = [SCREENED, "if a < b and c > d then <3 <PERSON>", "<<LOCATION>> and <ORGANIZATION>!"] * 40
    releases = EarthMoversPrivacy(epsilon, embeddings=load_embeddings(), seed=3, placeholders=True).sanitize_many(texts)
    assert not [r.text for r in releases if _bare_angles(r.text)]
    if epsilon == 40.0:
        assert sum("<PERSON>" in r.text for r in releases) > 60  # at 40 the placeholder mostly survives


def test_emp_in_the_keep_layout_neither_copies_a_placeholders_capitals_nor_gives_them(toy_word_embeddings) -> None:
    known = _placing(toy_word_embeddings)
    release = EarthMoversPrivacy(1e6, embeddings=known, layout="keep", seed=0, placeholders=True).sanitize(
        "the market rose <PERSON>")
    assert release.text == "the market rose <PERSON>"
    small = EarthMoversPrivacy(0.01, embeddings=known, layout="keep", seed=0, placeholders=True)
    for released in small.sanitize_many(["<PERSON>"] * 50):
        assert released.text == released.text.lower() or released.text.startswith("<")


# -- SynTF and Random-R ---------------------------------------------------------------------


def test_syntf_gives_a_placeholder_no_content_rating(toy_word_embeddings) -> None:
    toy_word_embeddings = _placing(toy_word_embeddings)
    syntf = SynTF(1000.0, toy_word_embeddings, seed=0, placeholders=True)
    document = ["<ORGANIZATION>"] * 6 + ["bank", "bank", "market"]
    ratings = syntf.ratings(document)
    rows = [syntf.vocabulary.index_of(p) for p in placeholders()]
    assert ratings[rows].max() == 0.0 and ratings.max() == 1.0
    words = set(syntf.sanitize(" ".join(document)).text.lower().replace(".", "").split())
    assert words <= {"bank", "market"}, words
    similarity = SynTF(1000.0, toy_word_embeddings, rating="similarity", seed=0, placeholders=True)
    assert np.allclose(similarity.ratings(document), similarity.ratings(["bank", "bank", "market"]))


def test_random_replacement_draws_placeholders_like_any_entry(toy_word_embeddings) -> None:
    known = _placing(toy_word_embeddings)
    releases = RandomReplacement(known, seed=0, placeholders=True).sanitize_many(["a b c d e f g h"] * 400)
    written = Counter(unit for r in releases for unit in release_units(r.text))
    share = sum(written[p] for p in placeholders()) / sum(written.values())
    entries = len(RandomReplacement(known, placeholders=True).vocabulary)
    assert share == pytest.approx(len(placeholders()) / entries, abs=0.02)
    alone = RandomReplacement(known, seed=0).sanitize_many(["a b c d e f g h"] * 400)  # no stage: none
    assert not any(unit.startswith("<") for r in alone for unit in release_units(r.text))


# -- the statement in every Guarantee ---------------------------------------------------------


@pytest.mark.parametrize("name", ["emp", "syntf", "random", "redact", "pivot", "erae", "aedp", "synth", "translate",
                                  "paraphrase", "restyle"])
def test_every_mechanism_states_its_rule_for_placeholders(name: str) -> None:
    rule = mechanism_class(name).placeholder_rule
    assert rule and "placeholder" in rule


def test_a_staged_release_states_the_mechanisms_rule_and_the_casing_channel(toy_word_embeddings) -> None:
    skip_without_entity_stage()
    import textveil

    for name, parameters in (("emp", {"epsilon": 20}), ("syntf", {"epsilon": 5}), ("random", {})):
        release = textveil.mechanism(name, embeddings=toy_word_embeddings, seed=0, **parameters).sanitize(
            "Margaret Okafor flew to Chicago on Monday.")
        statement = release.guarantee.entity_stage
        assert mechanism_class(name).placeholder_rule in statement, name
        assert "casing" in statement and release.guarantee.entity_stage in release.guarantee.statement


# -- the language-model mechanisms -------------------------------------------------------------


def test_a_prompt_keeps_placeholders_whole_and_asks_to_keep_them(tiny_language_model) -> None:
    from textveil.mechanisms.paraphrase import Paraphrase
    from textveil.mechanisms.prompting import PLACEHOLDER_NOTE

    lm = tiny_language_model
    mechanism = Paraphrase(30.0, language_model=lm, max_input_tokens=18, seed=0)
    text = "one two three four <ORGANIZATION> five six"
    cut = lm.decode(lm.encode(text)[:18])
    assert "<" in cut and not re.search(r"<ORGANIZATION>", cut)  # a plain token cut would split it
    units = mechanism.units(text)
    assert len(units) > 1 and " ".join(units) == text  # cut into units between words, never inside one
    for unit in units:
        prompt = lm.decode(mechanism.prompt_ids(unit))
        assert ("<ORGANIZATION>" in unit) == (PLACEHOLDER_NOTE.format(listed="<ORGANIZATION>") in prompt)
        assert "<" not in unit.replace("<ORGANIZATION>", "")
    whole = lm.decode(Paraphrase(30.0, language_model=lm, max_input_tokens=200, seed=0).prompt_ids(text))
    assert "<ORGANIZATION> five six" in whole and PLACEHOLDER_NOTE.format(listed="<ORGANIZATION>") in whole
    assert "(Keep" not in lm.decode(mechanism.prompt_ids("no names here"))


def test_a_public_vocabulary_can_write_every_placeholder(tiny_language_model, tmp_path, monkeypatch) -> None:
    from textveil.mechanisms.output_vocabulary import output_vocabulary

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path))
    allowed = set(output_vocabulary(tiny_language_model, "256").ids)
    for token in placeholders():
        assert set(tiny_language_model.encode(" " + token)) <= allowed, token


# -- the translation --------------------------------------------------------------------------


def test_the_translation_leaves_placeholders_untranslated() -> None:
    from textveil.mechanisms.translation import IterativeTranslation, translation_unavailable

    reason = translation_unavailable()
    if reason is not None:
        pytest.skip(f"the translate mechanism cannot run here, so its placeholder rule is untested: {reason}")
    released = IterativeTranslation().sanitize("I met <PERSON> in <LOCATION> at <ORGANIZATION> today.").text
    assert re.findall(r"<\w+>", released) == ["<PERSON>", "<LOCATION>", "<ORGANIZATION>"], released


# -- on real articles -------------------------------------------------------------------------


@pytest.mark.data
def test_on_c50_syntf_releases_the_articles_top_words_and_emp_no_bare_bracket() -> None:
    """A C50 article through the entity stage: SynTF at epsilon 1000 writes the article's own top
    words, never a placeholder (it wrote "Organization organization ..." when the placeholder was
    three tokens); emp at 15 writes no bare "<" or ">"."""
    skip_without_entity_stage()
    import textveil

    folder = require_shared_data("reuters_c50", "C50train")
    articles = [path.read_text(encoding="utf-8", errors="replace") for path in sorted(folder.glob("*/*.txt"))[:400:40]]
    syntf = textveil.mechanism("syntf", epsilon=1000, seed=0)
    emp = textveil.mechanism("emp", epsilon=15, seed=0)
    for article, syntf_release, emp_release in zip(articles, syntf.sanitize_many(articles),
                                                   emp.sanitize_many(articles)):
        assert emp_release.entities or syntf_release.entities  # the stage replaced something
        written = Counter(word_key(w) for w in find_words(syntf_release.text))
        assert not any(key.startswith("<") for key in written), written.most_common(3)
        article_words = Counter(word_key(w) for w in find_words(article))
        assert all(article_words[key] > 0 for key in written), written.most_common(3)
        assert not _bare_angles(emp_release.text)


# -- only where a stage may write them, and where the space can place them (issue 48) ----------

ONE_DIMENSION = "a 0.0\nb 1.0\n"
"""Paper 001's one-dimensional check: ``a`` at 0, ``b`` at 1."""
RELEASED_WORDS = 4000


def _one_dimension_release(tmp_path, epsilon: float, operator: str):
    """``a`` x 4,000 released by emp from the two-word vectors file, through the public API."""
    import textveil
    from textveil.pii import EntityOptions

    path = tmp_path / "two.txt"
    path.write_text(ONE_DIMENSION, encoding="utf-8")
    mechanism = textveil.mechanism("emp", entities=EntityOptions(operator=operator),
                                   embeddings=textveil.read_embeddings(path), epsilon=epsilon, oov="keep", seed=48)
    assert mechanism.vocabulary.words == ["a", "b"]  # the user's vocabulary, untouched
    return mechanism.sanitize(" ".join(["a"] * RELEASED_WORDS))


def _check_laplace_share(release, epsilon: float) -> None:
    """Only ``a`` and ``b`` are released, and ``b`` as often as the 1-d Laplace mechanism says:
    ``a`` (at 0) is released as ``b`` (at 1) when the noise, Laplace of scale 1/epsilon,
    exceeds 0.5: P = 0.5 exp(-epsilon / 2). 4,000 draws reject a wrong rule (0.5 exp(-epsilon))."""
    from scipy.stats import binomtest

    counts = Counter(word_key(w) for w in find_words(release.text))
    assert set(counts) <= {"a", "b"} and sum(counts.values()) == RELEASED_WORDS, counts.most_common(4)
    assert "<" not in release.text and release.guarantee.words_protected == RELEASED_WORDS
    expected = 0.5 * np.exp(-epsilon / 2)
    assert binomtest(counts["b"], RELEASED_WORDS, expected).pvalue > 0.001, (counts["b"] / RELEASED_WORDS, expected)
    assert binomtest(counts["b"], RELEASED_WORDS, 0.5 * np.exp(-epsilon)).pvalue < 1e-6  # the test has power


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_emp_with_the_stage_off_is_the_one_dimensional_laplace_mechanism(tmp_path, epsilon: float) -> None:
    """With ``--entities off`` no placeholder joins the vocabulary: 282 of 2,000 released words
    were ``<PERSON>`` when all 13 placeholders sat at the table's mean (0.5) beside ``a`` and ``b``."""
    _check_laplace_share(_one_dimension_release(tmp_path, epsilon, "off"), epsilon)


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_emp_with_the_stage_on_is_the_same_mechanism_in_a_space_that_cannot_place_a_placeholder(
        tmp_path, epsilon: float) -> None:
    """The stage on: the two-word space knows no describing word, so no placeholder is an entry;
    the text holds no entity, so the release is the one with the stage off (same seed)."""
    skip_without_entity_stage()
    release = _one_dimension_release(tmp_path, epsilon, "placeholder")
    _check_laplace_share(release, epsilon)
    assert not release.entities
    assert release.text == _one_dimension_release(tmp_path, epsilon, "off").text


def test_a_mechanism_alone_or_after_a_stage_that_writes_none_releases_from_the_users_words(toy_word_embeddings) -> None:
    from textveil.pii.stage import EntityOptions
    from textveil.pii.staged import with_entity_stage

    known = _placing(toy_word_embeddings)
    for mechanism in (EarthMoversPrivacy(20.0, known, layout="keep"), SynTF(5.0, known, layout="keep"),
                      RandomReplacement(known, layout="keep"), EarthMoversPrivacy(20.0, known)):
        alone = with_entity_stage(mechanism, EntityOptions(operator="off"))
        assert alone is mechanism and not mechanism.placeholders
        users = known if mechanism.layout == "keep" else known.with_marks(PUBLIC_MARKS)
        assert mechanism.vocabulary.words == users.words, mechanism.name
        assert not any(w.startswith("<") for w in mechanism.vocabulary.words)


@pytest.mark.parametrize("operator", ["placeholder", "pseudonym", "drop"])
def test_a_stage_that_may_write_placeholders_adds_them_and_the_release_is_another(toy_word_embeddings,
                                                                                  operator: str) -> None:
    skip_without_entity_stage()
    from textveil.pii.stage import EntityOptions
    from textveil.pii.staged import with_entity_stage, writes_placeholders
    from textveil.privacy.secrets import Secret

    known = _placing(toy_word_embeddings)
    options = EntityOptions(operator=operator, key=Secret(b"k") if operator == "pseudonym" else None)
    alone = EarthMoversPrivacy(20.0, known, seed=0)
    staged = with_entity_stage(EarthMoversPrivacy(20.0, known, seed=0), options)
    writes = writes_placeholders(options)
    assert writes == (operator != "drop") and staged.placeholders == writes
    assert [w for w in staged.vocabulary.words if w.startswith("<")] == (placeholders() if writes else [])
    assert staged.with_params(epsilon=10.0).placeholders == writes  # a copy keeps it
    assert staged.mechanism.with_params(seed=3).placeholders == writes
    # The vocabulary is part of the fingerprint: cached releases of the two never mix.
    assert (staged.fingerprint()["vocabulary"] != alone.fingerprint()["vocabulary"]) == writes


def test_syntf_keeps_one_idf_for_every_vocabulary_it_may_release_from(toy_word_embeddings) -> None:
    """Fitted alone (as ``textveil train`` fits it) or after a stage, SynTF learns one idf over
    the words, placeholders and marks, and each vocabulary reads its own entries' values."""
    known = _placing(toy_word_embeddings)
    texts = ["the bank said rates rose.", "the city market fell!", "gold and oil, said reuters"]
    alone = SynTF(5.0, known, seed=0).fit(texts)
    staged = SynTF(5.0, known, seed=0, placeholders=True).fit(texts)
    assert np.array_equal(alone.idf_, staged.idf_)
    for layout in ("public", "keep"):
        for fitted in (True, False):
            one = alone.with_params(layout=layout) if fitted else SynTF(5.0, known, layout=layout)
            other = (staged.with_params(layout=layout) if fitted
                     else SynTF(5.0, known, layout=layout, placeholders=True))
            assert len(one.idf) == len(one.vocabulary) and len(other.idf) == len(other.vocabulary)
            assert len(other.vocabulary) == len(one.vocabulary) + len(placeholders())
            by_word = dict(zip(other.vocabulary.words, other.idf))
            assert all(by_word[w] == v for w, v in zip(one.vocabulary.words, one.idf)), (layout, fitted)
