"""The entity stage's speed and memory as a user meets them: whole ``textveil sanitize -m emp``
processes, stage on and off, on Reuters C50 (240 articles as one file and as a folder of files)
and on blog_short (JSONL records).

For each input it runs ``textveil sanitize INPUT -m emp -e 20 --seed 1`` in a fresh process, with
the stage on (the default) and with ``--entities off``, and records the wall time, the process's
peak resident memory (``wait4``'s ``ru_maxrss``) and the words/s the command itself prints for the
stage and for emp. Whole-process figures: loading Python, the embeddings and spaCy is included.

    .venv/bin/python benchmarks/speed/bench_entity_stage.py [--out docs/results/pii/speed.json]

Needs ``../shared/data`` (C50 and blog_short); run it on a quiet machine (the load is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import load_average, machine_info, say  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / ".." / "shared" / "data"
TEXTVEIL = REPO_ROOT / ".venv" / "bin" / "textveil"
SPEED = re.compile(r"speed: (.*)")


def inputs(folder: Path, articles: int, posts: int) -> dict[str, Path]:
    """The three inputs, written under ``folder``: C50's first ``articles`` training articles (in
    author and file order) as one file and as a folder, and blog_short's first ``posts`` records."""
    files = sorted((DATA / "reuters_c50" / "C50train").glob("*/*.txt"))[:articles]
    texts = [path.read_text(encoding="utf-8", errors="replace").strip() for path in files]
    one = folder / "c50-articles.txt"
    one.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    many = folder / "c50-folder"
    many.mkdir()
    for i, text in enumerate(texts):
        (many / f"{i:04d}.txt").write_text(text + "\n", encoding="utf-8")
    jsonl = folder / "blog-posts.jsonl"
    with open(DATA / "blog_short" / "blog_short.jsonl", encoding="utf-8") as source:
        jsonl.write_text("".join(line for _, line in zip(range(posts), source)), encoding="utf-8")
    return {"c50, one file": one, "c50, a folder of files": many, "blog_short, JSONL": jsonl}


def run(source: Path, out: Path, entities: bool) -> dict[str, Any]:
    """One whole ``sanitize`` process: wall seconds, peak memory, and the speeds it printed."""
    command = [str(TEXTVEIL), "sanitize", str(source), "-m", "emp", "-e", "20", "--seed", "1",
               "--output", str(out)] + ([] if entities else ["--entities", "off"])
    if source.suffix == ".jsonl":
        command += ["--text-field", "text"]
    with tempfile.TemporaryFile("w+") as printed_out:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=printed_out, stderr=subprocess.STDOUT, text=True)
        tree_peak = _tree_peak_while_running(child)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak memory, not the largest so far
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        printed_out.seek(0)
        output = printed_out.read()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {(output.strip().splitlines() or [''])[-1]}")
    printed = SPEED.search(output)
    speeds = {}
    for part in (printed.group(1).split(";") if printed else []):  # "entity stage 3,647 words/s"
        name, rate, _ = part.strip().rsplit(" ", 2)
        speeds[name] = float(rate.replace(",", ""))
    return {"seconds": round(seconds, 2), "peak_mib": round(usage.ru_maxrss / 1024),
            "process_tree_peak_pss_mib": tree_peak, "printed_words_per_second": speeds}


def _tree_peak_while_running(child: subprocess.Popen) -> int | None:
    """The largest proportional set size (PSS) of ``child`` and its descendants together, sampled
    every 0.2 s until it exits: with spaCy reading in two processes, the command's memory is the
    sum over its processes (shared pages counted once), which no one process's peak shows."""
    try:
        import psutil
    except ImportError:
        return None
    peak = 0
    process = psutil.Process(child.pid)
    # waitid with WNOWAIT sees the exit without reaping it: wait4 then reads the child's own usage
    while os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        total = 0
        try:
            for member in [process, *process.children(recursive=True)]:
                total += member.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
        peak = max(peak, total)
        time.sleep(0.2)
    return round(peak / 2**20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=240)
    parser.add_argument("--posts", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    if not (DATA / "reuters_c50").is_dir() or not (DATA / "blog_short").is_dir():
        raise SystemExit(f"{DATA} lacks reuters_c50 or blog_short: this benchmark reads them")
    results: dict[str, Any] = {"machine": machine_info(), "load_before": load_average(), "runs": {}}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, source in inputs(folder, args.articles, args.posts).items():
            words = sum(len(path.read_text(encoding="utf-8").split())
                        for path in ([source] if source.is_file() else sorted(source.iterdir())))
            row: dict[str, Any] = {"input_words": words}
            for entities in (True, False):
                out = folder / f"out-{len(os.listdir(folder))}{'' if source.is_dir() else source.suffix}"
                measured = run(source, out, entities)
                measured["whole_process_words_per_second"] = round(words / measured["seconds"])
                row["stage on" if entities else "stage off"] = measured
                say(f"{name}, stage {'on' if entities else 'off'}: {measured}")
            results["runs"][name] = row
    results["load_after"] = load_average()
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
