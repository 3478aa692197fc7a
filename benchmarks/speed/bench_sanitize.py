"""Benchmark the Earth Mover's privacy (``emp``) mechanism: throughput, decoding cost, memory.

What it measures, on the machine it runs on (printed first: CPU, cores, RAM, load, versions):

1. End-to-end ``EarthMoversPrivacy(epsilon=20).sanitize_many`` throughput, in word tokens per
   second (sum of ``release.guarantee.words_protected``), over real news text (Reuters C50
   test documents from ``../shared/data/reuters_c50/C50test``, read with ``newline=''`` so
   CRLF is kept; about 52,000 words) or, where that folder is absent, text synthesised from
   the vocabulary. Default 30,000-word embeddings, exact decoding. Building the neighbour
   index is timed separately and excluded; the first (cold) run is reported apart.
2. A bare exact nearest-neighbour search with the same number of noisy vectors (the same
   words' vectors plus Laplace noise at the same epsilon) over the same vocabulary matrix:
   faiss ``IndexFlatL2``, a blocked numpy matrix product + arg-max, and the same with the blocks
   spread over worker threads (BLAS single-threaded). The fastest of the three is the
   baseline; the ratio end-to-end / bare says how much of the mechanism's time is the
   unavoidable search (target >= 0.7). The same for ``decode="screened"`` (the same words: the
   releases are compared), against the target of 1.3x the bare float32 search. The timed runs of parts 1 and 2 alternate, so both see
   the same machine load; the ratio is also given on process CPU time. A cProfile run breaks
   the end-to-end time down by stage.
3. Peak resident memory of this process (``ru_maxrss``) after parts 1-2 (target < 1.5 GB) and
   at the end, plus the peak of a fresh process that only loads the embeddings and sanitizes.
4. (not with ``--quick``) The approximate decoder (``decode="approx"``): briefly on the
   default vocabulary, then on a 100,000-word one (``load_embeddings(vocab_size=100_000)``,
   distilled once in a child process if not cached): index build times, search speed of
   approx vs exact, and agreement with exact decoding (fraction of noisy vectors decoded to
   the same word) at epsilon 10, 20 and 30 for word tokens sampled from the text plus Laplace
   noise (``sample_laplace_noise``); the speed/agreement trade-off over the number of probed
   lists; the end-to-end speed of ``decode="approx"``; and, for comparison, a faiss HNSW index
   as the previous decoder used (skip it with ``--no-hnsw``).

Run from the project root::

    .venv/bin/python benchmarks/speed/bench_sanitize.py              # full: ~4 min on 2 idle cores, ~15 loaded
    .venv/bin/python benchmarks/speed/bench_sanitize.py --quick      # about a minute, no approx part
    .venv/bin/python benchmarks/speed/bench_sanitize.py --json bench.json

Timings use ``time.perf_counter``; repeated measurements report the median. The numbers are
wall-clock: on a shared machine, other processes' load (printed) slows everything down.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import load_average, machine_info, peak_rss_mib, repeat, say, timed  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
C50_TEST = REPO_ROOT / ".." / "shared" / "data" / "reuters_c50" / "C50test"
EPSILON = 20.0
AGREEMENT_EPSILONS = (10.0, 20.0, 30.0)
LARGE_VOCAB = 100_000


# --------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------


def reuters_documents(target_words: int) -> list[str] | None:
    """C50 test documents, one author after another in turn, until ``target_words`` words."""
    from textveil.text.tokenize import tokenize

    if not C50_TEST.is_dir():
        return None
    authors = [sorted(d.glob("*.txt")) for d in sorted(C50_TEST.iterdir()) if d.is_dir()]
    documents: list[str] = []
    words = 0
    for position in range(max((len(files) for files in authors), default=0)):
        for files in authors:
            if position < len(files):
                with open(files[position], encoding="utf-8", errors="replace", newline="") as handle:
                    text = handle.read()
                documents.append(text)
                words += sum(1 for token in tokenize(text) if token.is_word)
                if words >= target_words:
                    return documents
    return documents


def synthetic_documents(vocabulary: list[str], target_words: int, seed: int) -> list[str]:
    """Zipf-distributed vocabulary words in sentences and CRLF paragraphs (when C50 is absent)."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / (np.arange(len(vocabulary)) + 10.0)
    weights /= weights.sum()
    documents: list[str] = []
    words = 0
    while words < target_words:
        sentences = []
        for _ in range(int(rng.integers(20, 40))):
            picked = [vocabulary[i] for i in rng.choice(len(vocabulary), int(rng.integers(6, 25)), p=weights)]
            picked[0] = picked[0][:1].upper() + picked[0][1:]
            if len(picked) > 8:
                picked[len(picked) // 2] += ","
            sentences.append(" ".join(picked) + ".")
            words += len(picked)
        documents.append("\r\n\r\n".join(" ".join(sentences[i : i + 5]) for i in range(0, len(sentences), 5)))
    return documents


def word_tokens(documents: list[str]) -> list[str]:
    from textveil.text.tokenize import tokenize

    return [token.text for text in documents for token in tokenize(text) if token.is_word]


# --------------------------------------------------------------------------------------------
# bare exact search
# --------------------------------------------------------------------------------------------


def numpy_nearest(vocabulary: np.ndarray, queries: np.ndarray, block: int = 2048) -> np.ndarray:
    """Exact nearest rows by blocked ``q.v - |v|^2/2`` (ranks like -|q - v|^2) and arg-max."""
    half_norms = 0.5 * np.einsum("ij,ij->i", vocabulary, vocabulary)
    out = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), block):
        scores = queries[start : start + block] @ vocabulary.T
        scores -= half_norms
        out[start : start + block] = scores.argmax(axis=1)
    return out


