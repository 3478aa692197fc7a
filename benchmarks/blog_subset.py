"""Write the first USERS users of a JSONL corpus (in file order), PER records each, to TARGET:
the blog subset of the paraphrase report and of the language-model comparison.

    python benchmarks/blog_subset.py SOURCE TARGET USERS PER

The subset is corpus text: write it to a scratch folder outside the repository, never commit it.
"""

from __future__ import annotations

import collections
import json
import sys


def main(source: str, target: str, users: int, per: int) -> None:
    rows = [json.loads(line) for line in open(source, encoding="utf-8")]
    order = list(dict.fromkeys(r["user"] for r in rows))[:users]
    kept: dict[str, list] = collections.defaultdict(list)
    for row in rows:
        if row["user"] in order and len(kept[row["user"]]) < per:
            kept[row["user"]].append(row)
    with open(target, "w", encoding="utf-8") as out:
        for user in order:
            for row in kept[user]:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
