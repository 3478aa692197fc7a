"""Benchmark paper 001's sweep: ``emp`` over an epsilon grid, risk on C50, topic utility on BBC.

It runs exactly what ``textveil evaluate`` runs (the same corpus loading and ``run_experiment``),
with an empty release cache so every grid point is released from scratch, and prints:

- the machine (CPU, cores, RAM, BLAS) and the 1-minute load average before and after, because a
  busy machine slows every stage;
- the time of each stage (load embeddings, fit attacks, prepare utility tasks, release, attack,
  measure utility) and of each attack and utility task summed over the grid, against the
  15-minute target for the whole sweep;
- per grid point: release seconds and word tokens released per second;
- the peak resident memory of the process.

The defaults are the committed report's command (docs/results/paper001-c50-bbc)::

    textveil evaluate --risk-corpus ../shared/data/reuters_c50 \\
        --utility-corpus ../shared/data/bbc_news/bbc --utility-encoding latin-1 \\
        --grid 10,15,20,25,30 --unknown-per-label 10 \\
        --attacks impostors,embedding-1nn,char3-svm,fasttext-char --seed 1 --out DIR

Run from the project root (about 8-12 minutes on 2 idle cores)::

    .venv/bin/python benchmarks/speed/bench_sweep.py
    .venv/bin/python benchmarks/speed/bench_sweep.py --json sweep.json --report DIR
    .venv/bin/python benchmarks/speed/bench_sweep.py --grid 10,20 --utility topic-fasttext   # a shorter run

The default embeddings are built first if they are not cached (not timed as part of the sweep).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import load_average, machine_info, peak_rss_mib, say  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT / ".." / "shared" / "data"
TARGET_SECONDS = 15 * 60
DEFAULT_ATTACKS = "impostors,embedding-1nn,char3-svm,fasttext-char"


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--risk-corpus", type=Path, default=SHARED_DATA / "reuters_c50")
    parser.add_argument("--utility-corpus", type=Path, default=SHARED_DATA / "bbc_news" / "bbc")
    parser.add_argument("--utility-encoding", default="latin-1")
    parser.add_argument("--grid", default="10,15,20,25,30")
    parser.add_argument("--attacks", default=DEFAULT_ATTACKS)
    parser.add_argument("--utility", default=None, help="comma-separated utility tasks (default: all, as the CLI)")
    parser.add_argument("--unknown-per-label", type=int, default=10)
    parser.add_argument("--decode", default="exact", choices=("exact", "approx"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="PATH", help="also write every figure to this JSON file")
    parser.add_argument("--report", metavar="DIR", help="also write the evaluation report into this folder")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    for path in (args.risk_corpus, args.utility_corpus):
        if not path.exists():
            say(f"{path} is absent: this benchmark needs the shared corpora beside the checkout")
            return 2

    from textveil.embeddings.default_model import load_embeddings
    from textveil.evaluation import ExperimentPlan, load_evaluation_corpora, run_experiment, write_report
    from textveil.evaluation.utility_tasks import default_utility_tasks

    machine = machine_info()
    say(f"machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs, {machine['ram_gib']} GiB, "
        f"Python {machine['python']}, numpy {machine['numpy']}, BLAS {'; '.join(machine['blas']) or '?'}")
    load_embeddings("default")  # build once if absent, outside the timed sweep

    started = time.perf_counter()
    plan = ExperimentPlan(
        grid=[float(v) for v in args.grid.split(",")],
        attacks=[a for a in args.attacks.split(",") if a],
        utility=[u for u in args.utility.split(",") if u] if args.utility else default_utility_tasks(),
        seed=args.seed, mechanism_options={"decode": args.decode},
    )
    corpora = load_evaluation_corpora(
        args.risk_corpus, utility_corpus=args.utility_corpus, unknown_per_label=args.unknown_per_label,
        utility_encoding=args.utility_encoding, seed=args.seed,
    )
    read_seconds = time.perf_counter() - started
    say(f"load average before: {load_average()}; corpora read in {read_seconds:.1f} s: "
        f"{len(corpora.risk_known)} known / {len(corpora.risk_unknown)} unknown risk texts, "
        f"{len(corpora.utility_train or [])} / {len(corpora.utility_test or [])} utility train / test texts")

    with tempfile.TemporaryDirectory(prefix="textveil-sweep-cache-") as cache:
        results = run_experiment(corpora, plan, cache_folder=Path(cache),
                                 log=lambda message: say(f"  [{time.perf_counter() - started:6.1f} s] {message}"))
    total = time.perf_counter() - started
    load_after = load_average()

    say("\nstage                        seconds")
    for stage, seconds in results["timings"].items():
        say(f"  {stage:<26} {seconds:8.1f}")
    say(f"  {'whole sweep incl. reading':<26} {total:8.1f}   (target < {TARGET_SECONDS} s: "
        f"{'met' if total < TARGET_SECONDS else 'NOT met'})")
    say("\ntask (summed over the grid)          seconds")
    for task, seconds in sorted(results["task_seconds"].items(), key=lambda item: -item[1]):
        say(f"  {task:<34} {seconds:8.1f}")
    say("\ngrid point   release s   words released/s")
    per_point = []
    for point in results["points"]:
        words = point["release"].get("words_protected", 0)
        seconds = point["seconds"]["release"]
        # a point read from the release cache took no release time: it says nothing of speed
        fresh = not point["release"].get("read_from_cache")
        rate = words / seconds if words and seconds and fresh else None
        per_point.append({"label": point["label"], **point["seconds"], "words": words, "words_per_second": rate})
        say(f"  {point['label']:<10} {seconds:9.1f}   {f'{rate:,.0f}' if rate else '-'}")
    peak = peak_rss_mib()
    say(f"\npeak resident memory {peak:,.0f} MiB; load average after: {load_after}")

    if args.report:
        write_report(results, args.report, title=f"textveil evaluation: emp on {corpora.risk_known.name}")
        say(f"report written to {args.report}")
    if args.json:
        figures = {"machine": {**machine, "load_average_1min_at_end": load_after}, "total_seconds": round(total, 1),
                   "read_seconds": round(read_seconds, 1), "timings": results["timings"],
                   "task_seconds": results["task_seconds"], "points": per_point, "peak_rss_mib": round(peak),
                   "target_seconds": TARGET_SECONDS, "plan": results["plan"]}
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
