"""The entity stage's casing side channel (issue 38), measured directly: what an attacker learns
from *where the stage put placeholders* alone, on the texts as written and on the same texts in
lower case (a case-normalised input, where the stage can no longer read anyone's capitals).

The public layout of emp, SynTF and Random-R copies no casing, but the stage decides from the
input as written ("the MARKET" may become ``<ORGANIZATION>`` where "the market" does not), and a
placeholder is released. The attack here sees nothing but the stage's decisions: per text, the
share of its words replaced by each entity type and in all. A logistic regression is trained on
each user's known texts and judges each user from the sum of the log-probabilities of their
unknown texts (as ``compare --collapse-per-label``). Chance is 1 / users.

    .venv/bin/python benchmarks/privacy/casing_channel.py [--users 150 --known 30 --unknown 10] \
        [--out docs/results/pii/casing-channel.json]

The release-aware attacks on whole emp releases of both inputs: ``benchmarks/privacy/casing_channel.sh``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench_common.py
from bench_common import machine_info  # noqa: E402

from textveil.pii.stage import DEFAULT_TYPES, EntityOptions, EntityStage
from textveil.text.tokenize import find_words

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "blog_short" / "blog_short.jsonl"


def read_split(path: Path, users: int, known: int, unknown: int) -> dict[str, list[tuple[str, str]]]:
    """The first ``users`` users with at least ``known + unknown`` posts: their first ``known``
    posts known, the next ``unknown`` judged (in file order)."""
    posts: dict[str, list[str]] = defaultdict(list)
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            posts[str(record["user"])].append(record["text"])
    chosen = [user for user, texts in posts.items() if len(texts) >= known + unknown][:users]
    return {"known": [(u, t) for u in chosen for t in posts[u][:known]],
            "unknown": [(u, t) for u in chosen for t in posts[u][known:known + unknown]]}


def placeholder_features(stage: EntityStage, texts: list[str]) -> np.ndarray:
    """Per text: the share of its words the stage replaced, by type and in all (nothing else)."""
    rows = []
    for text, screening in zip(texts, stage.apply_many(texts)):
        words = max(len(find_words(text)), 1)
        counts = Counter(entity.entity_type for entity in screening.entities)
        rows.append([counts[t] / words for t in DEFAULT_TYPES] + [sum(counts.values()) / words,
                                                                   float(bool(counts))])
    return np.asarray(rows)


def top1_per_user(train: np.ndarray, train_users: list[str], test: np.ndarray, test_users: list[str]) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(train)
    model = LogisticRegression(max_iter=2000).fit(scaler.transform(train), train_users)
    log_probabilities = model.predict_log_proba(scaler.transform(test))
    totals: dict[str, np.ndarray] = {}
    for user, row in zip(test_users, log_probabilities):
        totals[user] = totals.get(user, 0) + row
    hits = sum(model.classes_[int(np.argmax(total))] == user for user, total in totals.items())
    return hits / len(totals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--users", type=int, default=150)
    parser.add_argument("--known", type=int, default=30)
    parser.add_argument("--unknown", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.corpus.exists():
        sys.exit(f"{args.corpus} is absent: this benchmark reads blog_short from ../shared/data")
    split = read_split(args.corpus, args.users, args.known, args.unknown)
    stage = EntityStage(EntityOptions())
    results: dict[str, object] = {"corpus": str(args.corpus.name), "users": args.users, "known_per_user": args.known,
                                  "unknown_per_user": args.unknown, "chance": 1 / args.users,
                                  "machine": machine_info()}
    started = time.perf_counter()
    for name, view in (("as written", lambda t: t), ("lower case", str.lower)):
        known = placeholder_features(stage, [view(t) for _, t in split["known"]])
        unknown = placeholder_features(stage, [view(t) for _, t in split["unknown"]])
        share = float((known[:, -1] > 0).mean())
        top1 = top1_per_user(known, [u for u, _ in split["known"]], unknown, [u for u, _ in split["unknown"]])
        results[name] = {"top1": top1, "texts_with_a_placeholder": share,
                         "placeholders_per_100_words": float(known[:, -2].mean() * 100)}
        print(f"{name}: top-1 {top1:.3f} from placeholders alone (chance {1 / args.users:.3f}); "
              f"{share:.0%} of known texts hold one; {known[:, -2].mean() * 100:.2f} per 100 words", flush=True)
    results["seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
