"""The language-model mechanisms through their public API: ``paraphrase`` (epsilon-DP per output
token, DP-Prompt) and ``restyle`` (no guarantee).

The privacy claim is checked where it can be made tight: a toy language model whose logits are set
by hand (:func:`textveil.models.toy_language_model.toy_language_model`) gives two inputs whose
scores differ by the full width w on the token ``w0``, and the likelihood ratio of releasing
``w0`` is estimated from sampled releases. Every statistical check is paired with a power check:
the same check, run on a mechanism with a plausible bug, must fail.
"""

from __future__ import annotations

import functools
import math
import re
import string

import numpy as np
import pytest

from tests.conftest import skip_without_bundled_language_model
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from textveil.errors import InvalidParameterError
from textveil.mechanisms.paraphrase import Paraphrase
from textveil.mechanisms.restyle import Restyle
from textveil.mechanisms.sampling import exponential_mechanism_log_probabilities
from textveil.mechanisms.scores import clipped_logit_scores, score_range

pytest.importorskip("torch", reason="the language-model mechanisms need torch")
pytest.importorskip("transformers", reason="the language-model mechanisms need transformers")

from textveil.models.toy_language_model import toy_language_model  # noqa: E402  (needs transformers)

@pytest.fixture(autouse=True)
def one_thread():
    """torch on one thread in these tests: the toy's and the tiny model's matrices are too small to
    share, and on a busy machine idle threads spinning for work make each step many times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


ALPHA = 0.01  # confidence level of the likelihood-ratio bounds (both sides together)
WORDS = [f"w{i}" for i in range(14)]


@functools.cache
def worst_case_toy():
    """The tight case of the per-token bound: read ``alpha``, the model puts ``w0`` alone on top
    (every other token 30 nats below); read ``beta``, it puts ``w0`` 30 nats below every other
    token. With a relative score of width w < 30, u(w0) moves by the whole w between the two."""
    vocabulary = toy_language_model([*WORDS, "alpha", "beta"]).tokenizer.get_vocab()
    return toy_language_model([*WORDS, "alpha", "beta"],
                              {"alpha": {token: -30.0 for token in vocabulary if token != "w0"},
                               "beta": {"w0": -30.0}})


class WithoutFactorTwo(Paraphrase):
    """A plausible bug: the exponential mechanism without its factor 2 (exp(epsilon * u / w))."""

    @property
    def sensitivity(self) -> float:
        return float(self.width) / 2


class WithoutClip(Paraphrase):
    """A plausible bug: the raw logits as scores (no clip), still claiming sensitivity w."""

    def score_range(self) -> tuple[float, float, bool]:
        return -math.inf, math.inf, False


def _clopper_pearson(hits: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds: each holds with probability at least 1 - alpha."""
    lower = stats.beta.ppf(alpha, hits, trials - hits + 1) if hits > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha, hits + 1, trials - hits) if hits < trials else 1.0
    return float(lower), float(upper)


def likelihood_ratio_lower_bound(mechanism: Paraphrase, n_alpha: int, n_beta: int) -> tuple[float, float]:
    """Pr[w0 | alpha] / Pr[w0 | beta] estimated from one-token releases of the worst-case toy:
    (a lower confidence bound at level 1 - ALPHA, the point estimate).

    The bound is Clopper-Pearson's lower bound of Pr[w0 | alpha] over its upper bound of
    Pr[w0 | beta], each one-sided at ALPHA / 2 (Bonferroni): a mechanism whose true ratio is at
    most exp(epsilon) gives a bound above exp(epsilon) with probability below ALPHA."""
    releases = mechanism.sanitize_many(["alpha"] * n_alpha + ["beta"] * n_beta)
    assert {r.text for r in releases} <= {*WORDS, "alpha", "beta", "system", "user", "assistant", ""}
    hits_alpha = sum(r.text == "w0" for r in releases[:n_alpha])
    hits_beta = sum(r.text == "w0" for r in releases[n_alpha:])
    low_alpha, _ = _clopper_pearson(hits_alpha, n_alpha, ALPHA / 2)
    _, high_beta = _clopper_pearson(hits_beta, n_beta, ALPHA / 2)
    estimate = (hits_alpha / n_alpha) / (hits_beta / n_beta) if hits_beta else math.inf
    return low_alpha / high_beta, estimate


