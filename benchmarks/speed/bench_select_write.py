"""How fast does ``select-write`` release whole news articles, as a user runs it?

The first ``--articles`` Reuters C50 test articles (``../shared/data/reuters_c50/C50test``, sorted)
are copied into a temporary folder and released by a fresh process, start-up and model loading
included::

    .venv/bin/python -m textveil.cli sanitize FOLDER -m select-write -e 30 --set public_prompt=news --seed 1 -o OUT

The report gives the input's words, the wall time and the input words per second (the whole
process), with the machine. Memory for one very long file: ``long_document_memory.py --mechanism
select-write``.

    .venv/bin/python benchmarks/speed/bench_select_write.py --articles 100 --json out.json
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=100)
    parser.add_argument("--epsilon", type=float, default=30.0)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    files = sorted((args.data / "reuters_c50" / "C50test").glob("*/*.txt"))[: args.articles]
    if not files:
        sys.exit(f"no articles under '{args.data / 'reuters_c50' / 'C50test'}': give --data, the folder that holds "
                 "reuters_c50")
    with tempfile.TemporaryDirectory(prefix="textveil-select-write-") as folder:
        source = Path(folder) / "articles"
        source.mkdir()
        for i, path in enumerate(files):
            shutil.copy(path, source / f"{i:05d}.txt")
        words = sum(len(path.read_text(encoding="utf-8", errors="replace").split()) for path in files)
        out = Path(folder) / "released"
        command = [sys.executable, "-m", "textveil.cli", "sanitize", str(source), "-m", "select-write",
                   "-e", f"{args.epsilon:g}", "--set", "public_prompt=news", "--seed", "1", "-o", str(out)]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        released = sum(len(p.read_text(encoding="utf-8").split()) for p in out.rglob("*") if p.is_file()) \
            if out.exists() else 0
    result = {
        "command": "textveil " + " ".join(command[3:]).replace(str(source), "ARTICLES").replace(str(out), "OUT"),
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}",
        "articles": len(files), "input_words": words, "released_words": released, "exit_code": done.returncode,
        "wall_s": round(elapsed, 1), "input_words_per_s": round(words / elapsed, 1) if done.returncode == 0 else None,
        "last_error_line": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
