#!/usr/bin/env bash
# The same-stream table to read beside the cross-topic one (compare_blog_cross_topic.sh): the first
# 150 users of blog_short, each user's first 20 posts known to the attacker and 10 of their later
# posts released and judged together (judged per user, chance 1/150); entity stage on
# (placeholders); char3-svm, word1-svm, length and topic-svm (content words only), each trained on
# the clean known posts and on known posts released by the same mechanism and setting; MiniLM
# similarity, fluency, describing share and length ratio; seed 1.
#
# Why 20 known and 10 judged rather than the older same-stream frontier's 70 and 30
# (docs/results/frontier-blog-short, textveil 0.3.0, before per-text outcomes were kept): with the
# cross-topic split's sizes the two tables differ only in whether the judged posts share the known
# posts' topics, and a language-model setting releases about 4,500 posts instead of 15,000 (about
# an hour on 2 cores rather than four).
#
# Entries, in this order, so a run cut short has the bar first: emp 10 and 15, emp at 10 then
# polish, the public base at 8, 12 and 16 per token, select-write at 10, 50 and 100 per document.
# Resumable part-way (releases are cached in parts).
#
#   benchmarks/comparisons/compare_blog_same_stream.sh      # OUT=benchmarks/out/blog-same-stream
#
# ONLY measures just the entries it names, into OUT, so that the comparison lands in pieces that
# merge_comparisons.py joins (the same split, seed, attacks and utility):
#
#   ONLY='select-write:10' OUT=benchmarks/out/blog-same-stream-sw10 \
#       benchmarks/comparisons/compare_blog_same_stream.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/blog-same-stream}
PYTHON=${PYTHON:-.venv/bin/python}
source "$(dirname "$0")/only_entries.sh"
only_entries emp:10,15 emp:10+polish "paraphrase[score=public-base]:8,12,16" select-write:10,50,100
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user \
    --first-labels 150 --known-per-label 20 --unknown-per-label 10 --collapse-per-label \
    --entities placeholder --attacks char3-svm,word1-svm,length,topic-svm \
    --utility semantic-similarity,fluency,describing,length-ratio --seed 1 \
    "${entries[@]}" \
    --out "$OUT"