EPSILON, WIDTH = 4.0, 10.0


def _one_token(cls: type = Paraphrase, epsilon: float = EPSILON, **overrides) -> Paraphrase:
    """A one-token paraphrase of the worst-case toy, all texts decoded in one batch."""
    settings_ = dict(language_model=worst_case_toy(), max_new_tokens=1, width=WIDTH, seed=1, batch_size=1 << 16)
    return cls(epsilon, **{**settings_, **overrides})


def test_per_token_likelihood_ratio_is_within_exp_epsilon_and_close_to_tight():
    # 20 candidates: the exact ratio is (1 + 19 e^2) / (1 + 19 e^-2) = exp(0.92 epsilon), and
    # Pr[w0 | beta] is about 1/100, hence four times as many beta releases as alpha ones. The
    # tightness margin (0.75) fails for fewer than 1 seed in 1000 (simulated).
    lower, estimate = likelihood_ratio_lower_bound(_one_token(), n_alpha=3_200, n_beta=12_800)
    assert lower <= math.exp(EPSILON), f"ratio {estimate:.1f} exceeds exp({EPSILON}) beyond sampling error"
    assert lower > math.exp(0.75 * EPSILON), f"ratio {estimate:.1f} is far below the bound exp({EPSILON})"


@pytest.mark.parametrize("broken", [WithoutFactorTwo, WithoutClip], ids=["without-factor-2", "without-clip"])
def test_the_likelihood_ratio_check_catches_a_broken_mechanism(broken):
    # their true ratios are exp(1.8 epsilon) and exp(2.9 epsilon): fewer releases show it
    lower, estimate = likelihood_ratio_lower_bound(_one_token(broken), n_alpha=800, n_beta=2_400)
    assert lower > math.exp(EPSILON), f"{broken.__name__}: ratio {estimate:.1f} was not caught"


# -- the scores, exactly ----------------------------------------------------------------

LOGITS = st.integers(2, 40).flatmap(lambda n: st.tuples(
    *[arrays(np.float64, n, elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False))] * 2))


@settings(max_examples=150, deadline=None)
@given(logits=LOGITS, width=st.floats(0.01, 100.0), high=st.floats(-100.0, 100.0))
def test_both_scores_lie_in_an_interval_of_width_w_for_any_logits(logits, width, high):
    for row in logits:
        relative = clipped_logit_scores(row[None, :], *score_range("relative", width))
        assert relative.shape == (1, row.size) and relative.max() == 0.0 and relative.min() >= -width
        clipped = clipped_logit_scores(row[None, :], *score_range("clipped", width, clip_high=high))
        assert clipped.min() >= high - width - 1e-9 and clipped.max() <= high + 1e-9


@settings(max_examples=150, deadline=None)
@given(logits=LOGITS, epsilon=st.floats(0.01, 50.0), width=st.floats(0.1, 60.0), high=st.floats(-50.0, 50.0),
       score=st.sampled_from(["relative", "clipped"]))
def test_per_step_log_probabilities_of_any_two_inputs_differ_by_at_most_epsilon(logits, epsilon, width, high, score):
    mechanism = _one_token(epsilon=epsilon, width=width, clip_high=high, score=score)
    x, y = (exponential_mechanism_log_probabilities(mechanism.scores(row[None, :]), epsilon, mechanism.sensitivity)
            for row in logits)
    assert np.max(np.abs(x - y)) <= epsilon * (1 + 1e-9) + 1e-9


def test_the_exact_check_catches_the_broken_scores():
    """Power of the exact check: the worst case's own logits break it for both plausible bugs."""
    x, y = np.array([[0.0, -30.0, -30.0]]), np.array([[-30.0, 0.0, 0.0]])
    for broken in (WithoutFactorTwo, WithoutClip):
        mechanism = _one_token(broken)
        gap = np.max(np.abs(exponential_mechanism_log_probabilities(mechanism.scores(x), EPSILON, mechanism.sensitivity)
                            - exponential_mechanism_log_probabilities(mechanism.scores(y), EPSILON,
                                                                      mechanism.sensitivity)))
        assert gap > EPSILON + 0.1, broken.__name__


# -- the end token and the length -------------------------------------------------------


