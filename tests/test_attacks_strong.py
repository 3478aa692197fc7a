"""The strongest attacks of the authorship literature and the floor beside them: character 4-
and 5-grams, typed character n-grams (Sapkota et al. 2015), an ensemble of attacks, and an
attack on text lengths alone."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer

from conftest import require_shared_data
from textveil.attacks.base import evaluate_attack
from textveil.attacks.ensemble import DEFAULT_MEMBERS, EnsembleAttack, standardise_rows
from textveil.attacks.length import LengthAttack, token_counts
from textveil.registry import Entry
from textveil.attacks.registry import ATTACKS, STYLOMETRIC_CLASSIFIERS, attack_names, make_attack
from textveil.attacks.typed_ngrams import CATEGORIES, TypedCharNgrams, category, character_classes
from textveil.corpus.labelled import read_labelled_corpus
from textveil.errors import InvalidParameterError

# --------------------------------------------------------------------------------------
# Typed character n-grams
# --------------------------------------------------------------------------------------

# Sapkota et al.'s running example (their Table 1).
EXAMPLE = "The actors wanted to see if the pact seemed like an old-fashioned one."


def test_typed_ngrams_of_the_papers_example() -> None:
    grams = TypedCharNgrams(3)(EXAMPLE)
    by_category: dict[str, list[str]] = {}
    for gram in grams:
        name, text = gram.split(":", 1)
        by_category.setdefault(name, []).append(text)
    assert set(by_category) == set(CATEGORIES)  # the example shows every category
    assert by_category == {  # in order of appearance
        "prefix": ["act", "wan", "pac", "see", "lik", "fas"],  # words of 4 letters or more
        "suffix": ["ors", "ted", "act", "med", "ike", "ned"],
        "space-prefix": [" ac", " wa", " to", " se", " if", " th", " pa", " se", " li", " an", " ol", " on"],
        "space-suffix": ["he ", "rs ", "ed ", "to ", "ee ", "if ", "he ", "ct ", "ed ", "ke ", "an ", "ed "],
        "whole-word": ["The", "see", "the", "old", "one"],  # "to", "if", "an" are too short
        "mid-word": ["cto", "tor", "ant", "nte", "eem", "eme", "ash", "shi", "hio", "ion", "one"],
        "multi-word": ["e a", "s w", "d t", "o s", "e i", "f t", "e p", "t s", "d l", "e a", "n o", "d o"],
        "beg-punct": ["-fa"],
        "mid-punct": ["d-f"],
        "end-punct": ["ld-", "ne."],
    }
    # the types only label the n-grams: untyped, they are scikit-learn's character 3-grams
    plain = CountVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=False).build_analyzer()(EXAMPLE)
    assert [gram.split(":", 1)[1] for gram in grams] == plain


def test_typed_ngrams_tell_a_word_from_its_inside() -> None:
    counts = Counter(TypedCharNgrams(3)("the other then"))
    assert counts["whole-word:the"] == 1 and counts["mid-word:the"] == 1 and counts["prefix:the"] == 1
    assert category("swwws") == "whole-word" and category("wwwww") == "mid-word"
    # letters and digits of any script make words; underscores and symbols are punctuation
    assert character_classes("naïve_2 €5\t") == "wwwwwpwspws"
    # punctuation decides before spaces do
    assert TypedCharNgrams(3)("a (b) c") == ["end-punct:a (", "mid-punct: (b", "beg-punct:(b)",
                                              "mid-punct:b) ", "beg-punct:) c"]
    four = TypedCharNgrams(4)("unkind")
    assert four == ["prefix:unki", "mid-word:nkin", "suffix:kind"]


def test_typed_analyzer_fits_in_scikit_learn() -> None:
    vectoriser = CountVectorizer(analyzer=TypedCharNgrams(3)).fit(["one two", "two three"])
    again = pickle.loads(pickle.dumps(vectoriser))
    assert "whole-word:two" in again.vocabulary_ and "whole-word:one" in again.vocabulary_
    assert (again.transform(["two"]).toarray() == vectoriser.transform(["two"]).toarray()).all()
    assert repr(TypedCharNgrams(4)) == "TypedCharNgrams(4)"


# --------------------------------------------------------------------------------------
# Character 4-/5-grams and typed n-grams as attacks
# --------------------------------------------------------------------------------------

SHARED_WORDS = "the market said on a of in to and it rose fell shares year company bank".split()
# Each author spells a few shared words their own way and has a punctuation habit; every
# other word is drawn from the same shared vocabulary.
SPELLINGS = {
    "uk": ({"colour": "colour", "organise": "organise", "centre": "centre"}, "."),
    "us": ({"colour": "color", "organise": "organize", "centre": "center"}, "."),
    "dash": ({"colour": "colour", "organise": "organise", "centre": "centre"}, " --"),
    "ellipsis": ({"colour": "color", "organise": "organize", "centre": "center"}, "..."),
}


def spelling_corpus(per_author: int, seed: int, rate: float = 0.3) -> tuple[list[str], list[str]]:
    """Five sentences per text, of 4 to 8 words each (so lengths overlap across authors)."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for author, (spelling, end) in SPELLINGS.items():
        own = list(spelling.values())
        for _ in range(per_author):
            sentences = []
            for _ in range(5):
                words = [str(rng.choice(own)) if rng.random() < rate else str(rng.choice(SHARED_WORDS))
                         for _ in range(int(rng.integers(4, 9)))]
                sentences.append(" ".join(words).capitalize() + end)
            texts.append(" ".join(sentences))
            labels.append(author)
    return texts, labels


