"""Fluency: corpus perplexity under a causal LM, and the ``fluency`` utility task's ratio.

Most tests use the tiny random Llama of ``conftest`` (random weights: its perplexities mean
nothing, but batching, truncation, sampling and the ratio's arithmetic are checked exactly); one
slow test checks on the bundled SmolLM2 that shuffled English reads as less fluent.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.conftest import TINY_LM_TEXT, skip_without_bundled_language_model
from textveil.corpus.labelled import LabelledCorpus
from textveil.errors import InvalidParameterError
from textveil.evaluation.utility_tasks import UTILITY_TASKS, FluencyRunner

pytest.importorskip("torch", reason="fluency needs torch")
pytest.importorskip("transformers", reason="fluency needs transformers")

from textveil.utility.fluency import perplexity, sample_indices  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    """torch on one thread: the tiny model's matrices are too small to share, and on a busy machine
    idle threads spinning for work make each step many times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SENTENCES = [s.strip() for s in re.split(r"(?<=[.;:])\s+", TINY_LM_TEXT) if s.strip()]
TEST_TEXTS = [*SENTENCES, *(f"{a} {b}" for a, b in zip(SENTENCES, SENTENCES[1:])), TINY_LM_TEXT]


def corpus(texts: list[str]) -> LabelledCorpus:
    return LabelledCorpus(list(texts), ["u"] * len(texts), name="fluency-test")


def runner_for(folder: Path, texts: list[str] = TEST_TEXTS, **options) -> FluencyRunner:
    runner = FluencyRunner(seed=3, language_model=str(folder), **options)
    runner.prepare(corpus(["unused"]), corpus(texts))
    return runner


def direct_perplexity(lm, texts: list[str]) -> float:
    """Text by text, one unpadded forward each: the definition, without batching."""
    import math

    import torch

    nll, count = 0.0, 0
    for text in texts:
        ids = torch.tensor([[lm.tokenizer.bos_token_id, *lm.encode(text)]])
        with torch.inference_mode():
            logits = lm.network(input_ids=ids).logits[0, :-1].float()
        nll -= float(torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None]).sum())
        count += ids.shape[1] - 1
    return math.exp(nll / count)


# -- perplexity -------------------------------------------------------------------------


def test_perplexity_is_the_token_weighted_mean_over_texts(tiny_language_model):
    score = perplexity(tiny_language_model, SENTENCES[:3])
    assert score.perplexity == pytest.approx(direct_perplexity(tiny_language_model, SENTENCES[:3]), rel=1e-5)
    assert score.tokens == sum(len(tiny_language_model.encode(s)) for s in SENTENCES[:3])  # BOS predicts the first
    assert (score.texts, score.skipped) == (3, 0)


def test_batching_and_padding_do_not_change_the_score(tiny_language_model):
    alone = perplexity(tiny_language_model, TEST_TEXTS, batch_size=1)
    for size in (3, 16):
        batched = perplexity(tiny_language_model, TEST_TEXTS, batch_size=size)
        assert batched.perplexity == pytest.approx(alone.perplexity, rel=1e-4)
        assert batched.tokens == alone.tokens


def test_texts_are_cut_at_max_tokens(tiny_language_model):
    lm = tiny_language_model
    ids = lm.encode(TINY_LM_TEXT)
    assert len(ids) > 12
    cut = perplexity(lm, [TINY_LM_TEXT], max_tokens=12)
    assert cut.tokens == 12
    prefix = lm.decode(ids[:12])
    assert lm.encode(prefix) == ids[:12]  # the prefix re-reads as the same tokens, so it is the same text
    assert cut.perplexity == pytest.approx(perplexity(lm, [prefix]).perplexity, rel=1e-6)
    short = SENTENCES[0]
    assert perplexity(lm, [short], max_tokens=500).tokens == len(lm.encode(short))
    with pytest.raises(InvalidParameterError, match="context"):
        perplexity(lm, [short], max_tokens=lm.context_length)
    with pytest.raises(InvalidParameterError, match="batch_size must be an integer >= 1"):
        perplexity(lm, [short], batch_size=0)


def test_empty_texts_are_skipped_and_counted_and_one_token_counts(tiny_language_model):
    lm = tiny_language_model
    mixed = perplexity(lm, ["", SENTENCES[0], "  \n", SENTENCES[1]])
    plain = perplexity(lm, [SENTENCES[0], SENTENCES[1]])
    assert (mixed.texts, mixed.skipped, mixed.tokens) == (2, 2, plain.tokens)
    assert mixed.perplexity == pytest.approx(plain.perplexity, rel=1e-6)
    one = next(t for t in ("The", "I", "we") if len(lm.encode(t)) == 1)
    assert perplexity(lm, [one]).tokens == 1  # predicted from the start token
    with pytest.raises(InvalidParameterError, match="none of the 2 texts holds a token"):
        perplexity(lm, ["", " "])


# -- the utility task -------------------------------------------------------------------


