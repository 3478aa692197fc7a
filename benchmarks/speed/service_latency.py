"""Latency of a paraphrase request to `textveil serve` (issue 46): p50 and p99 of 30 requests of
two short texts each (paraphrase at epsilon 30, as it is by default), one at a time, on a quiet
machine and then with one other CPU-bound process running (a Python loop on one core), for each
thread policy of the CPU engine (``TEXTVEIL_THREAD_POLICY``: ``free-cores``, the default, decodes
on the cores other processes leave idle; ``fixed`` on every usable core, the 0.4.0 behaviour).
The first request after start-up is reported apart: the service loads and warms its models before
it listens, so the first should be as fast as the second. Prints one JSON object with the machine.

    .venv/bin/python benchmarks/speed/service_latency.py [--requests 30] [--policies free-cores,fixed]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import machine_info  # noqa: E402
from load_service import free_port, start_server  # noqa: E402

TEXTS = ["The market rallied on Friday after the bank said rates would stay where they are.",
         "We knitted a scarf of soft blue wool for my sister, and she wore it all winter."]
HOG = "while True: pass"


def latencies(port: int, requests: int) -> list[float]:
    import httpx

    body = {"texts": TEXTS, "mechanism": "paraphrase", "parameters": {"epsilon": 30}, "subject": "bench"}
    seconds = []
    with httpx.Client(timeout=120) as client:
        for _ in range(requests):
            started = time.perf_counter()
            answer = client.post(f"http://127.0.0.1:{port}/v1/sanitize", json=body)
            seconds.append(time.perf_counter() - started)
            if answer.status_code != 200:
                raise SystemExit(f"request failed ({answer.status_code}): {answer.text[:200]}")
    return seconds


def summary(seconds: list[float]) -> dict:
    return {"first_s": round(seconds[0], 2), "second_s": round(seconds[1], 2),
            "p50_s": round(float(np.percentile(seconds, 50)), 2), "p99_s": round(float(np.percentile(seconds, 99)), 2),
            "max_s": round(max(seconds), 2), "requests": len(seconds)}


def measure(policy: str, requests: int) -> dict:
    os.environ["TEXTVEIL_THREAD_POLICY"] = policy
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        server = start_server(port, Path(folder) / "ledger.sqlite", "default")
        up = time.perf_counter() - started
        try:
            quiet = latencies(port, requests)
            hog = subprocess.Popen([sys.executable, "-c", HOG])
            try:
                time.sleep(2)  # the loop takes its core
                shared = latencies(port, requests)
            finally:
                hog.kill()
        finally:
            server.terminate()
            server.wait(30)
    return {"policy": policy, "start_up_s": round(up, 1), "quiet": summary(quiet),
            "one_cpu_bound_process": summary(shared)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--policies", default="free-cores,fixed")
    args = parser.parse_args()
    runs = [measure(policy, args.requests) for policy in args.policies.split(",")]
    print(json.dumps({"benchmark": "service-latency", "texts_per_request": len(TEXTS), "mechanism": "paraphrase",
                      "epsilon": 30, "runs": runs, "machine": machine_info()}, indent=2))


if __name__ == "__main__":
    main()
