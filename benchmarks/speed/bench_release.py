"""``textveil release`` at scale (issue 14): peak memory against corpus size, words/s with 1 and
2 Dask workers, and a kill-and-resume run checked byte-identical.

Corpora of 10k, 100k and 1M JSONL records of about ten words each are cut from the shared
corpora (ten-word windows of Reuters C50's articles and blog_short's posts, in a fixed shuffled
order; past the ~310,000 windows there are, records repeat them) into ``benchmarks/out/release/``
(built once, reused). Every measurement is ``textveil release`` in a child process, as a user
runs it; a sampler reads the resident memory (RSS, psutil) of the coordinator and of every
process under it (Dask's worker processes) ten times a second.

* **Memory flatness**: ``--sizes`` with ``--mechanism`` (default ``random``: no nearest-word
  decoding, so the run measures the pipeline itself: reading, seeds, Dask, shards, manifest;
  emp's exact decoding of the default 30k x 384 embeddings, ~1,000-2,000 words/s per core, would
  take hours over 1M records) on ``--flat-workers`` workers. Flat means the peak stays put while
  the corpus grows 100 times.
* **Scaling**: ``--scaling-sizes`` released with ``--scaling-mechanism`` (default emp at epsilon
  10, exact decoding) on each of ``--workers`` (1 and 2): words/s and the efficiency
  ``words/s(2) / (2 x words/s(1))``. Each figure is also given without the fixed start-up cost
  (importing, starting the cluster, loading the embeddings in each worker), measured by a run of
  100 records with the same settings.
* **Kill and resume**: the ``--kill-size`` corpus with the memory runs' mechanism on 2 workers,
  SIGKILLed at a random moment after its first shard is written, then run again: the shards must
  be byte-identical to an uninterrupted run with the same seed, every record there exactly once.

Writes ``docs/results/release/release.json`` and ``README.md`` (``--results``). Run from the
project root on an otherwise idle machine::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/speed/bench_release.py       # everything (~30 min on 2 cores)
    # a few minutes:
    .venv/bin/python benchmarks/speed/bench_release.py --sizes 10000 --scaling-sizes 2000 --kill-size 10000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py

from bench_common import machine_info, say  # noqa: E402

SHARED = ROOT / ".." / "shared" / "data"
DATA = ROOT / "benchmarks" / "out" / "release"
DEFAULT_RESULTS = ROOT / "docs" / "results" / "release"
TEXTVEIL = [sys.executable, "-m", "textveil.cli"]
WINDOW_WORDS = 10
SAMPLE_S = 0.1


# -- corpora ------------------------------------------------------------------------------


def source_windows() -> list[dict[str, str]]:
    """Ten-word windows of Reuters C50 (train and test) and blog_short, in a fixed shuffled order."""
    windows: list[dict[str, str]] = []
    c50 = SHARED / "reuters_c50"
    for path in sorted(c50.glob("C50*/*/*.txt")):
        words = path.read_text(encoding="latin-1").split()
        author = path.parent.name
        windows.extend({"source": "reuters_c50", "author": author, "text": " ".join(words[i:i + WINDOW_WORDS])}
                       for i in range(0, len(words) - WINDOW_WORDS + 1, WINDOW_WORDS))
    blogs = SHARED / "blog_short" / "blog_short.jsonl"
    for line in blogs.read_text(encoding="utf-8").splitlines():
        post = json.loads(line)
        words = post["text"].split()
        windows.extend({"source": "blog_short", "author": str(post["user"]), "text": " ".join(words[i:i + WINDOW_WORDS])}
                       for i in range(0, len(words) - WINDOW_WORDS + 1, WINDOW_WORDS))
    random.Random(14).shuffle(windows)
    return windows


def build_corpus(size: int, windows: list[dict[str, str]] | None) -> Path:
    """``benchmarks/out/release/corpus-<size>.jsonl`` (built once): records ``{id, source, author, text}``."""
    path = DATA / f"corpus-{size}.jsonl"
    meta = path.with_suffix(".meta.json")
    if path.is_file() and meta.is_file() and json.loads(meta.read_text()).get("records") == size:
        return path
    assert windows is not None
    DATA.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as stream:
        for i in range(size):
            stream.write(json.dumps({"id": i, **windows[i % len(windows)]}, ensure_ascii=False) + "\n")
    meta.write_text(json.dumps({"records": size, "windows": len(windows), "bytes": path.stat().st_size}))
    return path


# -- one run ------------------------------------------------------------------------------


def release(corpus: Path, out: Path, mechanism: list[str], workers: int, shard_size: int, seed: int,
            kill_after_first_shard_s: float | None = None, resume: bool = False) -> dict[str, Any]:
    """``textveil release`` in a child process, its wall time and peak memory (RSS, MiB): of the
    coordinator, of the largest worker, and of all of them together (sampled). Into an empty
    ``out`` unless ``resume``; SIGKILLed ``kill_after_first_shard_s`` after its first shard."""
    import psutil

    if not resume:
        _fresh(out)
    command = [*TEXTVEIL, "release", str(corpus), "--out", str(out), *mechanism, "--seed", str(seed),
               "--workers", str(workers), "--shard-size", str(shard_size)]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    log = out.with_name(out.name + ".log")
    load = os.getloadavg()[0]  # the machine may be shared: each run says how busy it was
    started = time.perf_counter()
    with log.open("wb") as stderr:
        process = psutil.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=stderr)
        peaks = {"coordinator": 0.0, "worker": 0.0, "total": 0.0}
        first_shard_at = None
        killed = False
        while process.poll() is None:
            try:
                children = process.children(recursive=True)
                coordinator = process.memory_info().rss
                others = []
                for child in children:
                    try:
                        others.append(child.memory_info().rss)
                    except psutil.Error:
                        pass
            except psutil.Error:
                break
            peaks["coordinator"] = max(peaks["coordinator"], coordinator / 2**20)
            peaks["worker"] = max([peaks["worker"], *(rss / 2**20 for rss in others)])
            peaks["total"] = max(peaks["total"], (coordinator + sum(others)) / 2**20)
            if kill_after_first_shard_s is not None:
                if first_shard_at is None and any(out.glob("shard-*")):
                    first_shard_at = time.perf_counter()
                if first_shard_at is not None and time.perf_counter() - first_shard_at >= kill_after_first_shard_s:
                    process.send_signal(signal.SIGKILL)
                    killed = True
            time.sleep(SAMPLE_S)
        code = process.wait()
    wall = time.perf_counter() - started
    result: dict[str, Any] = {"command": " ".join(command[2:]).replace(str(ROOT) + "/", ""), "workers": workers,
                              "shard_size": shard_size, "wall_s": round(wall, 2), "exit": code,
                              "load_average_at_start": round(load, 2),
                              "peak_rss_mib": {k: round(v, 1) for k, v in peaks.items()}}
    if killed:
        result["killed_s_after_first_shard"] = round(kill_after_first_shard_s or 0, 2)
        result["shards_written_when_killed"] = len(list(out.glob("shard-*")))
        return result
    if code != 0:
        raise SystemExit(f"textveil release failed ({code}): {log.read_text()[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    records, words = manifest["totals"]["records"], manifest["totals"]["words"]
    result.update({"records": records, "words": words, "shards": manifest["totals"]["shards"],
                   "records_per_s": round(records / wall, 1), "words_per_s": round(words / wall, 1)})
    return result


CONTROL = """
import json, sys, time
from textveil.release.seeds import record_seeds
from textveil.release.shards import MechanismSpec, mechanism_for
from textveil.text.tokenize import find_words
name, options, corpus, count = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
mechanism = mechanism_for(MechanismSpec(name, options, "default"))
texts = []
with open(corpus, encoding="utf-8") as stream:
    for line in stream:
        texts.append(json.loads(line)["text"])
        if len(texts) == count:
            break