def test_the_end_token_is_drawn_by_the_mechanism_and_the_length_is_capped():
    """Every control token the template reads raises the end token's logit, every other logit
    stays 0 (drawn tokens add nothing), so each step ends the reply with the same probability p,
    given by the exponential mechanism over the first step's logits: the lengths follow a
    geometric law cut at L."""
    import torch

    toy = toy_language_model(WORDS[:10], {"<|im_start|>": {"<|im_end|>": 1.5}})
    limit, count = 5, 3_000
    mechanism = Paraphrase(8.0, language_model=toy, max_new_tokens=limit, width=10.0, seed=4, batch_size=4096)
    text = "w3 w4 w5"
    with torch.inference_mode():
        logits = toy.network(input_ids=torch.tensor([mechanism.prompt_ids(text)])).logits[0, -1].numpy()
    excluded = set(toy.special_token_ids) - set(toy.end_token_ids)
    candidates = [i for i in range(toy.vocabulary_size) if i not in excluded]
    end = candidates.index(toy.end_token_ids[0])

    def length_law(epsilon: float) -> np.ndarray:
        """Pr[length = k], k = 0 .. L, when each step draws the end token with the mechanism's probability."""
        log_p = exponential_mechanism_log_probabilities(mechanism.scores(logits[None, candidates]), epsilon,
                                                        mechanism.sensitivity)
        p_end = float(np.exp(log_p[0, end]))
        return np.array([(1 - p_end) ** k * p_end for k in range(limit)] + [(1 - p_end) ** limit])

    law = length_law(8.0)
    assert 0.2 < law[0] < 0.5 and law[-1] > 0.05  # the setting makes empty and full-length replies common

    lengths = np.array([len(r.text.split()) for r in mechanism.sanitize_many([text] * count)])
    assert lengths.max() <= limit
    observed = np.bincount(lengths, minlength=limit + 1)
    assert (observed > 0).all()  # every length from 0 to L appears
    assert stats.chisquare(observed, law * count).pvalue > 1e-3
    # power: an end token drawn at a rate off by the factor 2 (epsilon doubled) is rejected
    assert stats.chisquare(observed, length_law(16.0) * count).pvalue < 1e-3


# -- seeds and batching -----------------------------------------------------------------

TEXTS = ["The market rallied on Friday.", "Oil prices fell in London; the bank said so.", "",
         "We knit a scarf with soft wool.", "The report is due next week."]


def test_sanitize_records_equals_each_text_released_alone_with_its_seed(tiny_language_model):
    mechanism = Paraphrase(30.0, language_model=tiny_language_model, max_new_tokens=4, seed=3)
    seeds = [5, 6, 7, 5, 11]
    records = [r.text for r in mechanism.sanitize_records(TEXTS, seeds)]
    assert records == [mechanism.with_params(seed=s).sanitize(t).text for t, s in zip(TEXTS, seeds)]
    assert records[2] == "" and sum(bool(r) for r in records) >= 3
    assert records != [r.text for r in mechanism.sanitize_records(TEXTS, [s + 100 for s in seeds])]


def test_releases_do_not_depend_on_batch_size(tiny_language_model):
    texts = TEXTS * 2
    releases = [[r.text for r in Paraphrase(30.0, language_model=tiny_language_model, max_new_tokens=4, seed=8,
                                            batch_size=size).sanitize_many(texts)] for size in (1, 3, 64)]
    assert releases[0] == releases[1] == releases[2]
    assert len(set(releases[0])) > 3  # the texts got releases of their own


def test_a_release_is_the_same_drawn_on_the_host_or_where_the_logits_lie(tiny_language_model, monkeypatch):
    """The mechanisms hand their logits to the sampler's one draw per kind, which draws a tensor
    where it lies (an accelerator's path, forced here onto the CPU) or on the host: the same
    releases, token for token, for both scores and for restyle."""
    from textveil.mechanisms import sampling
    from textveil.models.device import is_torch_tensor

    seeded = dict(language_model=tiny_language_model, max_new_tokens=6, seed=12)
    mechanisms = [Paraphrase(30.0, **seeded), Paraphrase(30.0, score="clipped", clip_high=6.0, **seeded),
                  Restyle(temperature=1.0, **seeded)]
    on_host = [[r.text for r in m.with_params().sanitize_many(TEXTS)] for m in mechanisms]
    monkeypatch.setattr(sampling, "on_accelerator", is_torch_tensor)
    where_they_lie = [[r.text for r in m.with_params().sanitize_many(TEXTS)] for m in mechanisms]
    assert on_host == where_they_lie and sum(bool(t) for texts in on_host for t in texts) >= 9


