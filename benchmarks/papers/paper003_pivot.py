"""Paper 003 (PIVOT) measured: frequency analysis and context merging against GOMM, a one-to-one
cipher and a random one-to-many mapping, and the word embeddings each release still gives.

    python benchmarks/papers/paper003_pivot.py --corpus c50 --out ../paper003/c50
    python benchmarks/papers/paper003_pivot.py --corpus bbc --out ../paper003/bbc
    python benchmarks/papers/paper003_pivot.py --corpus c50 --out /tmp/quick --quick   # a tenth of the corpus

Per corpus (every token: words in lower case and marks):
- word2vec (gensim CBOW, 100 dimensions, window 5, min count 5, 5 epochs, one worker: reproducible)
  on the original, twice (seeds 0 and 1: the floor of every utility figure is what a second
  training of the *same* corpus changes), and on each release, mapped back through its key;
- releases: the cipher, then for each l the random one-to-many mapping and GOMM, each encoded
  with ``--keys`` keys (frequency attacks are pooled over keys, utility and context merging use
  the first);
- attacks (:mod:`textveil.evaluation.frequency_risk`): frequency analysis by rank and by l_p
  assignment, with the corpus's own counts or wordfreq's as the reference, by an attacker who
  assumes a cipher and one who knows the mechanism (its public plan, run on the reference);
  the exact best frequency attacker (:mod:`textveil.privacy.l_privacy`); and context merging
  over the release's own word2vec vectors (the third party trains them anyway) at several
  similarity thresholds, the worst for the owner reported.

Writes ``results.json``, ``table.md`` and ``privacy_utility.png`` to ``--out``; prints the
machine and every timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from textveil.evaluation.frequency_risk import METHODS, frequency_guesses, reference_counts, score_guesses  # noqa: E402
from textveil.mechanisms.pivot import Pivot, normalised_tokens  # noqa: E402
from textveil.privacy.l_privacy import expected_tokens_recovered, frequency_attack_success  # noqa: E402
from textveil.utility.embedding_preservation import embedding_preservation, train_word2vec  # noqa: E402

CORPORA = {
    "c50": ("reuters_c50/C50train", "*/*.txt"),
    "bbc": ("bbc_news/bbc", "*/*.txt"),
}
WORD2VEC = {"vector_size": 100, "window": 5, "min_count": 5, "epochs": 5, "workers": 1}
THRESHOLDS = (0.5, 0.85)


def read_corpus(name: str, data: Path, quick: bool) -> list[str]:
    folder, pattern = CORPORA[name]
    paths = sorted((data / folder).glob(pattern))
    if not paths:
        raise SystemExit(f"no texts under {data / folder}: is ../shared/data there?")
    if quick:
        paths = paths[::10]
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths]


def timed(what: str, timings: dict, function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    timings[what] = round(time.perf_counter() - start, 2)
    print(f"  {what}: {timings[what]:.1f} s", flush=True)
    return result


def compared_words(vectors: dict, counts: dict, n: int = 1000) -> list[str]:
    """The n most frequent alphabetic words the original vectors know."""
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return [w for w in ranked if w.isalpha() and w in vectors][:n]


def random_planner(l: int):
    """What an attacker who knows the random one-to-many baseline expects: each word's
    occurrences spread evenly over min(l, count) code words."""
    return lambda counts: {w: [n // min(l, n) + (i < n % min(l, n)) for i in range(min(l, n))]
                           for w, n in counts.items()}


def attack_release(tokens_by_key, keys, references, planner) -> dict:
    """Every frequency attack on the releases of several keys, pooled over keys: by an attacker
    who assumes a cipher and, with ``planner``, by one who knows the mechanism."""
    results = {}
    for reference_name, reference in references.items():
        for aware in (False, True):
            if aware and planner is None:
                continue
            for method in METHODS:
                runs = [(frequency_guesses(tokens, reference, planner=planner if aware else None, method=method),
                         key, tokens) for tokens, key in zip(tokens_by_key, keys)]
                name = f"{reference_name}/{'aware' if aware else 'cipher-minded'}/{method}"
                results[name] = score_guesses(runs).to_dict()
                results[name].pop("class_success")
    return results


def context_attack(tokens_by_key, keys, reference, l, vectors_by_key, seed: int) -> dict:
    """Context merging over the release's own vectors, pooled over keys, at every setting; the
    setting that decodes most tokens is reported (the attacker may tune it)."""
    from textveil.attacks.frequency import context_merging_attack

    found = {}
    for threshold in THRESHOLDS:
        for method in ("assignment", "majority"):
            runs, clusters, largest = [], 0, 0
            for tokens, key, vectors in zip(tokens_by_key, keys, vectors_by_key):
                merged = context_merging_attack(tokens, reference,
                                                planner=None if l is None else _planner(l, key.part_size),
                                                threshold=threshold, seed=seed, vectors=vectors, method=method)
                runs.append((merged.guesses, key, tokens))
                clusters += sum(1 for members in merged.clusters if len(members) > 1)
                largest = max(largest, max(len(members) for members in merged.clusters))
            score = score_guesses(runs).to_dict()
            score.pop("class_success")
            score["clusters"] = clusters / len(runs)
            score["largest_cluster"] = largest
            found[f"{threshold}/{method}"] = score
    worst = max(found, key=lambda t: found[t]["tokens_recovered"])
    return {"settings": found, "worst": worst, "keys": len(keys), **found[worst]}


def _planner(l: int, part_size: int):
    from textveil.evaluation.frequency_risk import pivot_planner

    return pivot_planner(l, part_size)


def run(corpus: str, out: Path, data: Path, ls: list[int], keys: int, quick: bool,
        also: list[tuple[int, int]] = ()) -> dict:
    texts = read_corpus(corpus, data, quick)
    timings: dict = {}
    documents = timed("tokenise", timings, lambda: [normalised_tokens(t) for t in texts])
    counts = reference_counts(documents)
    references = {"corpus": counts, "wordfreq": reference_counts(source="wordfreq")}
    tokens_total = int(sum(counts.values()))
    print(f"{corpus}: {len(texts):,} texts, {tokens_total:,} tokens, {len(counts):,} types", flush=True)
    original = timed("word2vec original", timings, train_word2vec, documents, seed=0, **WORD2VEC)
    again = timed("word2vec original, seed 1", timings, train_word2vec, documents, seed=1, **WORD2VEC)
    words = compared_words(original, counts)
    identity = {w: ((w, 1),) for w in again}
    floor = embedding_preservation(original, again, identity, again, words)
    rows = [{"mapping": "original (second training)", "label": "original (second training)", "l": None,
             "utility": floor}]
    settings = [("cipher", None, None)] + [(m, l, None) for l in ls for m in ("random", "gomm")] + \
        [("gomm", l, part) for l, part in also]
    for mapping, l, part_size in settings:
        label = mapping + ("" if l is None else f" l={l}") + ("" if part_size is None else f" part={part_size}")
        print(f"{label}:", flush=True)
        encodings = [timed(f"encode {label} key {k}", timings, Pivot(l=l or 2, part_size=part_size, seed=100 + k).encode,
                           texts, mapping=mapping) for k in range(keys if mapping != "cipher" else 1)]
        tokens_by_key = [[r.text.split() for r in e.releases] for e in encodings]
        key = encodings[0].key
        plan = key.plan()
        row = {"mapping": mapping, "l": l, "label": label, "code_words": len(key.decoder),
               "part_size": key.part_size or None,
               "exact_attacker": {"max_success": frequency_attack_success(plan),
                                  "tokens_recovered": expected_tokens_recovered(plan)}}
        aware_l = l if mapping == "gomm" else None
        planner = {"gomm": lambda: _planner(l, key.part_size), "random": lambda: random_planner(l)}.get(
            mapping, lambda: None)()
        row["frequency"] = timed(f"frequency attacks {label}", timings, attack_release, tokens_by_key,
                                 [e.key for e in encodings], references, planner)
        # Context merging on every key for GOMM (its figure is compared with l-privacy's), on
        # the first for the baselines; utility on the first.
        attacked = len(encodings) if mapping == "gomm" else 1
        vectors = [timed(f"word2vec {label} key {k}", timings, train_word2vec, tokens_by_key[k], seed=0, **WORD2VEC)
                   for k in range(attacked)]
        row["context"] = timed(f"context merging {label}", timings, context_attack, tokens_by_key[:attacked],
                               [e.key for e in encodings[:attacked]], counts, aware_l, vectors, 0)
        row["context"]["beyond_frequency_bound"] = (row["context"]["tokens_recovered"]
                                                    - row["exact_attacker"]["tokens_recovered"])
        decoded = key.decode_vectors(vectors[0])
        row["utility"] = embedding_preservation(original, vectors[0], key.code_words, decoded, words)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k in ("code_words", "part_size", "exact_attacker")}
                         | {"context tokens": row["context"]["tokens_recovered"]}), flush=True)
    result = {"corpus": corpus, "texts": len(texts), "tokens": tokens_total, "types": len(counts), "quick": quick,
              "word2vec": WORD2VEC, "keys": keys, "rows": rows, "timings": timings, "machine": machine()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1))
    (out / "table.md").write_text(table(result))
    plot(result, out / "privacy_utility.png")
    print(table(result))
    return result


def strongest(row: dict) -> tuple[str, float]:
    """The attack that recovered most tokens, and how many."""
    found = {name: score["tokens_recovered"] for name, score in row.get("frequency", {}).items()}
    if "context" in row:
        found["context merging"] = row["context"]["tokens_recovered"]
    name = max(found, key=found.get)
    return name, found[name]


def table(result: dict) -> str:
    lines = [f"### {result['corpus']}: {result['texts']:,} texts, {result['tokens']:,} tokens, {result['types']:,} types",
             "",
             "| release | code words | exact frequency attacker: best code word / tokens | frequency attack (corpus "
             "counts, best guess per count, knows the mechanism): tokens / best class (95% upper) | wordfreq reference: tokens | context "
             "merging: tokens / types | dist(D,D') code words / mapped back | 10-NN agreement | WordSim rho | "
             "SimLex rho |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        u = row["utility"]
        utility = (f"{u['pair_distance_change']:.3f} / {u['pair_distance_change_decoded']:.3f} | "
                   f"{u['neighbour_agreement']:.3f} | {u['wordsim353']['decoded']['rho']:.3f} | "
                   f"{u['simlex999']['decoded']['rho']:.3f}")
        if "frequency" not in row:
            lines.append(f"| {row['mapping']} | | | | | | {utility} |")
            continue
        name = "corpus/cipher-minded/majority" if row["mapping"] == "cipher" else "corpus/aware/majority"
        f = row["frequency"][name]
        best = f"{f['max_class_success']:.3f} ({f['max_class_upper']:.3f})" if f["max_class_success"] is not None else "-"
        wordfreq = max(s["tokens_recovered"] for n, s in row["frequency"].items() if n.startswith("wordfreq"))
        label = row["label"]
        exact = row["exact_attacker"]
        lines.append(f"| {label} | {row['code_words']:,} | {exact['max_success']:.3f} / {exact['tokens_recovered']:.1%} | "
                     f"{f['tokens_recovered']:.1%} / {best} | {wordfreq:.1%} | "
                     f"{row['context']['tokens_recovered']:.1%} / {row['context']['types_recovered']:.1%} | {utility} |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    floor = result["rows"][0]["utility"]
    markers = {"cipher": "s", "random": "o", "gomm": "^"}
    for row in result["rows"][1:]:
        attack, recovered = strongest(row)
        label = row["label"]
        for axis, measure in zip(axes, ("neighbour_agreement", "pair_distance_change_decoded")):
            axis.scatter(recovered, row["utility"][measure], marker=markers[row["mapping"]], s=50)
            axis.annotate(label, (recovered, row["utility"][measure]), fontsize=8, xytext=(4, 3),
                          textcoords="offset points")
    for axis, measure, name in zip(axes, ("neighbour_agreement", "pair_distance_change_decoded"),
                                   ("10-NN agreement with the original (higher is better)",
                                    "dist(D, D'), mapped back (lower is better)")):
        axis.axhline(floor[measure], color="grey", linestyle="--", linewidth=1)
        axis.text(0.01, floor[measure], " a second training of the original", fontsize=7, color="grey", va="bottom")
        axis.set_xlabel("tokens recovered by the strongest attack")
        axis.set_ylabel(name)
    figure.suptitle(f"PIVOT on {result['corpus']}: privacy (x, lower is better) against utility")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def machine() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="c50")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--l", type=int, nargs="+", default=[2, 5, 10])
    parser.add_argument("--keys", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tenth of the corpus")
    parser.add_argument("--also", nargs="*", default=[], metavar="L:PART",
                        help="extra GOMM releases with a given part size (e.g. 2:65536)")
    arguments = parser.parse_args()
    also = [tuple(int(x) for x in item.split(":")) for item in arguments.also]
    print(json.dumps(machine()))
    run(arguments.corpus, arguments.out, arguments.data, arguments.l, arguments.keys, arguments.quick, also)


if __name__ == "__main__":
    main()
