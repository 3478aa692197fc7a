"""Load test of `textveil serve` (issue 13): concurrent clients against real server processes on
127.0.0.1, with the budget ledger's books checked to the last spend.

Three phases, each with its own ledger file:

1. **steady**: one server, N clients, R requests of ~100-word texts: throughput (words/s), p50 and
   p99 latency, errors; beside it, in the same run, the library's own words/s on the same texts
   (``sanitize_many`` in this process), and their ratio;
2. **killed**: the same load, the server SIGKILLed at a random point and restarted; clients
   retry what failed with the same ``request_id`` (idempotent), so every request ends accepted or
   refused exactly once;
3. **shared**: two server processes on one ledger file, clients alternating between them.

After each phase the ledger's totals must equal, exactly, the sum of the spends the clients saw
accepted (a cap makes some requests refused; refused ones must spend nothing).

4. **paraphrase** (``--phases paraphrase``): the language-model mechanism, one blog post per
   request, first one client at a time, then ``--lm-clients`` (16) at once against the same
   server: tokens drawn per second (each release's Guarantee says how many it drew), p50 and p99
   latency, and their ratio. Requests that arrive together are decoded in one batch, so the
   concurrent run must write several times faster; the ledger is checked as above.

    .venv/bin/python benchmarks/speed/load_service.py [--clients 8] [--requests 2000] [--words 100]
    .venv/bin/python benchmarks/speed/load_service.py --phases paraphrase [--lm-requests 64] [--lm-clients 16]

Texts come from ../shared/data/blog_short (cut to ~100 words), or, without it, from English word
frequencies. Prints one JSON object; writes it to docs/results/service/load.json with --write.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EPSILON = 10.0
REQUESTS_PER_SUBJECT = 50
"""Each subject asks for about 50 releases, and its cap lets 45 through: a tenth are refused."""


def texts_of(words: int, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    source = ROOT.parent / "shared" / "data" / "blog_short" / "blog_short.jsonl"
    pool: list[str] = []
    if source.is_file():
        with source.open(encoding="utf-8") as handle:
            for line in handle:
                pool.extend(json.loads(line)["text"].split())
                if len(pool) > words * count * 2:
                    break
    if len(pool) < words * 10:
        from wordfreq import top_n_list, word_frequency

        vocabulary = top_n_list("en", 5000)
        weights = [word_frequency(w, "en") for w in vocabulary]
        pool = rng.choices(vocabulary, weights, k=words * count)
    starts = [rng.randrange(0, len(pool) - words) for _ in range(count)]
    return [" ".join(pool[s:s + words]) for s in starts]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SERVER_OPTIONS: list[str] = []
"""Extra ``textveil serve`` options for every server of the run (``--server-option``)."""

SERVER_START_S = 600
"""A hang guard, not a speed check: a server comes up in a few seconds, and tests/test_service_load.py
runs this script on machines as loaded as they come."""


def start_server(port: int, ledger: Path, embeddings: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "textveil.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
               "--ledger", str(ledger), "--embeddings", embeddings, *SERVER_OPTIONS]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    import httpx

    deadline = time.time() + SERVER_START_S
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit(f"the server on port {port} did not come up in {SERVER_START_S} s (a hang guard)")


class Books:
    """What the clients saw: accepted spends per request (each request counted once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.accepted: dict[str, float] = {}
        self.refused: set[str] = set()
        self.latencies: list[float] = []
        self.errors = 0
        self.retries = 0


def subjects_for(requests: int) -> int:
    return max(1, requests // REQUESTS_PER_SUBJECT)


def cap_for(requests: int) -> float:
    per_subject = requests / subjects_for(requests)
    return int(0.9 * per_subject) * EPSILON


def post_until_answered(client, port: int, body: dict, spend: float, books: Books):
    """Send ``body`` to ``/v1/sanitize`` until the server answers (retried with its request_id
    while the server is down or busy), and keep the books: accepted with ``spend``, refused at
    the cap, or an error. The accepted response, or None."""
    import httpx

    for _ in range(200):
        started = time.perf_counter()
        try:
            response = client.post(f"http://127.0.0.1:{port}/v1/sanitize", json=body)
        except httpx.HTTPError:
            with books.lock:
                books.retries += 1
            time.sleep(0.25)  # the server is down (killed): retry the same request
            continue
        elapsed = time.perf_counter() - started
        with books.lock:
            if response.status_code == 200:
                books.accepted[body["request_id"]] = spend
                books.latencies.append(elapsed)
                return response
            if response.status_code in (402, 403, 409) and "cap" in response.text:
                books.refused.add(body["request_id"])
                books.latencies.append(elapsed)
                return None
            if response.status_code == 503:
                books.retries += 1
            else:
                books.errors += 1
                return None
        time.sleep(0.05)
    with books.lock:
        books.errors += 1
    return None


def run_clients(ports: list[int], texts: list[str], clients: int, books: Books,
                on_progress=None) -> float:
    """Every text sent once (retried with its request_id until the server answers); seconds."""
    import httpx

    # One client, shared by the threads (httpx's Client is thread-safe): a client per request
    # would build a TLS context each time and cost the load generator more CPU than the server.
    client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=clients * len(ports)))

    def one(index: int) -> None:
        body = {"texts": [texts[index]], "mechanism": "emp", "parameters": {"epsilon": EPSILON},
                "subject": f"s{index % subjects_for(len(texts))}", "request_id": f"req-{index}"}
        post_until_answered(client, ports[index % len(ports)], body, EPSILON, books)
        if on_progress:
            on_progress()

    started = time.perf_counter()
    with client, concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(len(texts))))
    return time.perf_counter() - started