@pytest.fixture(scope="module")
def spelling() -> tuple[list[str], list[str], list[str], list[str]]:
    return (*spelling_corpus(12, seed=1), *spelling_corpus(10, seed=2))


@pytest.mark.parametrize("name", [f"{f}-{c}" for f in ("char4", "char5", "typed") for c in STYLOMETRIC_CLASSIFIERS])
def test_new_feature_sets_find_spelling_and_punctuation(spelling, name: str) -> None:
    known_texts, known_labels, unknown_texts, unknown_labels = spelling
    result = evaluate_attack(make_attack(name), known_texts, known_labels, unknown_texts, unknown_labels, top_k=2)
    assert result.top1 >= 0.8, result  # chance is 0.25
    assert result.n_candidates == 4


# --------------------------------------------------------------------------------------
# Length attack
# --------------------------------------------------------------------------------------

def length_corpus(lengths: dict[str, tuple[float, int]], seed: int) -> tuple[list[str], list[str]]:
    """Texts of shared words whose token counts are log-normal around each author's median."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for author, (median, count) in lengths.items():
        for _ in range(count):
            n = max(1, int(round(median * np.exp(0.25 * rng.standard_normal()))))
            texts.append(" ".join(rng.choice(SHARED_WORDS, size=n)) + ".")
            labels.append(author)
    return texts, labels


def test_token_counts_see_words_and_marks_never_spaces() -> None:
    assert token_counts(["Don't panic, Mr. O'Neil!"]).tolist() == [7]  # 4 words and 3 marks
    assert token_counts(["a  b\n\tc", "a b c", " ", "👍🏽 ok :)"]).tolist() == [3, 3, 0, 5]


def test_length_attack_finds_authors_who_differ_in_length() -> None:
    medians = {"terse": (5.0, 30), "plain": (20.0, 30), "verbose": (80.0, 30)}
    known = length_corpus(medians, seed=1)
    unknown = length_corpus({k: (m, 15) for k, (m, _) in medians.items()}, seed=2)
    attack = make_attack("length")
    result = evaluate_attack(attack, *known, *unknown)
    assert result.top1 >= 0.85, result  # chance is 1/3
    collapsed = evaluate_attack(attack, *known, *unknown, collapse_per_label=True, fit=False)
    assert collapsed.top1 == 1.0, collapsed


def test_length_attack_is_at_chance_when_lengths_are_alike() -> None:
    authors = {f"a{i}": (20.0, 40) for i in range(5)}
    known = length_corpus(authors, seed=3)
    unknown = length_corpus({k: (m, 60) for k, (m, _) in authors.items()}, seed=4)
    result = evaluate_attack(LengthAttack(), *known, *unknown)
    spread = np.sqrt(0.2 * 0.8 / result.n_unknown)  # binomial standard deviation at chance
    assert abs(result.top1 - 0.2) < 3 * spread, result


def test_group_size_ranks_authors_by_their_share_of_texts() -> None:
    """Lengths alike, but one author wrote 60% of the known texts and another 10%: the
    sizes of the unknown groups point to them, and only through the texts-per-author term."""
    shares = {"most": 60, "some": 30, "few": 10}
    known = length_corpus({k: (20.0, n) for k, n in shares.items()}, seed=5)
    unknown = length_corpus({k: (20.0, n // 2) for k, n in shares.items()}, seed=6)
    with_size = evaluate_attack(LengthAttack(), *known, *unknown, collapse_per_label=True)
    without = evaluate_attack(LengthAttack(group_size=False), *known, *unknown, collapse_per_label=True)
    assert with_size.top1 == 1.0 and without.top1 < 1.0
    # a group of one text scores as that text, bar the size term
    attack = LengthAttack(group_size=False).fit(*known)
    np.testing.assert_allclose(attack.group_scores(unknown[0], [[4]]), attack.scores([unknown[0][4]]))


# --------------------------------------------------------------------------------------
# Ensemble
# --------------------------------------------------------------------------------------

def test_standardise_rows_puts_every_member_on_one_scale() -> None:
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((6, 5))
    z = standardise_rows(scores)
    np.testing.assert_allclose(z.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=1), 1.0)
    # a positive scale and shift per row (another member's units) changes nothing
    np.testing.assert_allclose(standardise_rows(scores * rng.uniform(1, 1000, (6, 1)) + 7.0), z)
    assert not standardise_rows(np.full((2, 3), 4.0)).any()  # no preference stays no preference


class ReversedLength(LengthAttack):
    """A member that lists its candidates in reverse and judges groups by joined texts."""

    name = "reversed-length"
    group_scores = None  # type: ignore[assignment]

    def fit(self, texts, labels):  # type: ignore[no-untyped-def]
        super().fit(texts, labels)
        self.classes_ = self.classes_[::-1]
        return self

    def scores(self, texts):  # type: ignore[no-untyped-def]
        return super().scores(texts)[:, ::-1]


def test_ensemble_aligns_members_and_weighs_their_scales(spelling, monkeypatch) -> None:
    monkeypatch.setitem(ATTACKS._entries, "reversed-length", Entry("reversed-length", f"{__name__}:ReversedLength",
                                                                   "test member"))
    known_texts, known_labels, unknown_texts, _ = spelling
    ensemble = EnsembleAttack(["length", "reversed-length"]).fit(known_texts, known_labels)
    length = ensemble.attacks_[0]
    # the same judgement in columns of another order: the mean is that judgement, standardised
    np.testing.assert_allclose(ensemble.scores(unknown_texts), standardise_rows(length.scores(unknown_texts)))
    # a member without group_scores is judged on each group's joined texts
    members = [[0, 1, 2], [3]]
    grouped = ensemble.group_scores(unknown_texts, members)
    joined = standardise_rows(length.scores(["\n".join(unknown_texts[i] for i in g) for g in members]))
    own = standardise_rows(length.group_scores(unknown_texts, members))
    np.testing.assert_allclose(grouped, (joined + own) / 2)
    # weights: all on one member is that member alone
    alone = EnsembleAttack(["char3-svm", "length"], weights=[1, 0]).fit(known_texts, known_labels)
    np.testing.assert_allclose(alone.scores(unknown_texts), standardise_rows(alone.attacks_[0].scores(unknown_texts)))


def test_ensemble_beats_its_weak_member(spelling) -> None:
    known_texts, known_labels, unknown_texts, unknown_labels = spelling
    # lengths say little here (only the marks add tokens); they must not drown the n-grams
    ensemble = make_attack("ensemble", shared={"random_state": 3}, members=["char4-svm", "typed-nb", "length"])
    result = evaluate_attack(ensemble, known_texts, known_labels, unknown_texts, unknown_labels)
    weak = evaluate_attack(LengthAttack(), known_texts, known_labels, unknown_texts, unknown_labels)
    assert result.top1 >= 0.8 and result.top1 > weak.top1 + 0.3, (result, weak)
    assert result.attack == "ensemble" and ensemble.classes_ == sorted(SPELLINGS)
    assert [m.random_state for m in ensemble.attacks_[:2]] == [3, 3]  # the seed reaches the members
    collapsed = evaluate_attack(ensemble, known_texts, known_labels, unknown_texts, unknown_labels,
                                collapse_per_label=True, fit=False)
    assert collapsed.top1 == 1.0, collapsed


# --------------------------------------------------------------------------------------
# Registry and parameters
# --------------------------------------------------------------------------------------

PAPER_004 = [f"{f}-{c}" for f in ("word1", "word2", "char1", "char2", "char3", "writeprints")
             for c in ("svm", "nb", "knn", "rls")]


def test_registry_lists_the_new_attacks() -> None:
    names = attack_names()
    assert set(PAPER_004) <= set(names)  # paper 004's 24 attacks keep their names
    new = [f"{f}-{c}" for f in ("char4", "char5", "typed") for c in STYLOMETRIC_CLASSIFIERS] + ["length", "ensemble"]
    assert set(new) <= set(names)
    for name in new:
        attack = make_attack(name, shared={"random_state": 1, "embeddings": None})
        assert attack.name == name
    assert set(DEFAULT_MEMBERS) <= set(names)


def test_bad_parameters_are_explained() -> None:
    with pytest.raises(InvalidParameterError, match="at least 3"):
        TypedCharNgrams(2)
    with pytest.raises(InvalidParameterError, match="var_smoothing"):
        LengthAttack(var_smoothing=0)
    with pytest.raises(InvalidParameterError, match="two authors"):
        LengthAttack().fit(["a b", "c d e"], ["x", "x"])
    with pytest.raises(InvalidParameterError, match="labels"):
        LengthAttack().fit(["a b", "c d e"], ["x"])
    with pytest.raises(InvalidParameterError, match="not fitted"):
        LengthAttack().scores(["a"])
    with pytest.raises(InvalidParameterError, match="at least one member"):
        EnsembleAttack([])
    with pytest.raises(InvalidParameterError, match="word9-svm"):
        EnsembleAttack(["char3-svm", "word9-svm"])
    with pytest.raises(InvalidParameterError, match="itself"):
        EnsembleAttack(["ensemble"])
    with pytest.raises(InvalidParameterError, match="one non-negative weight per member"):
        EnsembleAttack(["char3-svm", "length"], weights=[1.0])
    with pytest.raises(InvalidParameterError, match="one non-negative weight per member"):
        EnsembleAttack(["char3-svm", "length"], weights=[1.0, -1.0])
    with pytest.raises(InvalidParameterError, match="not fitted"):
        EnsembleAttack().scores(["a"])


# --------------------------------------------------------------------------------------
# Real data (skipped without ../shared/data)
# --------------------------------------------------------------------------------------

@pytest.mark.data
def test_c50_ten_authors_strong_attacks_and_the_floor() -> None:
    """Ten C50 authors (50 known and 50 unknown stories each): the n-gram attacks find most
    authors, their ensemble at least as many as its weakest member, lengths few."""
    root = require_shared_data("reuters_c50")
    authors = sorted(p.name for p in (root / "C50train").iterdir() if p.is_dir())[:10]
    known = read_labelled_corpus(root / "C50train")
    unknown = read_labelled_corpus(root / "C50test")
    known = known.subset([i for i, label in enumerate(known.labels) if label in authors])
    unknown = unknown.subset([i for i, label in enumerate(unknown.labels) if label in authors])
    ensemble = EnsembleAttack(["typed-svm", "char4-svm", "word1-svm"])
    results = {"ensemble": evaluate_attack(ensemble, known.texts, known.labels, unknown.texts, unknown.labels)}
    for member in ensemble.attacks_:  # each member alone, as the ensemble fitted it
        results[member.name] = evaluate_attack(member, known.texts, known.labels, unknown.texts, unknown.labels,
                                               fit=False)
    results["length"] = evaluate_attack(LengthAttack(), known.texts, known.labels, unknown.texts, unknown.labels)
    assert all(r.n_candidates == 10 and r.n_unknown == 500 for r in results.values())
    # measured: each member 0.93 to 0.94, the ensemble 0.94, lengths 0.14
    assert results["typed-svm"].top1 >= 0.85 and results["char4-svm"].top1 >= 0.85, results
    assert results["ensemble"].top1 >= min(results[name].top1 for name in ("typed-svm", "char4-svm", "word1-svm"))
    assert 0.1 < results["length"].top1 < 0.4, results  # above chance (0.1), far below the rest
    assert max(results.values(), key=lambda result: result.top1).attack != "length"
    # its time is a benchmark's to measure, not a test's: a test under load is not a timing


def test_shape_attack_reads_the_layout_under_random_words() -> None:
    """Authors who differ only in layout habits (casing, punctuation, line breaks), with every
    word drawn at random, as a mechanism that copies the layout releases them: the layout
    skeleton attack finds them, and on the same texts written in one public layout it cannot."""
    from textveil.text.layout import release_units, render_public_layout

    rng = np.random.default_rng(3)
    vocabulary = [f"w{i}" for i in range(300)]
    habits = {"shouter": lambda ws: " ".join(w.upper() for w in ws) + "!!!",
              "lister": lambda ws: "\n".join(f"- {w}" for w in ws),
              "plain": lambda ws: " ".join(ws).capitalize() + ".",
              "commas": lambda ws: ", ".join(ws) + " ..."}

    def texts(per_author: int) -> tuple[list[str], list[str]]:
        made = [(habit(list(rng.choice(vocabulary, 8))), author) for author, habit in habits.items() for _ in range(per_author)]
        return [t for t, _ in made], [a for _, a in made]

    known, known_labels = texts(20)
    unknown, unknown_labels = texts(10)
    kept = evaluate_attack(make_attack("shape-svm"), known, known_labels, unknown, unknown_labels)
    assert kept.top1 == 1.0
    public = [render_public_layout([w for w in release_units(t) if w.isalnum()], {}) for t in unknown]
    public_known = [render_public_layout([w for w in release_units(t) if w.isalnum()], {}) for t in known]
    flattened = evaluate_attack(make_attack("shape-svm"), public_known, known_labels, public, unknown_labels)
    assert flattened.top1 <= 0.5  # chance is 0.25; every text now has one skeleton
