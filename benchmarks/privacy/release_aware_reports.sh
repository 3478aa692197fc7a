#!/usr/bin/env bash
# The release-aware reports of docs/results (issue 7), as pieces that run in parallel.
#
# Every piece is one `textveil evaluate` over the same corpora and seed; the pieces of a
# report differ only in their grid values or attacks, and benchmarks/privacy/merge_results.py joins
# them. On a machine with many cores (and a CUDA GPU: TEXTVEIL_DECODE_DEVICE=cuda) they run
# side by side; on two cores the whole set takes hours.
#
#   DATA=../shared/data OUT=/tmp/reports JOBS=16 PYTHON=.venv/bin/python benchmarks/privacy/release_aware_reports.sh
set -euo pipefail
DATA=${DATA:-../shared/data}
OUT=${OUT:-benchmarks/out/reports}
JOBS=${JOBS:-2}
PYTHON=${PYTHON:-.venv/bin/python}
mkdir -p "$OUT/pieces" "$OUT/logs"

C50="--risk-corpus $DATA/reuters_c50 --unknown-per-label 10"
BLOG="--risk-corpus $DATA/blog_short/blog_short.jsonl --label-field user --known-per-label 70 --collapse-per-label"
BBC="--utility-corpus $DATA/bbc_news/bbc --utility-encoding latin-1"
STYLO=""
for f in word1 word2 char1 char2 char3 writeprints; do for c in svm nb knn rls; do STYLO="$STYLO $f-$c"; done; done
# paper 004's 24 combinations, fastText, impostors, and the stronger attacks of issue 7, in
# six pieces of about equal cost (the writeprints SVM and the ensemble are the slow ones)
FULL=(
  "writeprints-svm,word1-svm,word1-nb,word1-knn,word1-rls,length"
  "ensemble,word2-svm,word2-nb,word2-knn,word2-rls"
  "fasttext-char,char1-svm,char1-nb,char1-knn,char1-rls,embedding-1nn"
  "impostors,char2-svm,char2-nb,char2-knn,char2-rls"
  "writeprints-nb,writeprints-knn,writeprints-rls,char3-svm,char3-nb,char3-knn,char3-rls"
  "char4-svm,char5-svm,typed-svm"
)
SWEEP_ATTACKS="char2-svm,char3-svm,word1-svm,writeprints-svm,typed-svm,length,ensemble"
PAPER001_ATTACKS="impostors,embedding-1nn,char3-svm,fasttext-char,ensemble,length"

jobs=()
for layout in public keep; do
  for i in "${!FULL[@]}"; do
    jobs+=("c50-eps1-$layout-$i|$C50 --grid 1 --layout $layout --attacks ${FULL[$i]} --utility unigram-cosine,stylometric-l2")
    jobs+=("blog-eps1-$layout-$i|$BLOG --grid 1 --layout $layout --attacks ${FULL[$i]} --utility unigram-cosine,stylometric-l2")
  done
  for eps in 5 10 15 20 30; do
    jobs+=("blog-sweep-$layout-$eps|$BLOG --grid $eps --layout $layout --attacks $SWEEP_ATTACKS --utility unigram-cosine,stylometric-l2")
  done
done
for eps in 8 10 12 15 20 30; do
  jobs+=("paper001-$eps|$C50 $BBC --grid $eps --attacks $PAPER001_ATTACKS --utility topic-fasttext,topic-fasttext-pretrained,topic-5nn,unigram-cosine")
done

run_piece() {
  local name=${1%%|*} args=${1#*|}
  # shellcheck disable=SC2086
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $PYTHON -m textveil.cli evaluate $args --seed 1 \
    --out "$OUT/pieces/$name" > "$OUT/logs/$name.log" 2>&1 && echo "done $name" || echo "FAILED $name"
}
export -f run_piece
export OUT PYTHON
printf '%s\n' "${jobs[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_piece "$@"' _ {}

merge() {  # merge OUT_NAME TITLE PIECE_PREFIX
  local pieces=("$OUT"/pieces/$3*/results.json)
  [ -e "${pieces[0]}" ] && $PYTHON benchmarks/privacy/merge_results.py "$OUT/$1" --title "$2" "${pieces[@]}"
}
for layout in public keep; do
  merge "c50-eps1-$layout" "Reuters C50 at epsilon 1, --layout $layout: every attack, clean- and release-trained" "c50-eps1-$layout-"
  merge "blog-short-$layout" "blog_short (150 users, 70/30, per-user mean), --layout $layout" "blog-*-$layout-"
done
merge "paper001-c50-bbc-release-aware" "Paper 001's sweep with release-aware attacks (C50 risk, BBC topic)" "paper001-"