# -- the Guarantee ----------------------------------------------------------------------


def test_paraphrase_guarantee_states_the_bound_and_what_it_rests_on():
    epsilon, limit, width = 2.5, 7, 12.5
    toy = toy_language_model(WORDS)
    mechanism = Paraphrase(epsilon, language_model=toy, max_new_tokens=limit, width=width, seed=1)
    release, empty = mechanism.sanitize_many(["w1 w2 w3", "  "])
    guarantee = release.guarantee
    assert guarantee.kind == "dp" and guarantee.epsilon == epsilon and guarantee.unit == "token"
    assert guarantee.document_epsilon == pytest.approx(epsilon * limit)
    assert mechanism.planned_spend("w1 w2 w3") == (pytest.approx(epsilon * limit), "dp epsilon per document")
    assert mechanism.spend_per_release() is None  # no cap on the units: the spend depends on the text's units
    assert mechanism.with_params(max_units=3).spend_per_release() == (pytest.approx(epsilon * limit * 3),
                                                                      "dp epsilon per document")
    statement = guarantee.statement
    assert f"{width:g}" in statement and "sensitivity" in statement  # the sensitivity w
    assert re.search(rf"/\s*\(?2\s*\*?\s*(w|{re.escape(f'{width:g}')})\b", statement)  # exp(eps u / (2 w))
    assert re.search(rf"\b{limit}\b", statement) and f"{epsilon * limit:g}" in statement  # L and eps * L
    assert guarantee.assumptions and all(assumption in statement for assumption in guarantee.assumptions)
    assert any("public" in a for a in guarantee.assumptions)
    assert any(f"{width:g}" in a for a in guarantee.assumptions)  # w fixed before any private text
    assert empty.text == "" and empty.guarantee.words_protected == 0 and empty.guarantee.kind == "dp"
    assert Paraphrase(epsilon, language_model=toy, max_new_tokens=limit).sanitize("").guarantee.words_protected == 0


def test_clipped_score_guarantee_names_its_interval():
    toy = toy_language_model(WORDS)
    guarantee = Paraphrase(4.0, language_model=toy, score="clipped", width=15.0, clip_high=22.0,
                           max_new_tokens=3, seed=1).sanitize("w1").guarantee
    assert re.search(r"\b7\b", guarantee.statement) and re.search(r"\b22\b", guarantee.statement)  # [b2 - w, b2]
    assert any("22" in a for a in guarantee.assumptions)


def test_restyle_claims_nothing_and_names_what_it_copies():
    toy = toy_language_model(WORDS)
    release, empty = Restyle(temperature=0.9, language_model=toy, max_new_tokens=4, seed=1).sanitize_many(
        ["w1 w2", ""])
    guarantee = release.guarantee
    assert guarantee.kind == "none" and guarantee.epsilon is None and guarantee.document_epsilon is None
    assert "NO formal privacy guarantee" in guarantee.statement
    copied = " ".join(guarantee.unprotected)
    assert "copies" in copied and "names" in copied and "numbers" in copied
    assert "0.9" in guarantee.statement  # the temperature it sampled at
    assert empty.text == "" and empty.guarantee.words_protected == 0


# -- the bundled model ------------------------------------------------------------------


def _readable(text: str) -> bool:
    letters = sum(ch in string.ascii_letters + " " for ch in text)
    return len(text.split()) >= 3 and letters >= 0.85 * len(text)


@pytest.mark.slow
def test_the_bundled_model_writes_readable_text():
    skip_without_bundled_language_model()
    source = "The market rallied on Friday and stocks rose."
    paraphrase = Paraphrase(40.0, max_new_tokens=24, seed=7).sanitize(source)
    assert _readable(paraphrase.text), paraphrase.text
    assert paraphrase.guarantee.document_epsilon == pytest.approx(40.0 * 24)
    restyled = Restyle(seed=1, max_new_tokens=16).sanitize(source)
    assert _readable(restyled.text), restyled.text


# -- the public output vocabulary ---------------------------------------------------------