mechanism.sanitize_records(texts[:20], record_seeds(0, 0, 20))  # warm
started = time.perf_counter()
mechanism.sanitize_records(texts, record_seeds(1, 0, len(texts)))
print(sum(len(find_words(t)) for t in texts) / (time.perf_counter() - started))
"""


def machine_parallelism(corpus: Path, name: str, epsilon: float | None, count: int) -> dict[str, Any]:
    """The control beside the scaling runs: the bare mechanism (``sanitize_records``, no Dask, no
    files) in one process, then in two processes at once. Their summed words/s over the one's is
    the parallelism the machine gives this work now (2.0: two free cores); on a shared machine it
    can be far less, and no pipeline can scale better than it."""
    options = json.dumps({} if epsilon is None else {"epsilon": epsilon})
    command = [sys.executable, "-c", CONTROL, name, options, str(corpus), str(count)]
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    alone = float(subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                                 check=True).stdout)
    pair = [subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    together = sum(float(process.communicate()[0]) for process in pair)
    return {"texts": count, "words_per_s_one_process": round(alone, 1),
            "words_per_s_two_processes": round(together, 1), "parallelism": round(together / alone, 3)}


def concatenated_digest(out: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(out.glob("shard-*")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ids_exactly_once(out: Path, count: int) -> bool:
    """Every record id 0..count-1 in the shards, once each, in order."""
    expected = 0
    for path in sorted(out.glob("shard-*")):
        with path.open("rb") as stream:
            for line in stream:
                if json.loads(line)["id"] != expected:
                    return False
                expected += 1
    return expected == count


# -- the benchmark ------------------------------------------------------------------------


def mechanism_args(name: str, epsilon: float | None) -> list[str]:
    return ["-m", name, *(["-e", f"{epsilon:g}"] if epsilon is not None else [])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="corpus sizes (records) of the memory runs")
    parser.add_argument("--mechanism", default="random", help="mechanism of the memory and kill runs")
    parser.add_argument("--flat-workers", type=int, default=2, help="Dask workers of the memory runs")
    parser.add_argument("--scaling-sizes", default="10000", help="corpus sizes of the 1-vs-2-worker runs ('' for none)")
    parser.add_argument("--scaling-mechanism", default="emp", help="mechanism of the scaling runs")
    parser.add_argument("--epsilon", type=float, default=10.0, help="epsilon of the scaling mechanism")
    parser.add_argument("--workers", default="1,2", help="worker counts of the scaling runs")
    parser.add_argument("--shard-size", type=int, default=2_000,
                        help="shard size of the memory runs (small enough that 10k records keep every worker busy)")
    parser.add_argument("--scaling-shard-size", type=int, default=1_000,
                        help="shard size of the scaling runs (small corpora still make a few shards per worker)")
    parser.add_argument("--kill-size", type=int, default=100_000, help="corpus of the kill-and-resume run (0: none)")
    parser.add_argument("--kill-shard-size", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--append", action="store_true",
                        help="add this run's measurements to --results' release.json (a size or worker count "
                        "measured again replaces the old one) instead of starting afresh")
    args = parser.parse_args()

    if not SHARED.is_dir():
        say(f"skipped: {SHARED} is absent; the release benchmark cuts its corpora from the shared Reuters C50 and "
            "blog_short corpora beside the checkout")
        return
    try:
        import psutil  # noqa: F401
    except ImportError:
        raise SystemExit("this benchmark samples memory with psutil: .venv/bin/pip install psutil")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    scaling_sizes = [int(s) for s in args.scaling_sizes.split(",") if s.strip()]
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    machine = machine_info()
    say(f"machine: {machine['cpu']}, {machine['usable_cpus']} CPUs usable, {machine['ram_gib']} GiB")
    needed = sorted(set(sizes + scaling_sizes + ([args.kill_size] if args.kill_size else []) + [100]))
    windows = None
    if any(not (DATA / f"corpus-{n}.meta.json").is_file() for n in needed):
        windows = source_windows()
        say(f"corpora: {len(windows):,} ten-word windows of Reuters C50 and blog_short")
    corpora = {n: build_corpus(n, windows) for n in needed}
    runs: dict[str, Any] = {"memory": [], "scaling": [], "startup": {}, "kill_and_resume": None, "control": None}
    flat = mechanism_args(args.mechanism, None if args.mechanism == "random" else args.epsilon)
    scaled = mechanism_args(args.scaling_mechanism, None if args.scaling_mechanism == "random" else args.epsilon)

    for size in sizes:
        say(f"memory: {size:,} records, {args.mechanism}, {args.flat_workers} workers, shards of {args.shard_size:,}")
        result = release(corpora[size], DATA / f"memory-{size}", flat, args.flat_workers, args.shard_size, args.seed)
        runs["memory"].append({"size": size, **result})
        say(f"  {result['wall_s']} s, {result['words_per_s']:,} words/s, peak RSS coordinator "
            f"{result['peak_rss_mib']['coordinator']} MiB, largest worker {result['peak_rss_mib']['worker']} MiB, "
            f"all {result['peak_rss_mib']['total']} MiB")
        _fresh(DATA / f"memory-{size}")

    for workers in worker_counts if scaling_sizes else []:
        startup = release(corpora[100], DATA / f"startup-{workers}", scaled, workers, args.scaling_shard_size,
                          args.seed)
        runs["startup"][str(workers)] = startup["wall_s"]
        _fresh(DATA / f"startup-{workers}")
        say(f"start-up ({args.scaling_mechanism}, {workers} workers, 100 records): {startup['wall_s']} s")
    if scaling_sizes:
        control = machine_parallelism(corpora[scaling_sizes[0]], args.scaling_mechanism,
                                      None if args.scaling_mechanism == "random" else args.epsilon, 1000)
        runs["control"] = control
        say(f"control: bare {args.scaling_mechanism}, 1,000 texts: one process {control['words_per_s_one_process']:,} "
            f"words/s, two at once {control['words_per_s_two_processes']:,}: parallelism {control['parallelism']}")
    for size in scaling_sizes:
        for workers in worker_counts:
            say(f"scaling: {size:,} records, {args.scaling_mechanism}, {workers} worker(s)")
            result = release(corpora[size], DATA / f"scaling-{size}-{workers}", scaled, workers,
                             args.scaling_shard_size, args.seed)
            steady = result["wall_s"] - runs["startup"][str(workers)]
            result["words_per_s_after_startup"] = round(result["words"] / steady, 1) if steady > 0 else None
            result["digest"] = concatenated_digest(DATA / f"scaling-{size}-{workers}")
            runs["scaling"].append({"size": size, **result})
            say(f"  {result['wall_s']} s, {result['words_per_s']:,} words/s "
                f"({result['words_per_s_after_startup']} after start-up)")
            _fresh(DATA / f"scaling-{size}-{workers}")

    if args.kill_size:
        size = args.kill_size
        say(f"kill and resume: {size:,} records, {args.mechanism}, 2 workers, shards of {args.kill_shard_size:,}")
        whole = release(corpora[size], DATA / "kill-whole", flat, 2, args.kill_shard_size, args.seed)
        delay = random.uniform(0.0, max(0.5, 0.6 * (whole["wall_s"] - runs["startup"].get("2", 5.0))))
        killed = release(corpora[size], DATA / "kill-resumed", flat, 2, args.kill_shard_size, args.seed,
                         kill_after_first_shard_s=delay)
        resumed = release(corpora[size], DATA / "kill-resumed", flat, 2, args.kill_shard_size, args.seed, resume=True)
        identical = concatenated_digest(DATA / "kill-resumed") == concatenated_digest(DATA / "kill-whole")
        once = ids_exactly_once(DATA / "kill-resumed", size)
        runs["kill_and_resume"] = {"size": size, "uninterrupted": whole, "killed": killed, "resumed": resumed,
                                   "byte_identical": identical, "every_record_exactly_once": once}
        say(f"  killed {killed.get('killed_s_after_first_shard')} s after the first shard "
            f"({killed.get('shards_written_when_killed')} shards written); resumed in {resumed['wall_s']} s: "
            f"byte-identical {identical}, every record exactly once {once}")
        _fresh(DATA / "kill-whole")
        _fresh(DATA / "kill-resumed")

    # Paths as the repository sees them: no machine's folders in committed results.
    arguments = {k: os.path.relpath(v, ROOT) if isinstance(v, Path) else v for k, v in vars(args).items()}
    if args.append and (args.results / "release.json").is_file():
        earlier = json.loads((args.results / "release.json").read_text())
        runs = merge_runs(earlier["runs"], runs)
        arguments = {"runs": [*earlier["arguments"].get("runs", [earlier["arguments"]]), arguments]}
    summary = summarise(runs, worker_counts)
    report = {"benchmark": "textveil release (issue 14)", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": machine, "arguments": arguments,
              "corpora": "ten-word windows of ../shared/data/reuters_c50 (C50train, C50test) and blog_short, shuffled "
              "(seed 14), repeated past their number", "runs": runs, "summary": summary}
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "release.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.results / "README.md").write_text(readme(report))
    say(f"written: {args.results / 'release.json'}, {args.results / 'README.md'}")


def _fresh(out: Path) -> None:
    """Drop a run's shards (gigabytes for 1M records); its log stays."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)