def numpy_threaded_nearest(vocabulary: np.ndarray, queries: np.ndarray, block: int = 1024,
                           threads: int | None = None) -> np.ndarray:
    """The same, with blocks of queries spread over worker threads and BLAS single-threaded."""
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    half_norms = 0.5 * np.einsum("ij,ij->i", vocabulary, vocabulary)
    out = np.empty(len(queries), dtype=np.int64)

    def solve(start: int) -> None:
        scores = queries[start : start + block] @ vocabulary.T
        scores -= half_norms
        out[start : start + block] = scores.argmax(axis=1)

    if threads is None:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(solve, range(0, len(queries), block)))
    return out


def faiss_nearest(index: Any, queries: np.ndarray) -> np.ndarray:
    return index.search(queries, 1)[1][:, 0]


def noisy_vectors(embeddings: Any, words: list[str], epsilon: float, seed: int) -> np.ndarray:
    from textveil.mechanisms.sampling import make_rng, sample_laplace_noise

    radius_rng, direction_rng = make_rng(seed).spawn(2)
    vectors = embeddings.embed(words)
    noise = sample_laplace_noise(len(words), embeddings.dim, epsilon, radius_rng, direction_rng)
    return np.ascontiguousarray((vectors + noise).astype(np.float32))


# --------------------------------------------------------------------------------------------
# the parts
# --------------------------------------------------------------------------------------------


def profile_breakdown(run: Callable[[], Any]) -> dict[str, float]:
    """Seconds (cumulative, under cProfile) spent in the main stages of one run."""
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.runcall(run)
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    stages = {
        "nearest-word search (index.nearest)": ("nearest",),
        "noise sampling (sample_laplace_noise)": ("sample_laplace_noise",),
        "tokenizing + planning (_plan)": ("_plan",),
        "vector look-up (WordEmbeddings.embed)": ("embed",),
        "release assembly (_assemble)": ("_assemble",),
    }
    found = {name: 0.0 for name in stages}
    for (filename, _, function), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "textveil" not in filename and "neighbours" not in filename:
            continue
        for name, functions in stages.items():
            if function in functions:
                found[name] = max(found[name], cumulative)
    found["everything else"] = max(0.0, total - sum(found.values()))
    found["total (profiled)"] = total
    return found