def test_a_public_vocabulary_is_the_commonest_english_tokens_with_digits_punctuation_and_the_end(
        tiny_language_model, tmp_path, monkeypatch):
    from textveil.mechanisms.output_vocabulary import output_vocabulary, parse_vocabulary

    monkeypatch.setenv("TEXTVEIL_CACHE_DIR", str(tmp_path))
    lm = tiny_language_model
    small, large, whole = (output_vocabulary(lm, v) for v in ("256", "270", "all"))
    assert set(small.ids) <= set(large.ids) <= set(whole.ids) and whole.size == lm.vocabulary_size - 1
    assert set(lm.end_token_ids) <= set(small.ids)
    assert not (set(lm.special_token_ids) - set(lm.end_token_ids)) & set(whole.ids)  # no other control token
    for mark in ("0", "7", ".", ",", "?", "\n"):  # whatever the size, digits, punctuation and breaks
        assert set(lm.encode(mark)) <= set(small.ids), mark
    assert 256 <= small.size < whole.size and small.digest != large.digest
    assert "256 commonest tokens of English" in small.description and "wordfreq" in small.description
    assert (output_vocabulary(lm, "256").ids == small.ids).all()  # read back from the cache: the same
    assert list(tmp_path.glob("output-vocabularies/*-256-*.json"))
    for bad in ("ten", "100", "-5", "", True):
        with pytest.raises(InvalidParameterError, match="vocabulary must be 'all' or a whole number"):
            parse_vocabulary(bad)


def test_a_release_draws_only_from_its_public_vocabulary_and_says_so(tiny_language_model):
    mechanism = Paraphrase(10.0, language_model=tiny_language_model, vocabulary="256", max_new_tokens=8, seed=2)
    allowed = set(mechanism.output_vocabulary().ids)
    drawn: list[int] = []
    original = mechanism._draw

    def recording(logits, candidates, rngs):
        positions = original(logits, candidates, rngs)
        drawn.extend(int(candidates[p]) for p in positions)
        return positions

    mechanism._draw = recording
    releases = mechanism.sanitize_many(TEXTS * 20)
    assert drawn and set(drawn) <= allowed and len(set(drawn)) > 20
    guarantee = releases[0].guarantee
    vocabulary = mechanism.output_vocabulary()
    assert f"{vocabulary.size:,} tokens" in guarantee.statement and vocabulary.digest in guarantee.statement
    assert mechanism.fingerprint()["output_vocabulary"] == vocabulary.digest
    assert mechanism.fingerprint() != mechanism.with_params(vocabulary="all").fingerprint()
    with pytest.raises(InvalidParameterError, match="vocabulary must be"):
        Paraphrase(10.0, language_model=tiny_language_model, vocabulary="lots")


def test_the_canary_audits_the_mechanism_over_the_toys_whole_vocabulary():
    """A public English vocabulary would hold none of the canary's toy words: its canary is drawn
    over the toy's whole vocabulary, the exponential mechanism and score unchanged."""
    from textveil.evaluation.audit_pairs import paraphrase_canary

    case = paraphrase_canary(Paraphrase(4.0, vocabulary="8000", max_new_tokens=8, language_model=worst_case_toy()))
    assert case.mechanism.vocabulary == "all" and case.mechanism.max_new_tokens == 1


# -- the prompt and the unit of a rewrite ---------------------------------------------------


def test_every_public_prompt_opens_with_its_own_fixed_tokens(tiny_language_model):
    from textveil.mechanisms.prompting import EXAMPLE, template_opening
    from textveil.mechanisms.registry import MECHANISMS

    choices = MECHANISMS.entry("paraphrase").parameter("prompt").choices  # select-write's writer prompts are its own
    openings = {}
    for prompt in choices:
        mechanism = Paraphrase(30.0, language_model=tiny_language_model, prompt=prompt, max_new_tokens=3, seed=1)
        opening = template_opening(tiny_language_model, prompt)
        for text in ("The market rallied.", " 42 apples", "\nLeading newline"):
            assert mechanism.prompt_ids(text)[: len(opening)] == opening  # whatever the input
        assert f"('{prompt}')" in mechanism.sanitize("The bank said so.").guarantee.statement
        openings[prompt] = tuple(opening)
    assert len(set(openings.values())) == len(choices)
    assert tiny_language_model.decode(list(openings["one-shot"])).count(EXAMPLE[1].split()[0]) == 1  # the example
    with pytest.raises(InvalidParameterError, match="unknown --prompt"):
        Paraphrase(30.0, language_model=tiny_language_model, prompt="poem")