def merge_runs(earlier: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``earlier`` runs with ``new`` ones added; a size (and worker count) measured again is replaced."""
    memory = {m["size"]: m for m in earlier["memory"]} | {m["size"]: m for m in new["memory"]}
    scaling = {(s["size"], s["workers"]): s for s in earlier["scaling"]} | {
        (s["size"], s["workers"]): s for s in new["scaling"]}
    return {"memory": [memory[k] for k in sorted(memory)], "scaling": [scaling[k] for k in sorted(scaling)],
            "startup": {**earlier["startup"], **new["startup"]},
            "kill_and_resume": new["kill_and_resume"] or earlier["kill_and_resume"],
            "control": new.get("control") or earlier.get("control")}


def summarise(runs: dict[str, Any], worker_counts: list[int]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    memory = runs["memory"]
    if memory:
        peaks = [m["peak_rss_mib"]["total"] for m in memory]
        summary["memory"] = {"sizes": [m["size"] for m in memory], "peak_total_mib": peaks,
                             "peak_coordinator_mib": [m["peak_rss_mib"]["coordinator"] for m in memory],
                             "largest_over_smallest": round(max(peaks) / min(peaks), 3)}
    scaling = {}
    for size in sorted({s["size"] for s in runs["scaling"]}):
        by_workers = {s["workers"]: s for s in runs["scaling"] if s["size"] == size}
        entry: dict[str, Any] = {"words_per_s": {w: by_workers[w]["words_per_s"] for w in by_workers},
                                 "identical_output": len({s["digest"] for s in by_workers.values()}) == 1}
        if 1 in by_workers and 2 in by_workers:
            one, two = by_workers[1], by_workers[2]
            entry["efficiency_2_workers"] = round(two["words_per_s"] / (2 * one["words_per_s"]), 3)
            if one.get("words_per_s_after_startup") and two.get("words_per_s_after_startup"):
                entry["efficiency_2_workers_after_startup"] = round(
                    two["words_per_s_after_startup"] / (2 * one["words_per_s_after_startup"]), 3)
        scaling[str(size)] = entry
    if scaling:
        summary["scaling"] = scaling
    if runs.get("control"):
        summary["machine_parallelism"] = runs["control"]["parallelism"]
    if runs["kill_and_resume"]:
        kill = runs["kill_and_resume"]
        summary["kill_and_resume"] = {"byte_identical": kill["byte_identical"],
                                      "every_record_exactly_once": kill["every_record_exactly_once"]}
    return summary


def readme(report: dict[str, Any]) -> str:
    runs, machine = report["runs"], report["machine"]
    lines = ["# textveil release at scale (issue 14)", "",
             f"Measured {report['date']} on {machine['cpu']} ({machine['usable_cpus']} CPUs usable, "
             f"{machine['ram_gib']} GiB) by `benchmarks/speed/bench_release.py` (`make bench-release`); "
             "every figure is "
             "`textveil release` in a child process, as a user runs it, wall time including start-up. Corpora: "
             f"{report['corpora']}; about ten words a record. Peak memory is resident memory (RSS) sampled ten "
             "times a second; memory-mapped embeddings shared by the workers count in each. The machine is "
             "shared with other work: each run gives the 1-minute load average when it started (2 = both cores "
             "busy before it began).", ""]
    if runs["memory"]:
        lines += ["## Peak memory against corpus size", "",
                  "| records | mechanism | workers | wall s | records/s | words/s | peak RSS coordinator MiB | "
                  "largest worker MiB | all processes MiB | load at start |", "|---|---|---|---|---|---|---|---|---|---|"]
        for m in runs["memory"]:
            mech = m["command"].split(" -m ")[1].split()[0]
            lines.append(f"| {m['size']:,} | {mech} | {m['workers']} | {m['wall_s']} | {m['records_per_s']:,} | "
                         f"{m['words_per_s']:,} | {m['peak_rss_mib']['coordinator']} | {m['peak_rss_mib']['worker']} | "
                         f"{m['peak_rss_mib']['total']} | {m.get('load_average_at_start', '')} |")
        lines += ["", f"Largest peak over smallest (all processes): {report['summary']['memory']['largest_over_smallest']}.",
                  ""]
        if max(m["size"] for m in runs["memory"]) < 1_000_000:
            lines += ["Not measured in these runs: 1,000,000 records (about 10-15 minutes on 2 cores). To add that row: "
                      "`OMP_NUM_THREADS=1 .venv/bin/python benchmarks/speed/bench_release.py --sizes 1000000 "
                      "--scaling-sizes '' --kill-size 0 --append`.", ""]
    if runs["scaling"]:
        lines += ["## Words/s with 1 and 2 Dask workers", "",
                  "| records | mechanism | workers | wall s | words/s | words/s after start-up | load at start |",
                  "|---|---|---|---|---|---|---|"]
        for s in runs["scaling"]:
            mech = s["command"].split(" -m ")[1].split(" --seed")[0]
            lines.append(f"| {s['size']:,} | {mech} | {s['workers']} | {s['wall_s']} | {s['words_per_s']:,} | "
                         f"{s['words_per_s_after_startup']} | {s.get('load_average_at_start', '')} |")
        lines += ["", "Start-up (100 records, same settings): " + ", ".join(
            f"{w} worker(s) {t} s" for w, t in runs["startup"].items()) + ".", ""]
        if runs.get("control"):
            control = runs["control"]
            lines += [f"Control, measured in the same run: the bare mechanism (`sanitize_records` on {control['texts']:,} "
                      f"texts, no Dask, no files) gives {control['words_per_s_one_process']:,} words/s in one process and "
                      f"{control['words_per_s_two_processes']:,} in two processes at once: the machine's parallelism for "
                      f"this work was {control['parallelism']} (2.0 = two free cores), the ceiling of any 2-worker "
                      "speed-up.", ""]
        for size, entry in report["summary"]["scaling"].items():
            lines.append(f"- {int(size):,} records: scaling efficiency with 2 workers {entry.get('efficiency_2_workers')} "
                         f"({entry.get('efficiency_2_workers_after_startup')} after start-up); output identical "
                         f"for every worker count: {entry['identical_output']}.")
        lines.append("")
    kill = runs["kill_and_resume"]
    if kill:
        lines += ["## Kill and resume", "",
                  f"{kill['size']:,} records on 2 workers, SIGKILLed {kill['killed'].get('killed_s_after_first_shard')} s "
                  f"after its first shard was written ({kill['killed'].get('shards_written_when_killed')} shards "
                  f"written), then the same command again (resumed in {kill['resumed']['wall_s']} s; uninterrupted: "
                  f"{kill['uninterrupted']['wall_s']} s): byte-identical to the uninterrupted run: "
                  f"**{kill['byte_identical']}**; every record exactly once: **{kill['every_record_exactly_once']}**.", ""]
    lines += ["Reproduce: `OMP_NUM_THREADS=1 .venv/bin/python benchmarks/speed/bench_release.py` "
              "(arguments of the runs: "
              f"`{json.dumps(report['arguments'])}`).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
