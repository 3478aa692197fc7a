#!/usr/bin/env bash
# Issue 45's comparison of whole documents: Reuters C50, the first 25 authors (read in place), each
# author's first 20 C50train articles known to the attacker and 10 of their first 20 C50test articles
# released and judged one by one (chance 0.04); entity stage on (placeholders); char3-svm, word1-svm,
# length and topic-svm (content words only), each trained on the clean known articles and on known
# articles released by the same mechanism and setting; MiniLM similarity (aligned parts of long
# texts), fluency (80-word windows), describing share (per paragraph) and length ratio (released
# words / input words); seed 1. emp 10 and 15, paraphrase by default (every paragraph a unit) at
# 30, 40 and 25, restyle 0.7, in that order, so a run cut short has the default first. Each
# language-model setting releases all 750 articles (374,000 words): about an hour on 2 cores.
# Resumable: run it again and it finishes what is missing (releases are cached per setting).
#
#   benchmarks/comparisons/compare_c50_documents.sh      # OUT=benchmarks/out/c50-documents
#
# ONLY measures just the entries it names, into OUT, so that a long comparison can land in pieces
# (the same split, seed, attacks and utility: benchmarks/comparisons/merge_comparisons.py joins them):
#
#   ONLY='paraphrase:40' OUT=benchmarks/out/c50-documents-paraphrase-40 benchmarks/comparisons/compare_c50_documents.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/c50-documents}
PYTHON=${PYTHON:-.venv/bin/python}
source "$(dirname "$0")/only_entries.sh"
only_entries emp:10,15 paraphrase:30,40,25 restyle:0.7
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/reuters_c50" --first-labels 25 --texts-per-label 20 \
    --unknown-per-label 10 --entities placeholder \
    --attacks char3-svm,word1-svm,length,topic-svm \
    --utility semantic-similarity,fluency,describing,length-ratio --seed 1 \
    "${entries[@]}" \
    --out "$OUT"
