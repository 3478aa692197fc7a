"""Helpers the benchmarks share: printing, timing, memory, and a description of the machine."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np


def say(message: str = "") -> None:
    print(message, flush=True)


def timed(function: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def repeat(function: Callable[[], Any], times: int) -> tuple[Any, list[float]]:
    """Run ``function`` ``times`` times; its last result and every duration."""
    durations = []
    result = None
    for _ in range(times):
        result, seconds = timed(function)
        durations.append(seconds)
    return result, durations


def peak_rss_mib(own_only: bool = False) -> float:
    """Peak resident memory of this process (``ru_maxrss``), in MiB.

    ``own_only``: for a child process, read ``VmHWM`` instead where Linux has it, because the
    ``ru_maxrss`` of a child started by fork + exec inherits its parent's peak.
    """
    if own_only:
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


def load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        return None


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gib = None
    try:
        ram_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    from textveil.machine import usable_cpus

    usable = usable_cpus(thread_cap=False)  # the CPUs this process may run on (its affinity)
    blas = []
    try:
        from threadpoolctl import threadpool_info

        blas = [
            f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads, {Path(i['filepath']).name})"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
    except ImportError:
        pass
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "ram_gib": round(ram_gib, 1) if ram_gib else None,
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        **_faiss_info(),
        "blas": blas,
        "load_average_1min_at_start": load_average(),
    }


def _faiss_info() -> dict[str, Any]:
    try:
        import faiss
    except ImportError:  # pragma: no cover - faiss is a dependency, but the other figures stand alone
        return {}
    return {"faiss": faiss.__version__, "faiss_threads": faiss.omp_get_max_threads()}


# the texts the language-model benchmarks release (bench_paraphrase, compare_paraphrase_scores, load_service)
PUBLIC_TEXTS = Path(__file__).resolve().parents[1] / "examples" / "sample.txt"
BLOG = Path(__file__).resolve().parents[2] / "shared" / "data" / "blog_short" / "blog_short.jsonl"


def bench_texts(count: int, corpus: Path = BLOG) -> tuple[list[str], str]:
    """The first posts of ``corpus`` (a JSONL file with a ``text`` field; by default the blog posts
    of ../shared/data: their lengths are the use case), else the bundled sample's sentences."""
    if corpus.is_file():
        texts = []
        with corpus.open(encoding="utf-8") as stream:
            for line in stream:
                texts.append(json.loads(line)["text"])
                if len(texts) == count:
                    return texts, f"{corpus.stem} (first posts)"
    sentences = [s.strip() + "." for s in PUBLIC_TEXTS.read_text().replace("\n", " ").split(".") if s.strip()]
    return [sentences[i % len(sentences)] for i in range(count)], "examples/sample.txt sentences"
