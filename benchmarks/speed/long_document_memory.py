"""Peak memory (and time) of ``textveil sanitize`` on one very long text file, as a user runs it.

A text of ``--megabytes`` MB is made of Reuters C50 training articles (``../shared/data/reuters_c50``,
read in sorted order, one empty line between articles, repeated as often as needed), written to a
temporary folder, and released whole by a fresh process::

    .venv/bin/python -m textveil.cli sanitize BIG.txt -m paraphrase -e 30 --seed 1 -o OUT.txt

(``--mechanism`` another one, such as ``select-write``.)

The process's resident memory (with its children) is sampled every second; the report gives the
peak (the largest sample, and the kernel's ``ru_maxrss`` of the process), the resident memory at
each tenth of the run (bounded memory reads as a flat line once the model is loaded, not one that
grows with the text already released), the input's and the release's words, the wall time and the
words per second. ``--max-new-tokens`` sets L lower: every unit is still made, read, scheduled
and joined, only the replies are shorter (fewer tokens written and held until the join; reading
the prompts takes most of the time, so the run is not much shorter).

    .venv/bin/python benchmarks/speed/long_document_memory.py --megabytes 5 --json out.json
    .venv/bin/python benchmarks/speed/long_document_memory.py --megabytes 5 --max-new-tokens 1 --json out.json
    .venv/bin/python benchmarks/speed/long_document_memory.py --megabytes 5 --mechanism select-write --json out.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def long_text(articles: Path, megabytes: float) -> str:
    """C50 articles in sorted order, an empty line between them, until the text holds ``megabytes`` MB."""
    files = sorted(articles.glob("*/*.txt"))
    if not files:
        sys.exit(f"no articles under '{articles}': give --data, the folder that holds reuters_c50")
    target = int(megabytes * 1_000_000)
    parts: list[str] = []
    size = 0
    while size < target:
        for path in files:
            article = path.read_text(encoding="utf-8", errors="replace").strip()
            parts.append(article)
            size += len(article.encode("utf-8")) + 2
            if size >= target:
                break
    return "\n\n".join(parts) + "\n"


def resident(process: psutil.Process) -> int:
    """Resident bytes of ``process`` and its children (0 once it has gone)."""
    try:
        tree = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for member in tree:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--mechanism", default="paraphrase", help="the mechanism (-m), e.g. select-write")
    parser.add_argument("--epsilon", type=float, default=30.0)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="L (default: the mechanism's)")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="textveil-long-") as folder:
        source = Path(folder) / "long.txt"
        text = long_text(args.data / "reuters_c50" / "C50train", args.megabytes)
        source.write_text(text, encoding="utf-8")
        released = Path(folder) / "released.txt"
        command = [sys.executable, "-m", "textveil.cli", "sanitize", str(source), "-m", args.mechanism,
                   "-e", f"{args.epsilon:g}", "--seed", "1", "-o", str(released)]
        if args.max_new_tokens is not None:
            command += ["--set", f"max_new_tokens={args.max_new_tokens}"]
        print("running:", " ".join(command[1:]), flush=True)
        started = time.perf_counter()
        log = Path(folder) / "progress.log"  # a file, not a pipe: hours of progress lines must not fill it
        with log.open("w", encoding="utf-8") as progress:
            child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=progress, text=True)
            watched = psutil.Process(child.pid)
            samples: list[tuple[float, int]] = []
            while child.poll() is None:
                samples.append((time.perf_counter() - started, resident(watched)))
                time.sleep(1.0)
        status = child.returncode
        elapsed = time.perf_counter() - started
        errors = log.read_text(encoding="utf-8", errors="replace")
        out_words = len(released.read_text(encoding="utf-8").split()) if released.exists() else 0
    kernel_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    in_words = len(text.split())
    # The resident memory at each tenth of the run: the last sample taken by then.
    tenths = [next((rss for at, rss in reversed(samples) if at <= elapsed * k / 10), 0) for k in range(1, 11)]
    result = {
        "command": "textveil " + " ".join(command[3:]).replace(str(source), "LONG.txt").replace(str(released),
                                                                                                  "OUT.txt"),
        "input_bytes": len(text.encode("utf-8")), "input_words": in_words, "released_words": out_words,
        "exit_code": status, "wall_s": round(elapsed, 1),
        "input_words_per_s": round(in_words / elapsed, 1) if status == 0 else None,
        "peak_sampled_bytes": max((rss for _, rss in samples), default=0), "peak_ru_maxrss_bytes": kernel_peak,
        "resident_by_tenth_bytes": tenths, "last_error_line": errors.strip().splitlines()[-1] if errors.strip() else "",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