def test_every_unit_of_a_document_is_rewritten_in_order_and_their_number_is_named(tiny_language_model):
    text = ("The market rallied on Friday. Oil prices fell in London!\nWe knit a scarf.\n\nThe bank said so. "
            "Growth was slow.")
    mechanism = Paraphrase(20.0, language_model=tiny_language_model, unit="sentence", max_new_tokens=5, seed=4)
    assert mechanism.units(text) == ["The market rallied on Friday.", "Oil prices fell in London!", "We knit a scarf.",
                                     "The bank said so.", "Growth was slow."]
    assert Paraphrase(20.0, language_model=tiny_language_model).units(text) == [
        "The market rallied on Friday. Oil prices fell in London!", "We knit a scarf.",
        "The bank said so. Growth was slow."]
    assert mechanism.planned_spend(text) == (pytest.approx(20.0 * 5 * 5), "dp epsilon per document")
    release = mechanism.sanitize(text)
    guarantee = release.guarantee
    assert release.units == 5 and release.units_left_out == 0
    assert guarantee.document_epsilon == pytest.approx(20.0 * 5 * 5) and guarantee.words_protected == 25
    assert "number of units" in " ".join(guarantee.unprotected) and "as many units" in guarantee.statement
    assert len(release.text.split("\n\n")) <= 5  # one paragraph per unit (an empty reply leaves none)
    assert mechanism.sanitize("   ").guarantee.words_protected == 0
    views = [mechanism.release_view(t) for t in ("One. Two.", "Three. Four.", "Just one.")]
    assert len(views[0].units) == len(views[1].units) == 2 and len(views[2].units) == 1 and views[0].draws == 10


def test_a_cap_on_the_units_says_how_much_was_left_out(tiny_language_model):
    text = "\n\n".join(f"Paragraph number {i} is here." for i in range(6))
    capped = Paraphrase(20.0, language_model=tiny_language_model, max_units=2, max_new_tokens=3, seed=1)
    release = capped.sanitize(text)
    assert release.units == 2 and release.units_left_out == 4
    assert "4 unit(s) of this input were left out" in release.guarantee.statement
    assert release.to_dict()["units_left_out"] == 4
    assert capped.spend_per_release() == (pytest.approx(20.0 * 3 * 2), "dp epsilon per document")


def test_a_units_prompt_holds_the_unit_before_it_and_its_released_reply(tiny_language_model):
    from textveil.mechanisms.prompting import template_opening

    mechanism = Paraphrase(30.0, language_model=tiny_language_model, max_new_tokens=4, seed=2)
    alone = mechanism.prompt_ids("The bank said so.")
    after = mechanism.prompt_ids("The bank said so.", ("Shares fell.", "Stocks went down."))
    opening = template_opening(tiny_language_model, "paraphrase")
    assert alone[: len(opening)] == after[: len(opening)] == opening  # one opening, read once
    shown = tiny_language_model.decode(after)
    assert shown.index("Shares fell.") < shown.index("Stocks went down.") < shown.index("The bank said so.")
    # The replies of a document's later units depend on the earlier ones' replies (context), and
    # without context each unit is released as it would be alone.
    text = "\n\n".join(["Shares fell in Tokyo.", "The bank said so.", "Growth was slow."])
    seeded = dict(language_model=tiny_language_model, max_new_tokens=4, seed=9)
    assert Paraphrase(30.0, **seeded).sanitize(text).text == Paraphrase(30.0, **seeded).sanitize(text).text
    alone_release = Paraphrase(30.0, context="none", **seeded).sanitize(text)
    assert alone_release.units == 3


def test_long_documents_go_through_the_engine_together_and_do_not_depend_on_the_batch(tiny_language_model):
    document = "\n\n".join(f"Paragraph {i} tells of the bank, the market and the rain." for i in range(20))
    texts = [document, "A short one.", document[:200]]
    seeded = dict(language_model=tiny_language_model, max_new_tokens=3, seed=5)
    wide = Paraphrase(30.0, batch_size=64, **seeded).sanitize_many(texts)
    narrow = Paraphrase(30.0, batch_size=2, **seeded).sanitize_many(texts)
    assert [r.text for r in wide] == [r.text for r in narrow]
    assert [r.units for r in wide] == [20, 1, len(Paraphrase(30.0, **seeded).units(document[:200]))]
    told: list[float] = []
    Paraphrase(30.0, **seeded).sanitize_many([document], progress=told.append)
    assert len(told) > 1 and sum(told) == pytest.approx(1.0)  # a long document shows progress as it goes


