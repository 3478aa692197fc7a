"""The public-base draw of ``paraphrase`` (``score="public-base"``): its distribution against the
exact formula (with power against a broken draw), its likelihood ratios, the same tokens on every
path (NumPy, a CPU tensor, the accelerator's path), the pairs of rows the engines decode side by
side, the release's independence of its batch, its Guarantee and its audit canary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.chi_square import pooled_chi_square_pvalue
from textveil.errors import InvalidParameterError
from textveil.evaluation.audit import case_claim, run_audit
from textveil.evaluation.audit_pairs import canary_cases
from textveil.mechanisms.paraphrase import Paraphrase
from textveil.mechanisms.public_base import (
    public_base_log_weights,
    public_base_probabilities,
    sample_public_base_logits,
    sample_public_base_rows,
    sample_public_base_rows_torch,
)
from textveil.mechanisms.sampling import make_rng
from textveil.models.toy_language_model import toy_language_model

ALPHA = 1e-3
SAMPLES = 20_000

# A small vocabulary: the document lifts some tokens far above the public model and sinks others
# (both clipped), a control token (index 3) left out of the candidates with the largest logits.
DOC = np.array([[9.0, 8.5, 7.0, 30.0, 1.0, 0.5, -2.0, 6.2, -5.0, 2.0]], dtype=np.float32)
PUB = np.array([[6.0, 8.0, 7.5, 30.0, 3.0, 0.0, 1.0, 6.0, 2.0, 2.5]], dtype=np.float32)
CANDIDATES = np.array([i for i in range(DOC.shape[1]) if i != 3])


def _draws(count: int, epsilon: float, seed: int, **options) -> np.ndarray:
    parent = make_rng(seed)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=count)]
    return sample_public_base_rows(np.repeat(DOC, count, axis=0), np.repeat(PUB, count, axis=0), CANDIDATES, epsilon,
                                   rngs, **options)


def _expected(epsilon: float, **options) -> np.ndarray:
    return public_base_probabilities(DOC[:, CANDIDATES], PUB[:, CANDIDATES], epsilon, **options)[0]


def test_the_probabilities_are_the_public_model_tilted_by_the_clipped_difference() -> None:
    """Pr[v] proportional to p_pub(v) exp(epsilon clip(log p_doc - log p_pub, -C, C) / 4C),
    written out by hand over the candidates."""
    doc, pub = DOC[0, CANDIDATES].astype(np.float64), PUB[0, CANDIDATES].astype(np.float64)
    log_doc, log_pub = doc - np.logaddexp.reduce(doc), pub - np.logaddexp.reduce(pub)
    for epsilon, clip in ((4.0, 1.0), (8.0, 0.5), (16.0, 2.0)):
        weights = np.exp(log_pub) * np.exp(epsilon * np.clip(log_doc - log_pub, -clip, clip) / (4 * clip))
        np.testing.assert_allclose(_expected(epsilon, clip=clip), weights / weights.sum(), rtol=1e-12)


@pytest.mark.parametrize(("epsilon", "clip"), [(4.0, 1.0), (12.0, 0.5), (40.0, 2.0)])
def test_the_draws_follow_the_exact_probabilities(epsilon: float, clip: float) -> None:
    draws = _draws(SAMPLES, epsilon, seed=11, clip=clip)
    assert draws.max() < CANDIDATES.size  # positions in the candidates: the control token is never drawn
    assert pooled_chi_square_pvalue(draws, _expected(epsilon, clip=clip)) > ALPHA


def test_the_goodness_of_fit_has_power_against_a_missing_factor_two() -> None:
    """Power: the same draws with sensitivity C instead of 2C (the factor 2 forgotten) fail the test."""
    draws = _draws(SAMPLES, 8.0, seed=11, clip=1.0, sensitivity=1.0)
    assert pooled_chi_square_pvalue(draws, _expected(8.0, clip=1.0)) < ALPHA


def test_the_goodness_of_fit_has_power_against_a_draw_without_the_public_base() -> None:
    """Power: a draw by the clipped difference alone (no base measure p_pub) fails the test."""
    parent = make_rng(11)
    rngs = [make_rng(int(s)) for s in parent.integers(0, 2**63, size=SAMPLES)]
    flat = np.zeros((SAMPLES, DOC.shape[1]), dtype=np.float32)  # a uniform "public" model
    draws = sample_public_base_rows(np.repeat(DOC, SAMPLES, axis=0), flat, CANDIDATES, 8.0, rngs)
    assert pooled_chi_square_pvalue(draws, _expected(8.0)) < ALPHA


def test_every_likelihood_ratio_is_within_epsilon_for_any_two_documents() -> None:
    """For the same public row, two documents' logits (random, and extreme) give probabilities whose
    log-ratio never passes epsilon, token by token (the exponential mechanism's bound)."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        pub = rng.normal(0, 5, size=(1, 50))
        first, second = rng.normal(0, 20, size=(1, 50)), rng.normal(0, 20, size=(1, 50))
        second[0, :5] = -1e4  # a document that rules tokens out
        epsilon, clip = float(rng.uniform(0.5, 30)), float(rng.uniform(0.2, 3))
        ratio = np.log(public_base_probabilities(first, pub, epsilon, clip)) - np.log(
            public_base_probabilities(second, pub, epsilon, clip))
        assert np.abs(ratio).max() <= epsilon + 1e-9


def test_banned_tokens_are_never_drawn_and_the_others_keep_their_proportions() -> None:
    """A public rule leaves positions out of a step: the draw is the same distribution renormalised
    over the rest (chi-square), and the likelihood ratio of any two documents stays within epsilon."""
    banned = [np.array([0, 4])]
    full = _expected(8.0)
    expected = _expected(8.0, banned=banned)
    assert expected[banned[0]].sum() == 0
    kept = np.setdiff1d(np.arange(full.size), banned[0])
    np.testing.assert_allclose(expected[kept], full[kept] / full[kept].sum(), rtol=1e-12)
    draws = _draws(SAMPLES, 8.0, seed=5, banned=banned * SAMPLES)
    assert not np.isin(draws, banned[0]).any()
    assert pooled_chi_square_pvalue(draws, expected) > ALPHA
    assert pooled_chi_square_pvalue(draws, full) < ALPHA  # power: the unbanned distribution is told apart
    rng = np.random.default_rng(6)
    for _ in range(100):
        pub, first, second = rng.normal(0, 5, size=(1, 40)), rng.normal(0, 20, size=(1, 40)), rng.normal(0, 20, size=(1, 40))
        rule = [rng.choice(40, size=int(rng.integers(1, 20)), replace=False)]  # the same for both: public output
        epsilon = float(rng.uniform(0.5, 30))
        p, q = (public_base_probabilities(doc, pub, epsilon, banned=rule)[0] for doc in (first, second))
        allowed = p > 0
        assert (allowed == (q > 0)).all() and not allowed[rule[0]].any()
        assert np.abs(np.log(p[allowed]) - np.log(q[allowed])).max() <= epsilon + 1e-9


def test_the_torch_draw_bans_the_same_tokens_as_numpy() -> None:
    import torch

    rng = np.random.default_rng(2)
    doc, pub = rng.normal(0, 6, size=(8, 300)).astype(np.float32), rng.normal(0, 6, size=(8, 300)).astype(np.float32)
    candidates = np.arange(3, 300)
    banned = [rng.choice(297, size=40, replace=False) for _ in range(8)]
    expected = sample_public_base_rows(doc, pub, candidates, 30.0, [make_rng(i) for i in range(8)], banned=banned)
    device = sample_public_base_rows_torch(torch.from_numpy(doc), torch.from_numpy(pub), candidates, 30.0,
                                           [make_rng(i) for i in range(8)], banned=banned).numpy()
    assert (device == expected).all()
    assert not any(token in rule for token, rule in zip(expected, banned))


def test_top_k_draws_among_the_public_models_likeliest_tokens_only() -> None:
    expected = _expected(8.0, top_k=4)
    top = np.argsort(-PUB[0, CANDIDATES])[:4]
    assert set(np.flatnonzero(expected)) == set(top)
    draws = _draws(SAMPLES, 8.0, seed=3, top_k=4)
    assert set(np.unique(draws)) <= set(top)
    assert pooled_chi_square_pvalue(draws, expected) > ALPHA


def test_bad_parameters_are_refused_in_one_line() -> None:
    with pytest.raises(InvalidParameterError, match="clip"):
        public_base_log_weights(DOC, PUB, 4.0, clip=0.0)
    with pytest.raises(InvalidParameterError, match="same shape"):
        public_base_log_weights(DOC, PUB[:, :4], 4.0)
    with pytest.raises(InvalidParameterError, match="finite"):
        public_base_log_weights(np.array([[np.nan, 1.0]]), np.array([[0.0, 1.0]]), 4.0)


def test_numpy_a_cpu_tensor_and_the_device_path_give_the_same_tokens(monkeypatch) -> None:
    """One function takes a step's logits wherever they are: a NumPy array, a CPU tensor (drawn on
    the host) and a tensor drawn where it lies (the accelerator's path, forced onto the CPU) give
    the same positions for the same generators, from float32 and bfloat16 logits."""
    import torch

    from textveil.mechanisms import public_base

    rng = np.random.default_rng(9)
    candidates = np.setdiff1d(np.arange(4_096), [0, 1, 2, 17])
    for dtype in (torch.float32, torch.bfloat16):
        doc = torch.from_numpy(rng.normal(0.0, 6.0, size=(32, 4_096)).astype(np.float32)).to(dtype)
        pub = torch.from_numpy(rng.normal(0.0, 6.0, size=(32, 4_096)).astype(np.float32)).to(dtype)
        for top_k in (0, 50):
            def draw(d, p):
                return sample_public_base_logits(d, p, candidates, 8.0, [make_rng(i) for i in range(32)], top_k=top_k)

            expected = sample_public_base_rows(doc.float().numpy(), pub.float().numpy(), candidates, 8.0,
                                               [make_rng(i) for i in range(32)], top_k=top_k)
            assert (draw(doc.float().numpy(), pub.float().numpy()) == expected).all()
            assert (draw(doc, pub) == expected).all()  # a CPU tensor: the host path
            with monkeypatch.context() as forced:
                forced.setattr(public_base, "on_accelerator", lambda logits: True)
                device = draw(doc, pub)
            assert isinstance(device, np.ndarray) and (device == expected).all()
    other = sample_public_base_logits(doc, pub, candidates, 8.0, [make_rng(i + 1) for i in range(32)])
    assert (other != expected).any()  # power: other generators draw other tokens


# -- the mechanism, through the public API, on a toy model ---------------------------------------

WORDS = ["calm", "sea", "storm", "wind", "rain", "sun"]
LOGITS = {"calm": {"sea": 3.0, "sun": 1.0}, "storm": {"wind": 4.0, "rain": 2.0}, "system": {"sun": 1.5}}
TEXTS = ["calm sea", "storm wind rain\n\ncalm sea sun\n\nstorm", "", "sun", "rain rain\n\nwind"]


@pytest.fixture(scope="module")
def toy():
    return toy_language_model(WORDS, LOGITS)


def _mechanism(toy, **params) -> Paraphrase:
    return Paraphrase(params.pop("epsilon", 8.0), score="public-base", language_model=toy,
                      **{"max_new_tokens": 6, "seed": 4, **params})


@pytest.mark.parametrize("context", ["previous", "none"])
def test_a_release_does_not_depend_on_its_batch(toy, context: str) -> None:
    """Text i released among others, alone with its own seed, or in batches of two rows (one pair)
    at a time, is the same: a pair's rows are decoded side by side whatever shares the batch."""
    seeds = [11, 12, 13, 14, 15]
    together = _mechanism(toy, context=context).sanitize_records(TEXTS, seeds)
    small = _mechanism(toy, context=context, batch_size=1).sanitize_records(TEXTS, seeds)
    for i, text in enumerate(TEXTS):
        alone = _mechanism(toy, context=context, seed=seeds[i]).sanitize(text)
        assert together[i].text == small[i].text == alone.text
    assert together[1].units == 3 and together[1].text.count("\n\n") == 2
    assert together[2].text == "" and together[2].units == 0
    again = _mechanism(toy, context=context).sanitize_records(TEXTS, [s + 100 for s in seeds])
    assert [r.text for r in again] != [r.text for r in together]  # power: other seeds, other releases


def test_both_rows_of_a_unit_are_decoded_side_by_side_with_the_same_tokens(toy, monkeypatch) -> None:
    """Every step's draw gets the unit's prompt (with the document) and the public prompt (without
    it) together, and no word of the document ever reaches the public row."""
    from textveil.models.engines import batching

    seen = []
    original = batching.DecodeJob.draw

    def spy(job, logits, rows):
        seen.append((job.group_size, sorted(np.asarray(rows).tolist())))
        return original(job, logits, rows)

    monkeypatch.setattr(batching.DecodeJob, "draw", spy)
    mechanism = _mechanism(toy)
    public = mechanism.public_prompt_ids()
    assert "storm" not in toy.decode(public) and "wind" not in toy.decode(public)
    mechanism.sanitize_many(TEXTS)
    assert seen and all(size == 2 for size, _ in seen)
    for _, rows in seen:
        assert len(rows) % 2 == 0 and rows[::2] == [r - 1 for r in rows[1::2]] and all(r % 2 == 0 for r in rows[::2])


def test_the_guarantee_is_exact_per_token_unit_and_document(toy) -> None:
    mechanism = _mechanism(toy, epsilon=8.0, max_new_tokens=6, clip=0.5, public_prompt="news")
    release = mechanism.sanitize("storm wind\n\ncalm sea")
    g = release.guarantee
    assert (g.epsilon, g.kind, g.unit) == (8.0, "dp", "token")
    assert g.document_epsilon == pytest.approx(8.0 * 6 * 2)
    assert mechanism.planned_spend("storm wind\n\ncalm sea") == (96.0, "dp epsilon per document")
    assert "p_pub" in g.how and "news article" in g.how and "-0.5, 0.5" in g.how
    assert any("public prompt" in a for a in g.assumptions)
    assert mechanism.sensitivity == 1.0


def test_the_fingerprint_names_the_public_base_and_leaves_other_scores_as_they_were(toy) -> None:
    relative = Paraphrase(8.0, language_model=toy).fingerprint()["parameters"]
    assert not {"clip", "public_prompt", "top_k"} & set(relative)  # releases cached before still read
    public = _mechanism(toy).fingerprint()["parameters"]
    assert public["score"] == "public-base" and {"clip", "public_prompt", "top_k"} <= set(public)
    assert _mechanism(toy, clip=2.0).fingerprint() != _mechanism(toy).fingerprint()


def test_a_release_never_writes_a_phrase_about_the_task(monkeypatch) -> None:
    """On a toy whose public prompt itself favours "rewrite" and "the text", no release writes
    either (a phrase of one token, and one of two), while "the" and "text" still come alone; with
    the rule switched off the same releases write them (power)."""
    from textveil.mechanisms import paraphrase as paraphrase_module
    from textveil.mechanisms.task_phrases import PhraseBan

    words = ["calm", "sea", "the", "text", "rewrite"]
    toy = toy_language_model(words, {"system": {"rewrite": 3.0, "the": 2.5}, "the": {"text": 6.0},
                                     "sea": {"text": 2.0}})
    texts = ["calm sea"] * 60

    def released(mechanism) -> list[list[str]]:
        return [release.text.split() for release in mechanism.sanitize_records(texts, list(range(60)))]

    def has(words_out: list[str], run: tuple[str, ...]) -> bool:
        return any(tuple(words_out[i:i + len(run)]) == run for i in range(len(words_out)))

    kept = released(_mechanism(toy, epsilon=4.0, max_new_tokens=8))
    assert not any(has(out, ("rewrite",)) or has(out, ("the", "text")) for out in kept)
    assert any(has(out, ("the",)) for out in kept) and any(has(out, ("text",)) for out in kept)
    monkeypatch.setattr(paraphrase_module.PhraseBan, "for_model", classmethod(lambda cls, lm: PhraseBan({}, 0)))
    loose = released(_mechanism(toy, epsilon=4.0, max_new_tokens=8))
    assert any(has(out, ("rewrite",)) for out in loose) and any(has(out, ("the", "text")) for out in loose)


def test_the_document_and_the_public_prompt_differ_by_the_document_only(toy) -> None:
    """Both rows read the same system turn and instruction; the document's row holds the unit's
    words first. The fingerprint shows the public words and the phrase list."""
    mechanism = _mechanism(toy)
    doc, pub = toy.decode(mechanism.prompt_ids("storm wind")), toy.decode(mechanism.public_prompt_ids())
    assert "storm wind" in doc and "storm" not in pub
    assert doc.replace("storm wind", "").split() == pub.split()
    shown = mechanism.fingerprint()
    assert shown["public_prompt_words"]["system"] == "You write short personal blog posts."
    assert len(shown["task_phrases"]) == 16 and "prompt" not in shown["parameters"]


def test_bad_public_base_parameters_are_refused(toy) -> None:
    with pytest.raises(InvalidParameterError, match="public.prompt"):
        _mechanism(toy, public_prompt="poem")
    with pytest.raises(InvalidParameterError, match="clip"):
        _mechanism(toy, clip=0.0)
    with pytest.raises(InvalidParameterError, match="public-base"):
        _mechanism(toy).score_range()


# -- the audit canary ---------------------------------------------------------------------------


class PublicBaseNoFactorTwo(Paraphrase):
    """A broken public-base draw: exp(epsilon * u / 2C) (sensitivity C where u's range is 2C wide)."""

    @property
    def sensitivity(self) -> float:
        return float(self.clip)


def _w0_log_probability(mechanism: Paraphrase, text: str) -> float:
    """ln Pr[release == "w0"] on the canary, exactly, from the toy's logits of both prompts."""
    import torch

    lm = mechanism.language_model
    with torch.no_grad():
        doc = lm.network(input_ids=torch.tensor([mechanism.prompt_ids(text)])).logits[0, -1].numpy()
        pub = lm.network(input_ids=torch.tensor([mechanism.public_prompt_ids()])).logits[0, -1].numpy()
    candidates = mechanism._candidates()
    probabilities = public_base_probabilities(doc[None, candidates], pub[None, candidates], mechanism.epsilon,
                                              mechanism.clip, mechanism.sensitivity)[0]
    return float(np.log(probabilities[list(candidates).index(lm.tokenizer.convert_tokens_to_ids("w0"))]))


def test_the_canary_shows_the_loss_a_public_base_can_have_and_its_broken_variant_more(tiny_language_model) -> None:
    losses = {}
    for cls in (Paraphrase, PublicBaseNoFactorTwo):
        mechanism = cls(30.0, score="public-base", language_model=tiny_language_model, max_new_tokens=8)
        case, units_case = canary_cases(mechanism)
        canary = case.mechanism
        assert type(canary) is cls and canary.public_base and canary.epsilon == 4.0
        assert case_claim(case).epsilon == pytest.approx(4.0) and case_claim(units_case).epsilon == pytest.approx(8.0)
        losses[cls] = _w0_log_probability(canary, "alpha") - _w0_log_probability(canary, "beta")
        assert _w0_log_probability(canary, "alpha") > math.log(0.15)  # the event is likely: power in few releases
    assert 2.7 < losses[Paraphrase] <= 4.0
    assert losses[PublicBaseNoFactorTwo] > 4.8


@pytest.mark.parametrize(("cls", "verdict"), [(Paraphrase, "pass"), (PublicBaseNoFactorTwo, "fail")])
def test_the_audit_keeps_the_public_base_and_flags_its_broken_variant(tiny_language_model, cls, verdict) -> None:
    mechanism = cls(30.0, score="public-base", language_model=tiny_language_model, max_new_tokens=8)
    report = run_audit(mechanism, canary_cases(mechanism)[:1], trials=1500, seed=1)
    (pair,) = report.pairs
    assert pair.kind == "canary" and pair.claim == pytest.approx(4.0)
    assert pair.verdict == verdict, pair
    if verdict == "pass":
        assert 1.0 < pair.bound <= pair.claim  # the event was found, and kept within the claim
    else:
        assert pair.bound > pair.claim