def ledger_total(ledger: Path) -> tuple[float, int]:
    sys.path.insert(0, str(ROOT))
    from textveil.privacy.ledger import BudgetLedger

    spends = BudgetLedger(ledger).spends()
    return sum(s["amount"] for s in spends), len(spends)


def set_cap(ledger: Path, cap: float) -> None:
    from textveil.privacy.ledger import BudgetLedger

    BudgetLedger(ledger).set_cap(cap)


def phase(name: str, texts: list[str], clients: int, folder: Path, embeddings: str, servers: int = 1,
          kill: bool = False) -> dict:
    ledger = folder / f"{name}.sqlite"
    set_cap(ledger, cap_for(len(texts)))
    ports = [free_port() for _ in range(servers)]
    processes = [start_server(port, ledger, embeddings) for port in ports]
    books = Books()
    done = [0]
    kill_at = random.Random(7).randrange(len(texts) // 4, len(texts) // 2) if kill else None
    restarted = threading.Event()

    def progress() -> None:
        done[0] += 1
        if kill_at is not None and done[0] == kill_at and not restarted.is_set():
            restarted.set()
            processes[0].send_signal(signal.SIGKILL)
            processes[0].wait()
            processes[0] = start_server(ports[0], ledger, embeddings)

    seconds = run_clients(ports, texts, clients, books, progress)
    for process in processes:
        process.terminate()
        process.wait(timeout=30)
    total, rows = ledger_total(ledger)
    accepted = sum(books.accepted.values())
    latencies = np.array(books.latencies)
    words = sum(len(texts[int(r.split("-")[1])].split()) for r in books.accepted)
    return {
        "phase": name, "servers": servers, "killed_and_restarted": bool(kill), "requests": len(texts),
        "clients": clients, "accepted": len(books.accepted), "refused_at_cap": len(books.refused),
        "errors": books.errors, "retries": books.retries, "seconds": round(seconds, 2),
        "requests_per_second": round(len(texts) / seconds, 1), "words_per_second": round(words / seconds, 1),
        "latency_p50_s": round(float(np.percentile(latencies, 50)), 4),
        "latency_p99_s": round(float(np.percentile(latencies, 99)), 4),
        "ledger_total": total, "ledger_rows": rows, "accepted_spends_total": accepted,
        "books_exact": total == accepted and rows == len(books.accepted),
        "cap_per_subject": cap_for(len(texts)), "subjects": subjects_for(len(texts)),
    }


LM_EPSILON = 30.0
LM_TOKENS = 64


def drawn_tokens(record: dict) -> int:
    """How many tokens a paraphrase release drew, as its Guarantee states it ("this reply drew N token(s)")."""
    statement = record["guarantee"].get("statement") or ""
    marker = "this reply drew "
    return int(statement.split(marker, 1)[1].split(" ", 1)[0]) if marker in statement else 0


def run_paraphrase_clients(port: int, texts: list[str], clients: int, books: Books, offset: int) -> tuple[float, int]:
    """Every text sent once as its own paraphrase request by ``clients`` threads; seconds and
    tokens drawn by the accepted releases."""
    import httpx

    client = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=clients))
    spend = LM_EPSILON * LM_TOKENS
    tokens = [0]

    def one(index: int) -> None:
        body = {"texts": [texts[index]], "mechanism": "paraphrase",
                "parameters": {"epsilon": LM_EPSILON, "max_new_tokens": LM_TOKENS},
                "subject": f"s{index % 4}", "request_id": f"lm-{offset + index}"}
        response = post_until_answered(client, port, body, spend, books)
        if response is not None:
            with books.lock:
                tokens[0] += sum(drawn_tokens(r) for r in response.json()["releases"])

    started = time.perf_counter()
    with client, concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(len(texts))))
    return time.perf_counter() - started, tokens[0]


