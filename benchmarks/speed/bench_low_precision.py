"""Would a low-precision screen pay on this CPU? Matrix products of the decoder's shape, timed.

Exact decoding is one product per batch: noisy vectors (queries x dim) times the vocabulary
(rows x dim). A screen in lower precision with a proven error bound, then an exact re-ranking
of the few rows the bound cannot rule out (issue 14), can only beat the float32 search where
the low-precision product itself is clearly faster. This measures, for the default 29,980 x 384
vocabulary and the 10,000 x 50 GloVe shape:

- float32: numpy (BLAS) and torch;
- int8: torch's FBGEMM kernel (``torch.ops.quantized.linear``: unsigned 8-bit queries, signed
  weights, int32 sums; per-row weight scales). Its AVX2 inner loop adds pairs of 8-bit
  products in 16 bits with saturation, so a screen with a proof must keep either side to 7 bits
  (checked here: the largest error of the integer sums, with and without that limit);
- float16 and bfloat16: torch ``matmul``.

Rows per second are queries decoded per second (higher is better), the median of the repeats,
both cores. Run::

    .venv/bin/python benchmarks/speed/bench_low_precision.py [--queries 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from collections.abc import Callable

import numpy as np

SHAPES = {"default 384-d": (29_980, 384), "GloVe 50d": (10_000, 50)}


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    run()  # warm: packing, first-touch
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def int8_products(rows: int, dim: int, queries: int, weight_limit: int, rng: np.random.Generator):
    """FBGEMM's product of random 8-bit queries (0..255) and weights (-limit..limit), and the
    largest error of its integer sums against exact integer arithmetic."""
    import torch

    weights = torch.from_numpy(rng.integers(-weight_limit, weight_limit + 1, (rows, dim)).astype(np.int8))
    codes = torch.from_numpy(rng.integers(0, 256, (queries, dim)).astype(np.uint8))
    with warnings.catch_warnings():  # the quantized-tensor constructors warn that they are deprecated
        warnings.simplefilter("ignore")
        packed = torch.ops.quantized.linear_prepack(
            torch._make_per_channel_quantized_tensor(weights, torch.ones(rows, dtype=torch.double),
                                                     torch.zeros(rows, dtype=torch.long), 0), None)
        quantized = torch._make_per_tensor_quantized_tensor(codes, 1.0, 128)
        exact = (codes.double() - 128) @ weights.double().T

    def product() -> object:
        return torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32(
            quantized.dequantize(), 1.0, 128, packed)

    def product_8bit_out() -> object:  # the fastest form: 8-bit scores out (too coarse for a proof)
        return torch.ops.quantized.linear(quantized, packed, float(exact.abs().max()) / 127, 128)

    error = float((product().double() - exact).abs().max())  # type: ignore[union-attr]
    return product, product_8bit_out, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import torch

    torch.backends.quantized.engine = "fbgemm" if "fbgemm" in torch.backends.quantized.supported_engines else "x86"
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads), numpy {np.__version__}")
    rng = np.random.default_rng(0)
    for name, (rows, dim) in SHAPES.items():
        vocabulary = rng.standard_normal((rows, dim)).astype(np.float32)
        queries = rng.standard_normal((args.queries, dim)).astype(np.float32)
        v_torch, q_torch = torch.from_numpy(vocabulary), torch.from_numpy(queries)
        runs: dict[str, Callable[[], object]] = {
            "float32 numpy": lambda: queries @ vocabulary.T,
            "float32 torch": lambda: q_torch @ v_torch.T,
            "float16 torch": lambda: q_torch.half() @ v_torch.half().T,
            "bfloat16 torch": lambda: q_torch.bfloat16() @ v_torch.bfloat16().T,
        }
        errors = {}
        for limit in (127, 64):
            full, short, error = int8_products(rows, dim, args.queries, limit, rng)
            label = "8-bit" if limit == 127 else "7-bit"
            runs[f"int8 FBGEMM, {label} weights, float32 out"] = full
            runs[f"int8 FBGEMM, {label} weights, 8-bit out"] = short
            errors[label] = error
        seconds = {label: median_seconds(run, args.repeats) for label, run in runs.items()}
        base = seconds["float32 numpy"]
        print(f"\n== {name}: {args.queries} queries x {rows:,} rows x {dim} ==")
        for label, spent in seconds.items():
            print(f"  {label:<42} {args.queries / spent:>10,.0f} rows/s  {base / spent:5.2f}x float32 numpy")
        print(f"  int8 integer sums, largest error: 8-bit weights {errors['8-bit']:,.0f} (saturation), "
              f"7-bit weights {errors['7-bit']:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
