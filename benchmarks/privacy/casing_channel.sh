#!/usr/bin/env bash
# The entity stage's casing side channel (issue 38), on whole releases: emp at epsilon 10 and 15
# (public layout, stage on) of blog_short as written and of the same posts in lower case (a
# case-normalised input: the stage can read no one's capitals), attacked by char3-svm, word1-svm
# and length trained on clean known texts and on known texts released the same way. The first
# 150 users with 40 posts, 30 known and 10 judged per user; seed 1; resumable.
#
#   benchmarks/privacy/casing_channel.sh          # writes benchmarks/out/casing-channel/{as-written,lower-case}/
#
# What the placeholders alone give (no mechanism): benchmarks/privacy/casing_channel.py.
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/casing-channel}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT"
lower="$OUT/blog_short_lower_case.jsonl"
if [ ! -s "$lower" ]; then
  "$PYTHON" -c '
import json, sys
with open(sys.argv[1], encoding="utf-8") as source, open(sys.argv[2] + ".part", "w", encoding="utf-8") as out:
    for line in source:
        record = json.loads(line)
        record["text"] = record["text"].lower()
        out.write(json.dumps(record) + "\n")
' "$DATA/blog_short/blog_short.jsonl" "$lower"
  mv "$lower.part" "$lower"
fi
for variant in as-written lower-case; do
  corpus=$([ "$variant" = as-written ] && echo "$DATA/blog_short/blog_short.jsonl" || echo "$lower")
  "$PYTHON" -m textveil.cli compare --risk-corpus "$corpus" --label-field user --texts-per-label 40 \
      --known-per-label 30 --collapse-per-label --attacks char3-svm,word1-svm,length \
      --utility semantic-similarity --seed 1 -m emp:10,15 --out "$OUT/$variant"
done