def test_a_reply_ends_at_its_first_line_break(tiny_language_model):
    from textveil.mechanisms.unit_plan import line_break_tokens

    breaks = line_break_tokens(tiny_language_model)
    assert breaks and all("\n" in tiny_language_model.decode([token]) for token in breaks)
    releases = Paraphrase(30.0, language_model=tiny_language_model, max_new_tokens=40, seed=3).sanitize_many(
        ["The market rallied on Friday and the bank said so."] * 20)
    assert all("\n" not in release.text for release in releases)


def test_the_describing_share_spots_a_release_about_the_text():
    from textveil.utility.describing import describes, describing_share

    about = ["The text conveys a message of regret, disappointment, and regret.",
             "Here is a paraphrased version: I went home.", "The author expresses joy at the news.",
             "In this post, the writer shares a recipe."]
    rewrites = ["I went to the market on Friday and bought apples.", "My sister and I saw an elephant at the zoo.",
                "I told the author of the book that I liked it.", "Sales grew by twelve percent this quarter."]
    assert all(describes(text) for text in about) and not any(describes(text) for text in rewrites)
    assert describing_share(about + rewrites + ["", " "]) == 0.5


def test_the_width_is_calibrated_on_public_text_over_the_chosen_vocabulary(tiny_language_model):
    from textveil.evaluation.width_calibration import calibrate_width

    public = ["It was the best of times, it was the worst of times.", "Call me Ishmael."]
    whole = calibrate_width(tiny_language_model, public, max_new_tokens=4)
    small = calibrate_width(tiny_language_model, public, max_new_tokens=4, vocabulary="256", prompt="neutral")
    for result in (whole, small):
        assert 1.0 <= result["width"] <= 60.0 and result["steps"] >= 2
        assert result["floor_mass_at_width"] <= 1e-3 or result["width"] == 60.0


def test_a_second_rewrite_reads_only_the_first_release_and_costs_nothing_more(tiny_language_model, monkeypatch):
    text = "\n\n".join(["Shares fell in Tokyo on Friday.", "The bank said so.", "Growth was slow."])
    seeded = dict(language_model=tiny_language_model, max_new_tokens=4, seed=6)
    once, twice = Paraphrase(30.0, **seeded), Paraphrase(30.0, rewrites=2, **seeded)
    first, second = once.sanitize(text), twice.sanitize(text)
    # The input's units and every bound of the Guarantee are the first round's: the later round is
    # post-processing of the release, named in the statement.
    assert second.units == first.units == 3
    assert second.guarantee.document_epsilon == first.guarantee.document_epsilon == pytest.approx(30.0 * 4 * 3)
    assert "1 more time(s)" in second.guarantee.statement and "costs no privacy" in second.guarantee.statement
    assert "more time" not in first.guarantee.statement
    assert second.text == Paraphrase(30.0, rewrites=2, **seeded).sanitize(text).text  # the seed fixes both rounds
    # What the second round reads: the texts the first round released, nothing of the input.
    read: list[list[str]] = []
    original = Paraphrase._rewrite_once

    def spy(self, texts, rngs, progress):
        read.append(list(texts))
        return original(self, texts, rngs, progress)

    monkeypatch.setattr(Paraphrase, "_rewrite_once", spy)
    told: list[float] = []
    releases = Paraphrase(30.0, rewrites=2, **seeded).sanitize_many([text, "A short one."], progress=told.append)
    assert read[0] == [text, "A short one."]
    assert read[1] == [Paraphrase(30.0, **seeded).sanitize_many([text, "A short one."])[i].text for i in range(2)]
    assert [r.text for r in releases] == [second.text, releases[1].text] and sum(told) == pytest.approx(2.0)
    restyled = Restyle(rewrites=3, **seeded).sanitize(text)
    assert "2 more time(s)" in restyled.guarantee.statement
    with pytest.raises(InvalidParameterError):
        Paraphrase(30.0, rewrites=0, **seeded)
