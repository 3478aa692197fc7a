"""How fast does ``paraphrase`` write, against transformers' ``generate`` and the machine's ceiling?

In one run, on the same model, prompts, sampling and batches:

- **textveil**: ``Paraphrase.sanitize_many`` (its decode loop: the template's opening computed once,
  length buckets, finished rows dropped, logits of the last position only);
- **generate**: ``model.generate`` with the same prompts in the same batches (left-padded), the same
  exponential-mechanism distribution given by a logits processor (scores clip(logit - max, -w, 0)
  times epsilon / 2w over the same output vocabulary), ``max_new_tokens`` L;
- **ceiling**: a bare float32 matrix product of the batch's shape, timed here, and the
  multiply-adds of the model's linear layers for every token the textveil loop read and drew:
  the time that arithmetic would take at that rate, as tokens per second.

Tokens are counted the same way for both: the tokens drawn, an end token included. Prints one
JSON object (``tokens_per_s``, ``generate_tokens_per_s``, ``ratio_vs_generate``,
``ceiling_tokens_per_s``, ``ratio_to_ceiling``, the machine). Run::

    .venv/bin/python benchmarks/bench_paraphrase.py --quick      # 32 texts, about 2 minutes on 2 cores
    .venv/bin/python benchmarks/bench_paraphrase.py --texts 128 --batch 32
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import machine_info  # noqa: E402

PUBLIC_TEXTS = Path(__file__).resolve().parents[1] / "examples" / "sample.txt"
BLOG = Path(__file__).resolve().parents[2] / "shared" / "data" / "blog_short" / "blog_short.jsonl"


def bench_texts(count: int) -> tuple[list[str], str]:
    """Blog posts from ../shared/data when present (their lengths are the use case), else the
    bundled sample's sentences."""
    if BLOG.is_file():
        texts = []
        with BLOG.open(encoding="utf-8") as stream:
            for line in stream:
                texts.append(json.loads(line)["text"])
                if len(texts) == count:
                    return texts, "blog_short (first posts)"
    sentences = [s.strip() + "." for s in PUBLIC_TEXTS.read_text().replace("\n", " ").split(".") if s.strip()]
    return [sentences[i % len(sentences)] for i in range(count)], "examples/sample.txt sentences"


def linear_parameters(network) -> int:
    """Multiply-adds per token of the model's linear layers (the LM head included)."""
    import torch

    return sum(m.weight.numel() for m in network.modules() if isinstance(m, torch.nn.Linear))


def bare_product_rate(batch: int, hidden: int, inner: int, seconds: float = 2.0) -> float:
    """FLOP/s of a float32 (batch x hidden) @ (hidden x inner) product, the decoder's MLP shape."""
    import torch

    a, b = torch.randn(batch, hidden), torch.randn(hidden, inner)
    for _ in range(3):
        a @ b
    runs, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        runs += 1
    return 2.0 * batch * hidden * inner * runs / (time.perf_counter() - start)


def run_textveil(mechanism, texts: list[str]) -> tuple[float, int, int]:
    """Seconds, tokens drawn and tokens read (prompts less the shared opening) by sanitize_many."""
    from textveil.mechanisms.paraphrase import _shared_opening

    drawn = 0
    original = mechanism._draw

    def counting(logits, rngs):
        nonlocal drawn
        drawn += len(rngs)
        return original(logits, rngs)

    mechanism._draw = counting
    prompts = [mechanism.prompt_ids(t) for t in texts]
    opening = _shared_opening(prompts)
    start = time.perf_counter()
    mechanism.sanitize_many(texts)
    seconds = time.perf_counter() - start
    mechanism._draw = original
    return seconds, drawn, sum(len(p) - opening for p in prompts)


def run_generate(mechanism, texts: list[str], batch: int) -> tuple[float, int]:
    """Seconds and tokens drawn by transformers' generate, same prompts, batches and distribution."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    from textveil.models.lm_decoding import length_buckets

    lm = mechanism._lm()
    candidates = torch.from_numpy(mechanism._candidates())
    scale = mechanism.epsilon / (2.0 * mechanism.sensitivity)

    class SameDistribution(LogitsProcessor):
        def __call__(self, input_ids, scores):
            chosen = scores[:, candidates]
            relative = torch.clamp(chosen - chosen.max(dim=1, keepdim=True).values, min=-mechanism.width, max=0.0)
            out = torch.full_like(scores, float("-inf"))
            out[:, candidates] = relative * scale
            return out

    prompts = [mechanism.prompt_ids(t) for t in texts]
    ends = set(lm.end_token_ids)
    drawn = 0
    start = time.perf_counter()
    with torch.inference_mode():
        for bucket in length_buckets([len(p) for p in prompts], batch):
            width = max(len(prompts[i]) for i in bucket)
            ids = torch.zeros((len(bucket), width), dtype=torch.long)
            mask = torch.zeros_like(ids)
            for row, i in enumerate(bucket):
                ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i])
                mask[row, width - len(prompts[i]):] = 1
            out = lm.network.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=mechanism.max_new_tokens, do_sample=True,
                temperature=1.0, top_k=0, top_p=1.0, logits_processor=LogitsProcessorList([SameDistribution()]),
                eos_token_id=list(lm.end_token_ids), pad_token_id=lm.end_token_ids[0])
            for row in out[:, width:].tolist():
                for token in row:
                    drawn += 1
                    if token in ends:
                        break
    return time.perf_counter() - start, drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="32 texts (about 2 minutes on 2 cores)")
    parser.add_argument("--texts", type=int, default=96)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--epsilon", type=float, default=30.0)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    args = parser.parse_args()
    count = 32 if args.quick else args.texts

    import torch

    from textveil.mechanisms.paraphrase import Paraphrase

    texts, source = bench_texts(count)
    mechanism = Paraphrase(args.epsilon, model=args.model, max_new_tokens=args.max_new_tokens, seed=1,
                           batch_size=args.batch)
    lm = mechanism._lm()
    run_textveil(mechanism, texts[:4])  # warm: the opening's cache, first-touch of the weights
    ours_s, ours_tokens, read_tokens = run_textveil(mechanism, texts)
    gen_s, gen_tokens = run_generate(mechanism, texts, args.batch)
    config = lm.network.config
    rate = bare_product_rate(args.batch, config.hidden_size, config.intermediate_size)
    flops = 2.0 * linear_parameters(lm.network) * (ours_tokens + read_tokens)
    ceiling = ours_tokens / (flops / rate)
    ours_rate, gen_rate = ours_tokens / ours_s, gen_tokens / gen_s
    print(json.dumps({
        "benchmark": "paraphrase", "model": lm.name, "device": lm.device, "texts": count, "source": source,
        "batch": args.batch, "max_new_tokens": args.max_new_tokens, "epsilon": args.epsilon,
        "tokens_per_s": round(ours_rate, 1), "tokens": ours_tokens, "seconds": round(ours_s, 2),
        "generate_tokens_per_s": round(gen_rate, 1), "generate_tokens": gen_tokens, "generate_seconds": round(gen_s, 2),
        "ratio_vs_generate": round(ours_rate / gen_rate, 2),
        "ceiling_gflop_per_s": round(rate / 1e9, 1), "ceiling_tokens_per_s": round(ceiling, 1),
        "ratio_to_ceiling": round(ours_rate / ceiling, 2), "prompt_tokens_read": read_tokens,
        "torch_threads": torch.get_num_threads(), "machine": machine_info(),
    }, indent=2))


if __name__ == "__main__":
    main()