def part_sanitize_and_bare(args: argparse.Namespace, results: dict[str, Any]) -> tuple[Any, list[str], list[str]]:
    """Parts 1 and 2; their timed runs alternate, so both see the same machine load."""
    import faiss

    from textveil.embeddings import load_embeddings
    from textveil.mechanisms.earth_movers import EarthMoversPrivacy

    say("== 1. end-to-end sanitize_many (default 30,000-word vocabulary, exact decoding) ==")
    embeddings, load_s = timed(load_embeddings)
    documents = reuters_documents(args.words)
    source = f"Reuters C50 test ({C50_TEST.resolve()})"
    if not documents:
        documents = synthetic_documents(embeddings.words, args.words, args.seed)
        source = "synthetic text from the vocabulary (C50 not found)"
    words = word_tokens(documents)
    say(f"vocabulary: {embeddings.name}, {len(embeddings):,} x {embeddings.dim}, loaded in {load_s:.2f} s")
    say(f"text: {source}: {len(documents)} documents, {sum(map(len, documents)):,} characters, {len(words):,} word tokens")

    def mechanism(decode: str = "exact") -> Any:
        return EarthMoversPrivacy(epsilon=EPSILON, embeddings=embeddings, seed=args.seed, decode=decode)

    index, build_s = timed(lambda: mechanism().index)
    say(f"index build (one-time, excluded): {build_s:.3f} s ({type(index).__name__})")
    screened_index, screened_build_s = timed(lambda: mechanism("screened").index)
    say(f"screened index build (one-time, excluded): {screened_build_s:.3f} s")
    releases, cold_s = timed(lambda: mechanism().sanitize_many(documents))
    protected = sum(r.guarantee.words_protected for r in releases)
    changed = sum(len(r.changes) for r in releases)
    say(f"words protected: {protected:,} ({changed / protected:.1%} replaced by another word)")
    say(f"cold run (first, fills the OOV cache; not in the median): {cold_s:.2f} s = {protected / cold_s:,.0f} words/s")

    # the bare searches: the same words' vectors plus noise at the same epsilon
    vocabulary = np.ascontiguousarray(embeddings.vectors, dtype=np.float32)
    queries = noisy_vectors(embeddings, words[:protected], EPSILON, args.seed)
    flat = faiss.IndexFlatL2(vocabulary.shape[1])
    flat.add(vocabulary)
    runs: dict[str, Callable[[], Any]] = {
        "sanitize": lambda: mechanism().sanitize_many(documents),
        "screened": lambda: mechanism("screened").sanitize_many(documents),
        "faiss": lambda: faiss_nearest(flat, queries),
        "numpy": lambda: numpy_nearest(vocabulary, queries),
        "numpy_threads": lambda: numpy_threaded_nearest(vocabulary, queries),
    }
    bare = {"faiss": "faiss IndexFlatL2", "numpy": "numpy blocked GEMM", "numpy_threads": "numpy blocked, threads"}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    answers: dict[str, Any] = {}
    for _ in range(args.ratio_reps):  # interleaved: sanitize, faiss, numpy, sanitize, ...
        for name, run in runs.items():
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            answers[name] = run()
            wall[name].append(time.perf_counter() - wall_start)
            cpu[name].append(time.process_time() - cpu_start)
    median = {name: statistics.median(times) for name, times in wall.items()}
    e2e = protected / median["sanitize"]
    say(f"warm runs x{args.ratio_reps}: median {median['sanitize']:.2f} s (min {min(wall['sanitize']):.2f}, "
        f"max {max(wall['sanitize']):.2f}) = {e2e:,.0f} words/s")
    results["sanitize"] = {
        "text_source": source,
        "documents": len(documents),
        "word_tokens": len(words),
        "words_protected": protected,
        "words_replaced": changed,
        "vocabulary": len(embeddings),
        "dim": embeddings.dim,
        "epsilon": EPSILON,
        "load_embeddings_s": load_s,
        "index_build_s": build_s,
        "cold_s": cold_s,
        "warm_s": wall["sanitize"],
        "warm_cpu_s": cpu["sanitize"],
        "warm_median_s": median["sanitize"],
        "words_per_s": e2e,
        "words_per_s_cold": protected / cold_s,
    }

    say()
    say("== 2. bare exact nearest-neighbour search, same vocabulary, same number of noisy vectors ==")
    say(f"{len(queries):,} noisy vectors ({embeddings.dim}-d, epsilon {EPSILON:g}) against {len(vocabulary):,} words; "
        "timed runs alternate with part 1's")
    speed = {name: len(queries) / median[name] for name in bare}
    agree = min(float(np.mean(answers["faiss"] == answers[name])) for name in bare)
    baseline_key = max(bare, key=lambda name: speed[name])
    baseline_name, baseline = bare[baseline_key], speed[baseline_key]
    ratio = e2e / baseline

    def best_bare(index: int, times: dict[str, list[float]]) -> float:
        return max(len(queries) / times[name][index] for name in bare)

    # each repetition's end-to-end run against the bare runs right after it (same load)
    paired = [(protected / wall["sanitize"][i]) / best_bare(i, wall) for i in range(args.ratio_reps)]
    paired_cpu = [(protected / cpu["sanitize"][i]) / best_bare(i, cpu) for i in range(args.ratio_reps)]
    best_ratio = (protected / min(wall["sanitize"])) / max(len(queries) / min(wall[name]) for name in bare)
    for name, label in bare.items():
        say(f"{label:<24} x{args.ratio_reps}: median {median[name]:6.2f} s = {speed[name]:>7,.0f} vectors/s "
            f"(best {len(queries) / min(wall[name]):,.0f})")
    say(f"the bare searches pick the same word for {agree:.4%} of the vectors (least agreeing pair with faiss)")
    say(f"baseline: {baseline_name}; ratio end-to-end / bare search:")
    say(f"  of the medians                      {e2e:,.0f} / {baseline:,.0f} = {ratio:.3f} (target >= 0.7)")
    say(f"  median of the paired repetitions    {statistics.median(paired):.3f} "
        f"(each: {', '.join(f'{r:.2f}' for r in paired)})")
    say(f"  of the best (least disturbed) runs  {best_ratio:.3f}")
    say(f"  on process CPU time, paired median  {statistics.median(paired_cpu):.3f}")
    say(f"  vs faiss IndexFlatL2 alone, of the medians: {e2e / speed['faiss']:.3f}")
    screened = protected / median["screened"]
    identical = [r.text for r in answers["screened"]] == [r.text for r in answers["sanitize"]]
    screened_paired = [(protected / wall["screened"][i]) / best_bare(i, wall) for i in range(args.ratio_reps)]
    say(f"end-to-end with decode='screened' (k={screened_index.last_dims} of {embeddings.dim} coordinates screened, "
        f"{screened_index.last_candidates:.1f} rows re-ranked per word): {screened:,.0f} words/s; "
        f"ratio to the bare float32 search {screened / baseline:.3f} of the medians, "
        f"{statistics.median(screened_paired):.3f} paired (target >= 1.3); "
        f"releases identical to decode='exact': {identical}")

    say("where sanitize_many spends its time (one extra run under cProfile; profiling inflates Python code):")
    breakdown = profile_breakdown(lambda: mechanism().sanitize_many(documents))
    total = breakdown["total (profiled)"]
    for name, seconds in breakdown.items():
        say(f"  {name:<42} {seconds:7.2f} s  {seconds / total:6.1%}")
    results["bare_search"] = {
        "queries": len(queries),
        "seconds": {name: wall[name] for name in bare},
        "cpu_seconds": {name: cpu[name] for name in bare},
        "vectors_per_s": speed,
        "faiss_vectors_per_s": speed["faiss"],
        "numpy_vectors_per_s": speed["numpy"],
        "numpy_threads_vectors_per_s": speed["numpy_threads"],
        "min_agreement_with_faiss": agree,
        "baseline": baseline_name,
        "baseline_vectors_per_s": baseline,
        "ratio_end_to_end_over_bare": ratio,
        "ratio_paired": paired,
        "ratio_paired_median": statistics.median(paired),
        "ratio_best_runs": best_ratio,
        "ratio_cpu_paired_median": statistics.median(paired_cpu),
        "ratio_over_faiss": e2e / speed["faiss"],
        "screened": {"words_per_s": screened, "ratio_over_bare": screened / baseline,
                     "ratio_paired_median": statistics.median(screened_paired), "identical_to_exact": identical,
                     "dims_screened": screened_index.last_dims, "rows_reranked_per_word": screened_index.last_candidates,
                     "index_build_s": screened_build_s},
        "profile_s": breakdown,
        "load_average_1min": load_average(),
    }
    return embeddings, documents, words


