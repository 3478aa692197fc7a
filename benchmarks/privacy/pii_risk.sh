#!/usr/bin/env bash
# The entity stage's effect on risk (issue 28): emp at epsilon 10 and 15 with the stage on
# (placeholders, the default) and off, on one split per corpus, attacked by char3-svm, word1-svm
# and length trained on clean text and on text released the same way (the release-aware
# attacker runs the stage too). Writes docs/results/pii-risk/{blog,c50}-{on,off}/.
#
#   benchmarks/privacy/pii_risk.sh blog|c50      (needs ../shared/data; OMP_NUM_THREADS=1 to run both at once)
#
# blog: blog_short, 150 users, the first 70 posts known, the other 30 unknown, judged per user (the
# split of docs/results/compare-blog-short). c50: Reuters C50, the first 25 authors (read in place
# with --first-labels), C50train known (50 articles each), 10 C50test articles per author unknown;
# all 50 authors take about an hour per setting on 2 cores. Utility: semantic similarity (MiniLM)
# only. Seeded (seed 1): a run resumes when started again.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TV="$ROOT/.venv/bin/textveil"
DATA="$ROOT/../shared/data"
OUT="$ROOT/docs/results/pii-risk"
COMMON=(-m emp:10,15 --utility semantic-similarity --seed 1)
for stage in on off; do
  entities=$([ "$stage" = on ] && echo placeholder || echo off)
  case "${1:-}" in
    blog)
      "$TV" compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user --known-per-label 70 \
          --collapse-per-label "${COMMON[@]}" --entities "$entities" --out "$OUT/blog-$stage" ;;
    c50)
      "$TV" compare --risk-corpus "$DATA/reuters_c50" --first-labels 25 --unknown-per-label 10 \
          "${COMMON[@]}" --entities "$entities" --out "$OUT/c50-$stage" ;;
    *) echo "usage: $0 blog|c50" >&2; exit 2 ;;
  esac
done