def test_fluency_is_registered_and_made_with_the_shared_model(tiny_lm_folder):
    assert "fluency" in UTILITY_TASKS.names()
    entry = UTILITY_TASKS.entry("fluency")
    assert not entry.needs_aligned_pairs and "\n" not in entry.description
    runner = UTILITY_TASKS.make("fluency", shared={"language_model": str(tiny_lm_folder)}, embeddings=None, seed=1,
                                attributes=None)
    assert isinstance(runner, FluencyRunner) and runner.language_model == str(tiny_lm_folder)
    assert runner.higher_is_better is False and runner.metric.startswith("perplexity ratio")
    with pytest.raises(InvalidParameterError, match="sample_size must be an integer >= 1"):
        FluencyRunner(sample_size=0)


def test_an_identical_release_scores_exactly_one(tiny_lm_folder):
    runner = runner_for(tiny_lm_folder)
    result = runner.measure(list(TEST_TEXTS))
    assert result["value"] == 1.0
    assert result["release_perplexity"] == result["original_perplexity"]
    assert result["texts"] == len(TEST_TEXTS) and result["empty"] == 0
    assert result["higher_is_better"] is False


def test_the_ratio_is_the_ratio_of_perplexities_on_the_sample(tiny_lm_folder, tiny_language_model):
    runner = runner_for(tiny_lm_folder, sample_size=6)
    released = [text.upper() if i % 2 else text[::-1] for i, text in enumerate(TEST_TEXTS)]
    result = runner.measure(released)
    sample = runner.indices
    release = perplexity(tiny_language_model, [released[i] for i in sample], runner.max_tokens).perplexity
    original = perplexity(tiny_language_model, [TEST_TEXTS[i] for i in sample], runner.max_tokens).perplexity
    assert result["value"] == pytest.approx(release / original, rel=1e-9)
    assert result["release_perplexity"] == pytest.approx(release, rel=1e-9)
    assert result["original_perplexity"] == pytest.approx(original, rel=1e-9)
    assert result["texts"] == 6 and result["value"] != 1.0
    with pytest.raises(InvalidParameterError, match="an aligned release has one per text"):
        runner.value(released[:-1])


def test_the_sample_is_fixed_by_the_seed_and_at_most_sample_size(tiny_lm_folder):
    first, second = runner_for(tiny_lm_folder, sample_size=5), runner_for(tiny_lm_folder, sample_size=5)
    assert first.indices == second.indices == sorted(set(first.indices))
    assert len(first.indices) == 5 and first.indices == sample_indices(len(TEST_TEXTS), 5, 3)
    assert first.original == second.original
    assert sample_indices(len(TEST_TEXTS), 5, 4) != first.indices  # another seed, another sample
    assert runner_for(tiny_lm_folder, sample_size=1000).indices == list(range(len(TEST_TEXTS)))


def test_a_corpus_level_release_is_sampled_from_its_own_texts(tiny_lm_folder, tiny_language_model):
    runner = runner_for(tiny_lm_folder, sample_size=4)
    synthetic = [f"{a} {b}" for a in SENTENCES for b in SENTENCES[:2]]
    result = runner.measure(synthetic, labels=["u"] * len(synthetic))
    drawn = [synthetic[i] for i in sample_indices(len(synthetic), 4, 3)]
    expected = perplexity(tiny_language_model, drawn).perplexity / runner.original.perplexity
    assert result["value"] == pytest.approx(expected, rel=1e-9) and result["texts"] == 4
    with pytest.raises(InvalidParameterError, match="holds no text"):
        runner.measure([], labels=[])


def test_empty_release_texts_are_left_out_and_counted(tiny_lm_folder, tiny_language_model):
    runner = runner_for(tiny_lm_folder, sample_size=6)
    sample = runner.indices
    released = list(TEST_TEXTS)
    for i in sample[:2]:
        released[i] = ""
    result = runner.measure(released)
    kept = [TEST_TEXTS[i] for i in sample[2:]]
    assert result["empty"] == 2 and result["texts"] == 4
    assert result["release_perplexity"] == pytest.approx(perplexity(tiny_language_model, kept).perplexity, rel=1e-9)
    with pytest.raises(InvalidParameterError, match="every sampled release text is empty"):
        runner.measure([""] * len(TEST_TEXTS))


# -- the bundled model ------------------------------------------------------------------


@pytest.mark.slow
def test_the_bundled_model_finds_shuffled_words_less_fluent():
    skip_without_bundled_language_model()
    originals = [
        "I finally finished the quarterly report on Friday evening.",
        "Sales in the northern region grew by twelve percent, mostly thanks to the new coffee machines.",
        "Could someone check my numbers before Monday's meeting? I'd hate to present anything wrong.",
        "The southern office struggled with delays from our shipping partner.",
    ]
    rng = random.Random(0)
    shuffled = [" ".join(rng.sample(text.split(), len(text.split()))) for text in originals]
    runner = FluencyRunner(seed=0)  # the bundled model
    runner.prepare(corpus(["unused"]), corpus(originals))
    assert runner.measure(list(originals))["value"] == 1.0
    result = runner.measure(shuffled)
    assert result["value"] > 1.5, result