def part_approx_default(args: argparse.Namespace, results: dict[str, Any], embeddings: Any, words: list[str]) -> None:
    """The approximate decoder on the default 30,000-word vocabulary, at epsilon 20 (for reference)."""
    from textveil.embeddings.neighbours import ApproximateNeighbourIndex
    from textveil.mechanisms.earth_movers import EarthMoversPrivacy

    say()
    say(f"== 4a. approximate decoding on the default {len(embeddings):,}-word vocabulary (epsilon {EPSILON:g}) ==")
    rng = np.random.default_rng(args.seed)
    sample = [words[i] for i in rng.choice(len(words), size=min(args.agreement_queries, len(words)), replace=False)]
    queries = noisy_vectors(embeddings, sample, EPSILON, args.seed + 1)
    exact = EarthMoversPrivacy(EPSILON, embeddings, decode="exact").index
    approx, build_s = timed(lambda: EarthMoversPrivacy(EPSILON, embeddings, decode="approx").index)
    assert isinstance(approx, ApproximateNeighbourIndex)
    truth, exact_times = repeat(lambda: exact.nearest(queries), args.reps)
    found, approx_times = repeat(lambda: approx.nearest(queries), args.reps)
    exact_vps = len(queries) / statistics.median(exact_times)
    approx_vps = len(queries) / statistics.median(approx_times)
    agreement = float(np.mean(found == truth))
    say(f"approx index build {build_s:.1f} s ({approx.lists} lists, {approx.probes} probed); {len(queries):,} queries: "
        f"exact {exact_vps:,.0f} vectors/s, approx {approx_vps:,.0f} vectors/s ({approx_vps / exact_vps:.1f}x), "
        f"agreement {agreement:.4f}")
    results["approx_default"] = {
        "vocabulary": len(embeddings),
        "approx_build_s": build_s,
        "approx_lists": approx.lists,
        "approx_probes": approx.probes,
        "queries": len(queries),
        "exact_vectors_per_s": exact_vps,
        "approx_vectors_per_s": approx_vps,
        "agreement_eps20": agreement,
    }


