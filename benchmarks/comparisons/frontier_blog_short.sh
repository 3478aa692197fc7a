#!/usr/bin/env bash
# Issue 37's comparison on the full blog_short split: 150 users, their first 70 posts known and the
# other 30 released and judged per user, with the attacks trained on clean and on released known
# texts (char3-svm, word1-svm, length, and topic-svm: content words only), MiniLM similarity,
# fluency and the describing share, seed 1; emp 10 and 15, restyle 0.7, paraphrase at 25, 30 and
# 40 as it is by default, and the levers' best settings on the 30-user subset (BEST, one -m each).
# The points run in the order given (emp, BEST, paraphrase 40, 30, 25, then restyle), so a
# run cut short has the frontier's ends first. Resumable: run it again and it finishes what is
# missing; a setting added to BEST is measured alone. About 40 minutes per language-model setting
# on 2 cores with llama.cpp (15,000 releases each).
#
#   BEST='paraphrase[vocabulary=8000,width=12]:30' benchmarks/comparisons/frontier_blog_short.sh
#
# ONLY measures just the entries it names, into OUT: a long comparison run as pieces that each land
# on their own (the same split, seed and attacks, so their rows join into one table with
# frontier_levers_table.py):
#
#   ONLY='paraphrase:40' OUT=benchmarks/out/frontier-blog-short-paraphrase-40 \
#       benchmarks/comparisons/frontier_blog_short.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/frontier-blog-short}
PYTHON=${PYTHON:-.venv/bin/python}
BEST=${BEST:-}
source "$(dirname "$0")/only_entries.sh"
# shellcheck disable=SC2086  # BEST is a space-separated list of entries
only_entries emp:10,15 $BEST paraphrase:40,30,25 restyle:0.7
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user \
    --known-per-label 70 --collapse-per-label \
    --attacks char3-svm,word1-svm,length,topic-svm --utility semantic-similarity,fluency,describing --seed 1 \
    "${entries[@]}" \
    --out "$OUT"
