#!/usr/bin/env bash
# Issue 47's comparison on the cross-topic split of blog_short: every user with posts on two topics
# or more (NMF, 10 topics on content words, seed 0; a user whose posts are all on one topic is left
# out and counted), each user's 20 known posts on their main topic(s) and 10 posts on their other
# topics released and judged together (judged per user); entity stage on (placeholders);
# char3-svm, word1-svm, length and topic-svm (content words only), each trained on the clean known
# posts and on known posts released by the same mechanism and setting; MiniLM similarity, fluency,
# describing share and length ratio; seed 1. The same-stream table to read beside it is the
# committed frontier (docs/results/frontier-blog-short).
#
# Entries, in this order, so a run cut short has the frontier's ends first: emp 10 and 15,
# paraphrase by default at 30, 40 and 25, restyle 0.7, then the levers against style at 40 (the
# epsilon that keeps the most meaning), one at a time: a plain neutral register (prompt=neutral), a
# second rewrite of the first (rewrites=2: post-processing, no more privacy cost), sentence by
# sentence (unit=sentence), a public output vocabulary of the 8,000 commonest English tokens
# (vocabulary=8000) and a narrower score (width=12); then, toward the goal, the 8,000-token
# vocabulary at 45, a second rewrite with the neutral prompt at 40, a 4,000-token vocabulary at 40
# and the 8,000-token vocabulary with the narrower score at 40. Each language-model setting
# releases about 4,500 posts (3,000 known, 1,500 judged): about 20 minutes on 2 cores with
# llama.cpp (rewrites=2 twice that).
#
#   benchmarks/comparisons/compare_blog_cross_topic.sh      # OUT=benchmarks/out/blog-cross-topic; resumable
#
# ONLY measures just the entries it names, into OUT, so that the comparison can land in pieces that
# merge_comparisons.py joins (the same split, seed, attacks and utility):
#
#   ONLY='paraphrase:40' OUT=benchmarks/out/blog-cross-topic-paraphrase-40 \
#       benchmarks/comparisons/compare_blog_cross_topic.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/blog-cross-topic}
PYTHON=${PYTHON:-.venv/bin/python}
source "$(dirname "$0")/only_entries.sh"
only_entries emp:10,15 paraphrase:30,40,25 restyle:0.7 \
    "paraphrase[prompt=neutral]:40" "paraphrase[rewrites=2]:40" "paraphrase[unit=sentence]:40" \
    "paraphrase[vocabulary=8000]:40" "paraphrase[width=12]:40" "paraphrase[vocabulary=8000]:45" \
    "paraphrase[prompt=neutral,rewrites=2]:40" "paraphrase[vocabulary=4000]:40" \
    "paraphrase[vocabulary=8000,width=12]:40"
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user \
    --split cross-topic --known-per-label 20 --unknown-per-label 10 --collapse-per-label \
    --entities placeholder --attacks char3-svm,word1-svm,length,topic-svm \
    --utility semantic-similarity,fluency,describing,length-ratio --seed 1 \
    "${entries[@]}" \
    --out "$OUT"
