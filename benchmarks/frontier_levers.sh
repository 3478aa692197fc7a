#!/usr/bin/env bash
# Issue 37's levers, each on the 30-user subset of blog_short (the split of compare-blog-short-lm:
# the first 30 users, 20 known and 5 unknown posts each, judged per user), every run with the same
# attacks (clean- and release-trained), utility and seed. One `textveil compare` per lever value
# (a mechanism's other parameters are per run), resumable; the per-lever table is written by
# benchmarks/frontier_levers_table.py.
#
#   LEVER=vocabulary VALUES="all 8000 4000" GRID=25,30 benchmarks/frontier_levers.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
WORK=${WORK:-benchmarks/out/frontier-levers}
PYTHON=${PYTHON:-.venv/bin/python}
LEVER=${LEVER:-vocabulary}
VALUES=${VALUES:-all 8000 4000}
GRID=${GRID:-25,30}
USERS=${USERS:-30}
PER=${PER:-25}
KNOWN=${KNOWN:-20}
for value in $VALUES; do
  "$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user \
      --first-labels "$USERS" --texts-per-label "$PER" --known-per-label "$KNOWN" --collapse-per-label \
      --attacks char3-svm,word1-svm,length --utility semantic-similarity,fluency --seed 1 \
      -m "paraphrase:$GRID" --set "paraphrase.$LEVER=$value" --out "$WORK/$LEVER-$value"
done