def mechanism_peak_rss_child(args: argparse.Namespace) -> float | None:
    """Peak RSS (MiB) of a fresh process that only loads the default embeddings and sanitizes the text."""
    code = (
        "import sys, resource; sys.path[:0] = [%r, %r]\n"
        "import bench_sanitize as b\n"
        "from textveil.embeddings import load_embeddings\n"
        "from textveil.mechanisms.earth_movers import EarthMoversPrivacy\n"
        "e = load_embeddings()\n"
        "docs = b.reuters_documents(%d) or b.synthetic_documents(e.words, %d, %d)\n"
        "EarthMoversPrivacy(epsilon=%r, embeddings=e, seed=%d).sanitize_many(docs)\n"
        "print(b.peak_rss_mib(own_only=True))\n"
    ) % (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1]),  # itself, bench_common
         args.words, args.words, args.seed, EPSILON, args.seed)
    try:
        done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        return float(done.stdout.strip().splitlines()[-1])
    except (subprocess.CalledProcessError, ValueError, IndexError) as exc:  # pragma: no cover
        say(f"(could not measure the mechanism alone: {exc})")
        return None


def ensure_large_vocabulary(results: dict[str, Any]) -> None:
    """Distil the 100k vocabulary once, in a child process (keeps torch out of our memory)."""
    from textveil.embeddings.default_model import default_embeddings_dir

    if (default_embeddings_dir(LARGE_VOCAB) / "meta.json").is_file():
        results["large_vocabulary_distil_s"] = None
        return
    say(f"distilling the {LARGE_VOCAB:,}-word vocabulary once (a few minutes; cached afterwards) ...")
    code = f"from textveil.embeddings import build_default_embeddings; build_default_embeddings({LARGE_VOCAB})"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    _, seconds = timed(lambda: subprocess.run([sys.executable, "-c", code], check=True, env=environment,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    say(f"distilled in {seconds:.0f} s")
    results["large_vocabulary_distil_s"] = seconds


def part_approx(args: argparse.Namespace, results: dict[str, Any], words: list[str]) -> None:
    import faiss

    from textveil.embeddings import load_embeddings
    from textveil.embeddings.neighbours import ApproximateNeighbourIndex, ExactNeighbourIndex
    from textveil.mechanisms.earth_movers import EarthMoversPrivacy

    say()
    say(f"== 4. approximate decoding on a {LARGE_VOCAB:,}-word vocabulary ==")
    ensure_large_vocabulary(results)
    embeddings, load_s = timed(lambda: load_embeddings(vocab_size=LARGE_VOCAB))
    vocabulary = np.ascontiguousarray(embeddings.vectors, dtype=np.float32)
    say(f"vocabulary: {embeddings.name}, {len(embeddings):,} x {embeddings.dim}, loaded in {load_s:.2f} s")

    exact, exact_build = timed(lambda: EarthMoversPrivacy(EPSILON, embeddings, decode="exact").index)
    approx, approx_build = timed(lambda: EarthMoversPrivacy(EPSILON, embeddings, decode="approx").index)
    assert isinstance(exact, ExactNeighbourIndex) and isinstance(approx, ApproximateNeighbourIndex)
    say(f"exact index build: {exact_build:.2f} s; approx index build: {approx_build:.1f} s "
        f"({approx.lists} k-means lists, {approx.probes} probed per query)")

    rng = np.random.default_rng(args.seed)
    sample = [words[i] for i in rng.choice(len(words), size=min(args.agreement_queries, len(words)), replace=False)]
    in_vocabulary = np.mean([w in embeddings for w in sample])
    say(f"queries: {len(sample):,} word tokens sampled from the text ({in_vocabulary:.1%} in the vocabulary) + Laplace noise")

    hnsw = None
    if not args.no_hnsw:
        def build_hnsw() -> Any:
            index = faiss.IndexHNSWFlat(vocabulary.shape[1], 32)
            index.hnsw.efConstruction = 80
            index.add(vocabulary)
            index.hnsw.efSearch = 64
            return index

        hnsw, hnsw_build = timed(build_hnsw)
        say(f"previous decoder for comparison: faiss HNSW (M=32, efConstruction=80, efSearch=64), built in {hnsw_build:.1f} s")
        results["hnsw_build_s"] = hnsw_build

    half_norms = 0.5 * np.einsum("ij,ij->i", vocabulary, vocabulary)
    rows_by_epsilon = []
    truths = []
    say(f"{'epsilon':>7} {'exact vec/s':>12} {'approx vec/s':>13} {'speed-up':>9} {'agreement':>10} "
        f"{'excess dist':>12}" + (f" {'HNSW vec/s':>11} {'HNSW agree':>11}" if hnsw is not None else ""))
    for epsilon in AGREEMENT_EPSILONS:
        queries = noisy_vectors(embeddings, sample, epsilon, args.seed + int(epsilon))
        truth, exact_times = repeat(lambda: exact.nearest(queries), 1)
        truths.append((epsilon, truth, queries))
        found, approx_times = repeat(lambda: approx.nearest(queries), args.reps)
        exact_vps = len(queries) / statistics.median(exact_times)
        approx_vps = len(queries) / statistics.median(approx_times)
        agreement = float(np.mean(found == truth))
        # how much farther the approximate word is, where it differs (squared distances)
        miss = found != truth
        q_norm = np.einsum("ij,ij->i", queries[miss], queries[miss])
        d_true = q_norm - 2 * np.einsum("ij,ij->i", queries[miss], vocabulary[truth[miss]]) + 2 * half_norms[truth[miss]]
        d_found = q_norm - 2 * np.einsum("ij,ij->i", queries[miss], vocabulary[found[miss]]) + 2 * half_norms[found[miss]]
        excess = float(np.median(np.sqrt(d_found) / np.sqrt(d_true) - 1)) if miss.any() else 0.0
        row = {
            "epsilon": epsilon,
            "mean_noise_radius": embeddings.dim / epsilon,
            "exact_vectors_per_s": exact_vps,
            "approx_vectors_per_s": approx_vps,
            "speedup": approx_vps / exact_vps,
            "agreement": agreement,
            "median_distance_excess_when_different": excess,
            "exact_s": exact_times,
            "approx_s": approx_times,
        }
        line = (f"{epsilon:>7g} {exact_vps:>12,.0f} {approx_vps:>13,.0f} {approx_vps / exact_vps:>8.1f}x "
                f"{agreement:>10.4f} {excess:>11.2%}")
        if hnsw is not None:
            hnsw_rows, hnsw_times = repeat(lambda: faiss_nearest(hnsw, queries), args.reps)
            row["hnsw_vectors_per_s"] = len(queries) / statistics.median(hnsw_times)
            row["hnsw_agreement"] = float(np.mean(hnsw_rows == truth))
            line += f" {row['hnsw_vectors_per_s']:>11,.0f} {row['hnsw_agreement']:>11.4f}"
        rows_by_epsilon.append(row)
        say(line)
    say("(excess dist: median relative extra Euclidean distance of the approx word, among disagreements)")

    default_probes = approx.probes
    sweep = []
    say(f"trade-off: probes per query (default {default_probes} of {approx.lists}), agreement / vectors/s")
    say(f"{'probes':>7} {'scanned':>8}" + "".join(f" {'eps ' + format(e, 'g'):>18}" for e in AGREEMENT_EPSILONS))
    for probes in sorted({max(1, approx.lists // d) for d in (32, 16, 12, 8, 4)} | {default_probes}):
        approx.probes = probes
        cells = []
        entry: dict[str, Any] = {"probes": probes, "fraction_scanned": probes / approx.lists}
        for epsilon, truth, queries in truths:
            found, times = repeat(lambda: approx.nearest(queries), 1)
            entry[f"eps{epsilon:g}"] = {"agreement": float(np.mean(found == truth)),
                                        "vectors_per_s": len(queries) / times[0]}
            cells.append(f" {entry[f'eps{epsilon:g}']['agreement']:>7.4f} / {len(queries) / times[0]:>8,.0f}")
        sweep.append(entry)
        say(f"{probes:>7} {probes / approx.lists:>8.1%}" + "".join(cells))
    approx.probes = default_probes

    texts = reuters_documents(args.words) or synthetic_documents(embeddings.words, args.words, args.seed)
    approx_emp = EarthMoversPrivacy(EPSILON, embeddings, decode="approx", seed=args.seed)
    releases, e2e_times = repeat(lambda: approx_emp.sanitize_many(texts), 2)  # the first fills the OOV cache
    protected = sum(r.guarantee.words_protected for r in releases)
    e2e_approx = protected / e2e_times[-1]
    say(f"end-to-end sanitize_many, decode='approx', epsilon {EPSILON:g}, {LARGE_VOCAB:,} words: "
        f"{e2e_approx:,.0f} words/s ({protected:,} words)")
    results["approx_large"] = {
        "vocabulary": len(embeddings),
        "load_embeddings_s": load_s,
        "exact_build_s": exact_build,
        "approx_build_s": approx_build,
        "approx_lists": approx.lists,
        "approx_probes": approx.probes,
        "queries": len(sample),
        "queries_in_vocabulary": float(in_vocabulary),
        "by_epsilon": rows_by_epsilon,
        "probes_sweep": sweep,
        "end_to_end_approx_words_per_s": e2e_approx,
        "load_average_1min": load_average(),
    }


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def summary(results: dict[str, Any]) -> None:
    s, b = results["sanitize"], results["bare_search"]
    table = [
        ("end-to-end sanitize (words/s, median warm)", f"{s['words_per_s']:,.0f}", ""),
        ("  cold first run (words/s)", f"{s['words_per_s_cold']:,.0f}", ""),
        ("  index build, excluded (s)", f"{s['index_build_s']:.3f}", ""),
        ("bare search faiss IndexFlatL2 (vectors/s)", f"{b['faiss_vectors_per_s']:,.0f}", ""),
        ("bare search numpy blocked (vectors/s)", f"{b['numpy_vectors_per_s']:,.0f}", ""),
        ("bare search numpy blocked, threads (vectors/s)", f"{b['numpy_threads_vectors_per_s']:,.0f}", ""),
        ("ratio end-to-end / bare, of the medians", f"{b['ratio_end_to_end_over_bare']:.3f}",
         ">= 0.7 " + ("PASS" if b["ratio_end_to_end_over_bare"] >= 0.7 else "FAIL")),
        ("  median of paired repetitions", f"{b['ratio_paired_median']:.3f}",
         ">= 0.7 " + ("PASS" if b["ratio_paired_median"] >= 0.7 else "FAIL")),
        ("  of the best runs", f"{b['ratio_best_runs']:.3f}", ""),
        ("  on CPU time (paired median)", f"{b['ratio_cpu_paired_median']:.3f}", ""),
        ("end-to-end decode='screened' / bare, paired", f"{b['screened']['ratio_paired_median']:.3f}",
         ">= 1.3 " + ("PASS" if b["screened"]["ratio_paired_median"] >= 1.3 else "FAIL")),
        ("  releases identical to decode='exact'", str(b["screened"]["identical_to_exact"]), ""),
        ("peak RSS, mechanism alone in a child (MiB)", f"{results['peak_rss_mib_mechanism'] or float('nan'):,.0f}", ""),
        ("peak RSS after parts 1-2 (MiB)", f"{results['peak_rss_mib_30k']:,.0f}",
         "< 1536 " + ("PASS" if results["peak_rss_mib_30k"] < 1536 else "FAIL")),
    ]
    if "approx_large" in results:
        a = results["approx_large"]
        d = results["approx_default"]
        table.append(("30k eps 20: approx / exact vectors/s (agreement)",
                      f"{d['approx_vectors_per_s']:,.0f} / {d['exact_vectors_per_s']:,.0f} ({d['agreement_eps20']:.4f})", ""))
        table.append(("100k: approx index build (s)", f"{a['approx_build_s']:.1f}",
                      "< 60 " + ("PASS" if a["approx_build_s"] < 60 else "FAIL")))
        for row in a["by_epsilon"]:
            eps = row["epsilon"]
            target = "" if eps < 15 else (">= 0.95 " + ("PASS" if row["agreement"] >= 0.95 else "FAIL"))
            table.append((f"100k eps {eps:g}: approx / exact vectors/s",
                          f"{row['approx_vectors_per_s']:,.0f} / {row['exact_vectors_per_s']:,.0f}"
                          f" ({row['speedup']:.1f}x)", ""))
            table.append((f"100k eps {eps:g}: agreement with exact", f"{row['agreement']:.4f}", target))
        table.append(("100k: end-to-end, decode='approx' (words/s)", f"{a['end_to_end_approx_words_per_s']:,.0f}", ""))
        table.append(("peak RSS at the end (MiB)", f"{results['peak_rss_mib_end']:,.0f}", ""))
    say()
    say("== summary ==")
    width = max(len(r[0]) for r in table)
    value_width = max(len(r[1]) for r in table)
    for name, value, target in table:
        say(f"{name:<{width}}  {value:>{value_width}}  {target}")
    say(f"load average (1 min): {results['machine']['load_average_1min_at_start']} at start, {load_average()} at end "
        f"on {results['machine']['usable_cpus']} usable CPUs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes; skips the 100k-vocabulary part")
    parser.add_argument("--json", metavar="PATH", help="also write every figure to this JSON file")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-hnsw", action="store_true", help="skip the HNSW comparison in the 100k part")
    args = parser.parse_args(argv)
    args.words = 15_000 if args.quick else 52_000
    args.reps = 2 if args.quick else 3  # repetitions of the cheaper measurements
    args.ratio_reps = 2 if args.quick else 5  # alternating end-to-end / faiss / numpy runs (parts 1-2)
    args.agreement_queries = 10_000

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    started = time.perf_counter()
    results: dict[str, Any] = {"mode": "quick" if args.quick else "full", "seed": args.seed}
    results["machine"] = machine = machine_info()
    say("== machine ==")
    for key, value in machine.items():
        say(f"{key:<28} {', '.join(value) if isinstance(value, list) else value}")
    say()

    embeddings, documents, words = part_sanitize_and_bare(args, results)
    results["peak_rss_mib_30k"] = peak_rss_mib()
    results["peak_rss_mib_mechanism"] = mechanism_peak_rss_child(args)
    say()
    say(f"== 3. peak resident memory after parts 1-2: {results['peak_rss_mib_30k']:,.0f} MiB (target < 1536 MiB) ==")
    if results["peak_rss_mib_mechanism"] is not None:
        say(f"(a fresh process that only loads the embeddings and sanitizes the same text peaks at "
            f"{results['peak_rss_mib_mechanism']:,.0f} MiB)")
    if not args.quick:
        part_approx_default(args, results, embeddings, words)
        part_approx(args, results, words)
    results["peak_rss_mib_end"] = peak_rss_mib()
    results["total_s"] = time.perf_counter() - started
    summary(results)
    say(f"total benchmark time: {results['total_s']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float) + "\n", encoding="utf-8")
        say(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