def paraphrase_phase(texts: list[str], clients: int, folder: Path, embeddings: str) -> dict:
    """One client at a time, then ``clients`` at once, against one server and ledger."""
    ledger = folder / "paraphrase.sqlite"
    per_subject = (2 * len(texts) + 1) / 4  # four subjects share both runs' requests
    set_cap(ledger, int(0.95 * per_subject) * LM_EPSILON * LM_TOKENS)  # the last few are refused
    port = free_port()
    server = start_server(port, ledger, embeddings)
    books = Books()
    run_paraphrase_clients(port, texts[:1], 1, books, offset=10_000)  # loads the model, warms the engine
    runs = {}
    for name, count, offset in (("one_client", 1, 0), (f"{clients}_clients", clients, len(texts))):
        before = len(books.latencies)
        seconds, tokens = run_paraphrase_clients(port, texts, count, books, offset)
        latencies = np.array(books.latencies[before:])
        runs[name] = {"clients": count, "requests": len(texts), "seconds": round(seconds, 2), "tokens": tokens,
                      "tokens_per_second": round(tokens / seconds, 1),
                      "latency_p50_s": round(float(np.percentile(latencies, 50)), 3) if latencies.size else None,
                      "latency_p99_s": round(float(np.percentile(latencies, 99)), 3) if latencies.size else None}
    server.terminate()
    server.wait(timeout=30)
    total, rows = ledger_total(ledger)
    accepted = sum(books.accepted.values())
    one, many = runs["one_client"], runs[f"{clients}_clients"]
    return {
        "phase": "paraphrase", "epsilon": LM_EPSILON, "max_new_tokens": LM_TOKENS, **runs,
        "concurrent_over_one": round(many["tokens_per_second"] / one["tokens_per_second"], 2),
        "accepted": len(books.accepted), "refused_at_cap": len(books.refused), "errors": books.errors,
        "retries": books.retries, "requests_sent": 2 * len(texts) + 1,
        "lost": 2 * len(texts) + 1 - len(books.accepted) - len(books.refused),
        "ledger_total": total, "ledger_rows": rows, "accepted_spends_total": accepted,
        "books_exact": total == accepted and rows == len(books.accepted),
    }


def blog_posts(count: int) -> list[str]:
    """The first ``count`` blog posts (the use case's lengths), else sentences of the bundled sample."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_common import bench_texts

    return bench_texts(count)[0]


def library_words_per_second(texts: list[str], embeddings: str) -> float:
    """The library alone, in this process, on the same texts: the bar the service is held to."""
    from textveil.embeddings import load_embeddings
    from textveil.mechanisms.registry import make_mechanism

    engine = make_mechanism("emp", shared={"embeddings": load_embeddings(embeddings)}, epsilon=EPSILON)
    engine.sanitize_many(texts[:20])  # load the embeddings and build the index first
    started = time.perf_counter()
    engine.sanitize_many(texts)
    return sum(len(t.split()) for t in texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--words", type=int, default=100)
    parser.add_argument("--phases", default="steady,killed,shared")
    parser.add_argument("--embeddings", default="default", help="'default' or a vectors file (the server's too)")
    parser.add_argument("--write", action="store_true", help="also write docs/results/service/load.json")
    parser.add_argument("--lm-requests", type=int, default=64, help="paraphrase requests per run (one text each)")
    parser.add_argument("--lm-clients", type=int, default=16, help="concurrent clients of the paraphrase phase")
    parser.add_argument("--server-option", action="append", default=[],
                        help="an extra option for 'textveil serve', e.g. --server-option=--concurrency=2")
    args = parser.parse_args()
    SERVER_OPTIONS.extend(args.server_option)
    phases = args.phases.split(",")
    texts = texts_of(args.words, args.requests, seed=1)
    library = library_words_per_second(texts, args.embeddings) if set(phases) - {"paraphrase"} else None
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_common import machine_info

    results = {"machine": machine_info(), "python": platform.python_version(),
               "library_words_per_second": None if library is None else round(library, 1), "phases": []}
    with tempfile.TemporaryDirectory() as folder:
        for name in phases:
            if name == "paraphrase":
                result = paraphrase_phase(blog_posts(args.lm_requests), args.lm_clients, Path(folder), args.embeddings)
            else:
                result = phase(name, texts, args.clients, Path(folder), args.embeddings,
                               servers=2 if name == "shared" else 1, kill=name == "killed")
                result["ratio_to_library"] = round(result["words_per_second"] / library, 3)
            results["phases"].append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))
    if args.write:
        target = ROOT / "docs" / "results" / "service" / ("load-paraphrase.json" if phases == ["paraphrase"]
                                                         else "load.json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if not all(p["books_exact"] and p["errors"] == 0 and p.get("lost", 0) == 0 for p in results["phases"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
