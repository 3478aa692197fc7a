"""How fast does ``paraphrase`` write, on its engine, against transformers' ``generate``?

In one run, on the same model file, prompts, batch size, L and distribution:

- **textveil** (``tokens_per_s``): ``Paraphrase.sanitize_many`` on the engine asked for (``auto``:
  llama.cpp where it runs here), its exponential mechanism drawing every token;
- **public base** (``public_base_tokens_per_s``): ``score="public-base"`` at epsilon
  ``--public-base-epsilon`` (8), each unit decoded as a pair of rows (its prompt and the public
  prompt) side by side in the engine's batches; ``public_base_over_paraphrase`` is its rate over
  textveil's (output tokens per second: a pair's two rows draw one token);
- **plain** (``plain_tokens_per_s``): the same engine, the same texts, with plain sampling at
  temperature 1 over the same output vocabulary (``restyle``'s draw): the mechanism's own cost is
  the gap between the two (``dp_over_plain``);
- **generate** (``generate_tokens_per_s``): transformers' ``model.generate`` on the same GGUF
  file (dequantised to float32, as transformers reads it), the same prompts (each post one unit of
  up to 256 tokens, ``context=none``: every unit's prompt is known before decoding) in the same batches
  (left-padded), the same exponential-mechanism distribution given by a logits processor (scores
  clip(logit - max, -w, 0) times epsilon / 2w over the same output vocabulary), ``max_new_tokens`` L,
  and the same stop rule (an end token or a line break);
- **quality**: the MiniLM similarity of the texts to their releases at epsilon 40, written by the
  engine and by the transformers engine, the mean over four seeds (``similarity_engine``,
  ``similarity_transformers``, and each seed's): a faster engine must not write worse text; and,
  without sampling noise, both engines' log-probabilities of the texts' own tokens (their mean
  absolute difference and both perplexities).

Tokens are counted the same way for all: the tokens drawn, an end token included. Prints one JSON
object with the machine (CPU model). Run::

    .venv/bin/python benchmarks/speed/bench_paraphrase.py --quick      # 32 texts, about 3 minutes on 2 cores
    .venv/bin/python benchmarks/speed/bench_paraphrase.py --texts 128 --batch 32 --engine transformers
    benchmarks/speed/gpu_paraphrase.sh          # on a GPU: 128 and 1,024 rows of 256-token prompts
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import BLOG, bench_texts, machine_info  # noqa: E402

QUALITY_EPSILON = 40.0


def timed_release(mechanism, texts: list[str]) -> tuple[float, int, list[str]]:
    """Seconds, tokens drawn (one per row each time the mechanism draws) and the releases of
    ``sanitize_many``."""
    drawn = 0
    original = mechanism._draw

    def counting(logits, candidates, rngs):
        nonlocal drawn
        drawn += len(rngs)
        return original(logits, candidates, rngs)

    mechanism._draw = counting
    try:
        started = time.perf_counter()
        releases = mechanism.sanitize_many(texts)
        seconds = time.perf_counter() - started
    finally:
        mechanism._draw = original
    return seconds, drawn, [r.text for r in releases]


def run_generate(mechanism, texts: list[str], batch: int) -> tuple[float, int]:
    """Seconds and tokens drawn by transformers' generate, same prompts, batches and distribution."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    from textveil.mechanisms.unit_plan import line_break_tokens
    from textveil.models.lm_decoding import length_buckets

    lm = mechanism._lm()
    candidates = torch.from_numpy(mechanism._candidates()).to(lm.device)
    scale = mechanism.epsilon / (2.0 * mechanism.sensitivity)

    class SameDistribution(LogitsProcessor):
        def __call__(self, input_ids, scores):
            out = torch.full_like(scores, float("-inf"))
            out[:, candidates] = mechanism.scores(scores[:, candidates]) * scale  # the mechanism's own score
            return out

    # the mechanism's own units (the bench releases with context=none, so each is a prompt of its own)
    prompts = [mechanism.prompt_ids(unit) for t in texts for unit in mechanism.units(t)]
    # the mechanism's stop rule: a reply ends at an end token or its first line break
    ends = set(lm.end_token_ids) | set(line_break_tokens(lm))
    drawn = 0
    torch.manual_seed(1)  # generate's draws seeded too: its token count, and so its rate, is the same run to run
    start = time.perf_counter()
    with torch.inference_mode():
        for bucket in length_buckets([len(p) for p in prompts], batch):
            width = max(len(prompts[i]) for i in bucket)
            ids = torch.zeros((len(bucket), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(bucket):
                ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i])
                mask[row, width - len(prompts[i]):] = 1
            ids, mask = ids.to(lm.device), mask.to(lm.device)
            out = lm.network.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=mechanism.max_new_tokens, do_sample=True,
                temperature=1.0, top_k=0, top_p=1.0, logits_processor=LogitsProcessorList([SameDistribution()]),
                eos_token_id=sorted(ends), pad_token_id=lm.end_token_ids[0])
            for row in out[:, width:].tolist():
                for token in row:
                    drawn += 1
                    if token in ends:
                        break
    return time.perf_counter() - start, drawn


