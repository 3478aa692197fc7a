#!/usr/bin/env bash
# Issue 37's levers on the 30-user subset of blog_short (the split of compare-blog-short-lm: the
# first 30 users, 20 known and 5 unknown posts each, judged per user), in one `textveil compare`:
# every setting meets the same attacks (trained on clean and on released known texts; topic-svm
# reads content words only: what no meaning-keeping release can remove), the same utility and the
# same seed. Resumable (run it again to finish). The per-lever table: frontier_levers_table.py.
#
#   benchmarks/comparisons/frontier_levers.sh                # writes benchmarks/out/frontier-levers/
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/frontier-levers}
PYTHON=${PYTHON:-.venv/bin/python}
V=${VOCABULARY:-8000}   # the public vocabulary the other levers are tried with
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/blog_short/blog_short.jsonl" --label-field user \
    --first-labels 30 --texts-per-label 25 --known-per-label 20 --collapse-per-label \
    --attacks char3-svm,word1-svm,length,topic-svm --utility semantic-similarity,fluency,describing --seed 1 \
    -m emp:10,15 -m restyle:0.7 \
    -m paraphrase:25,30,40 \
    -m "paraphrase[vocabulary=$V]:25,30,40" \
    -m "paraphrase[vocabulary=4000]:25,30" \
    -m "paraphrase[vocabulary=$V,width=12]:30,40" \
    -m "paraphrase[vocabulary=$V,unit=sentence,max_sentences=4,max_new_tokens=16]:30,40" \
    -m "paraphrase[vocabulary=$V,prompt=neutral]:30" \
    -m "paraphrase[vocabulary=$V,prompt=one-shot]:30" \
    -m "paraphrase[vocabulary=$V,prompt=default-system]:30" \
    -m "paraphrase[vocabulary=$V,max_new_tokens=32]:30" \
    --out "$OUT"
