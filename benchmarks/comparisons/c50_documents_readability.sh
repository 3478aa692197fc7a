#!/usr/bin/env bash
# Whether a setting reads on whole news articles, measured in under an hour: the C50 comparison's
# authors and known articles (Reuters C50, the first 25 authors, 20 C50train articles each known to
# the attacker), but 4 judged C50test articles per author (100, drawn with seed 1) and the attacks
# trained on the clean known articles only, so no known article is released: the readability
# figures (similarity, fluency ratio, describing share, length ratio, with their intervals) and the
# epsilon per article are the setting's own; its risk is a clean-trained lower bound on 100 articles,
# not the comparison's (benchmarks/comparisons/compare_c50_documents.sh releases the 500 known
# articles too and takes hours a language-model setting).
#
#   ENTRY='paraphrase[score=public-base]:8' benchmarks/comparisons/c50_documents_readability.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
ENTRY=${ENTRY:-paraphrase[score=public-base]:8}
OUT=${OUT:-benchmarks/out/c50-documents-readability}
PYTHON=${PYTHON:-.venv/bin/python}
"$PYTHON" -m textveil.cli compare --risk-corpus "$DATA/reuters_c50" --first-labels 25 --texts-per-label 20 \
    --unknown-per-label 4 --entities placeholder \
    --attacks char3-svm,word1-svm,length,topic-svm --trainings clean \
    --utility semantic-similarity,fluency,describing,length-ratio --seed 1 \
    -m "$ENTRY" --out "$OUT"