def texts_of_tokens(count: int, tokens: int, model: str) -> tuple[list[str], str]:
    """``count`` texts of about ``tokens`` model tokens each (the issue's 256-token prompts), made
    of the bundled sample's sentences in turn, each text starting one sentence further on."""
    from textveil.models.language_model import load_language_model

    lm = load_language_model(model, engine="transformers")
    sentences, _ = bench_texts(200, Path("/nonexistent"))
    texts = []
    for start in range(count):
        text, k = "", start
        while len(lm.encode(text)) < tokens:
            text = (text + " " + sentences[k % len(sentences)]).strip()
            k += 1
        texts.append(lm.decode(lm.encode(text)[:tokens]))
    return texts, f"examples/sample.txt sentences, {tokens} tokens each"


def fidelity(engine_lm, reference_lm, texts: list[str]) -> dict:
    """How far the engine's model is from transformers' float32 one, without sampling noise: each
    text's tokens (its first 96) scored by both, the mean absolute difference of log p(token) and
    both perplexities."""
    sequences = [[reference_lm.tokenizer.bos_token_id or 0] + reference_lm.encode(t)[:96] for t in texts]
    ours = np.concatenate(engine_lm.engine.token_log_likelihoods(sequences))
    theirs = np.concatenate(reference_lm.engine.token_log_likelihoods(sequences))
    return {"logp_mean_abs_difference": round(float(np.abs(ours - theirs).mean()), 4),
            "perplexity_engine": round(float(np.exp(-ours.mean())), 3),
            "perplexity_transformers": round(float(np.exp(-theirs.mean())), 3), "scored_tokens": int(ours.size)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 texts (about 3 minutes on 2 cores)")
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--epsilon", type=float, default=30.0)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--engine", default="auto", help="auto, llama-cpp or transformers (the engine measured)")
    parser.add_argument("--public-base-epsilon", type=float, default=8.0,
                        help="the epsilon per token of the public-base draw timed beside it")
    parser.add_argument("--no-quality", action="store_true", help="skip the similarity check at epsilon 40")
    parser.add_argument("--quality-seeds", type=int, default=4, help="seeds of the similarity check (its mean)")
    parser.add_argument("--prompt-tokens", type=int, default=0,
                        help="texts of about this many model tokens, each one unit (unit=text), made of the bundled "
                             "sample's sentences; 0: the corpus's posts as they are")
    parser.add_argument("--corpus", type=Path, default=BLOG,
                        help="a JSONL file with a text field (default: blog_short)")
    args = parser.parse_args()
    count = 32 if args.quick else args.texts

    from textveil.mechanisms.paraphrase import Paraphrase
    from textveil.mechanisms.restyle import Restyle

    texts, source = bench_texts(count, args.corpus)
    # One unit of up to 256 tokens per post, read without the unit before it: the prompts generate is
    # given are the mechanism's own (a unit's context holds the reply before it, which generate cannot
    # know), and the figures compare with 0.4.0's (a post's first 256 tokens, one reply).
    common = dict(model=args.model, max_new_tokens=args.max_new_tokens, seed=1, batch_size=args.batch,
                  unit="text", max_input_tokens=256, context="none")
    if args.prompt_tokens:
        texts, source = texts_of_tokens(count, args.prompt_tokens, args.model)
        common.update(unit="text", max_input_tokens=args.prompt_tokens + 8)
    mechanism = Paraphrase(args.epsilon, engine=args.engine, **common)
    plain = Restyle(temperature=1.0, engine=args.engine, **common)
    public_base = Paraphrase(args.public_base_epsilon, engine=args.engine, score="public-base", **common)
    reference = Paraphrase(args.epsilon, engine="transformers", **common)
    lm = mechanism._lm()
    timed_release(mechanism, texts[:4])  # warm: the opening, first-touch of the weights, the worker
    timed_release(plain, texts[:4])
    timed_release(public_base, texts[:4])
    ours_s, ours_tokens, _ = timed_release(mechanism, texts)
    public_s, public_tokens, _ = timed_release(public_base, texts)
    plain_s, plain_tokens, _ = timed_release(plain, texts)
    run_generate(reference, texts[:4], args.batch)
    gen_s, gen_tokens = run_generate(reference, texts, args.batch)
    ours_rate, gen_rate, plain_rate = ours_tokens / ours_s, gen_tokens / gen_s, plain_tokens / plain_s
    result = {
        "benchmark": "paraphrase", "model": lm.name, "engine": lm.engine.name, "engine_description":
        lm.engine.description, "device": lm.device, "texts": count, "source": source, "batch": args.batch,
        "max_new_tokens": args.max_new_tokens, "epsilon": args.epsilon,
        "tokens_per_s": round(ours_rate, 1), "tokens": ours_tokens, "seconds": round(ours_s, 2),
        "plain_tokens_per_s": round(plain_rate, 1), "plain_tokens": plain_tokens, "plain_seconds": round(plain_s, 2),
        "dp_over_plain": round(ours_rate / plain_rate, 2),
        "public_base_epsilon": args.public_base_epsilon, "public_base_tokens_per_s": round(public_tokens / public_s, 1),
        "public_base_tokens": public_tokens, "public_base_seconds": round(public_s, 2),
        "public_base_over_paraphrase": round(public_tokens / public_s / ours_rate, 2),
        "generate_tokens_per_s": round(gen_rate, 1), "generate_tokens": gen_tokens, "generate_seconds": round(gen_s, 2),
        "ratio_vs_generate": round(ours_rate / gen_rate, 2),
    }
    if not args.no_quality:
        from textveil.utility.similarity import SemanticSimilarity

        # Each engine's releases at epsilon 40 under several seeds (one seed's mean over 32 posts
        # moves by about 0.03 from seed to seed: the engines' logits differ, so their draws do).
        similarity = SemanticSimilarity()
        for name, engine in (("engine", args.engine), ("transformers", "transformers")):
            means = []
            for seed in range(1, args.quality_seeds + 1):
                released = Paraphrase(QUALITY_EPSILON, engine=engine, **{**common, "seed": seed}).sanitize_many(texts)
                means.append(similarity.mean(texts, [r.text for r in released]))
            result[f"similarity_{name}"] = round(float(np.mean(means)), 4)
            result[f"similarity_{name}_by_seed"] = [round(m, 4) for m in means]
        result["similarity_epsilon"] = QUALITY_EPSILON
        result["similarity_difference"] = round(result["similarity_engine"] - result["similarity_transformers"], 4)
        result.update(fidelity(mechanism._lm(), reference._lm(), texts))
    result["machine"] = machine_info()
    if lm.device.startswith("cuda"):
        import torch

        result["machine"]["gpu"] = torch.cuda.get_device_name(lm.device)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
