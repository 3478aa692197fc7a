#!/usr/bin/env bash
# Paper 002's evaluation on blog_short (docs/results/paper002-blog-short): split, train AE-DP and
# ER-AE (CPU-sized), sweep both with textveil evaluate beside Random-R and SynTF, write the tables.
#
#   benchmarks/paper002_blog_short.sh [WORK_FOLDER]     (default: ../paper002; needs ../shared/data)
#
# On 2 cores the two trainings take about 21 minutes side by side (one torch thread each), and the
# four evaluations about 45 minutes. Everything is seeded (seed 1): a second run reuses the release
# cache and gives the same figures.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="${1:-$ROOT/../paper002}"
TV="$ROOT/.venv/bin/textveil"
PY="$ROOT/.venv/bin/python"
DATA="$ROOT/../shared/data/blog_short/blog_short.jsonl"
mkdir -p "$WORK/logs" "$WORK/models" "$WORK/reports"
cd "$WORK"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1   # two processes side by side on two cores

[ -f splits/eval.jsonl ] || "$TV" split "$DATA" --label-field user --out splits   # per user, in order: 70/10/20

# CPU-sized models (the paper: 2 layers of 512 cells, vocabulary 20,000, length 50, BERT's 768-d embeddings)
MODEL="--set hidden=128 --set layers=1 --set vocabulary_size=6000 --set max_length=20 --set learning_rate=0.002
       --set epochs=3 --set batch_size=64 --seed 1"
[ -f models/aedp/manifest.json ] || "$TV" train aedp --corpus splits/train.jsonl --dev-corpus splits/dev.jsonl \
    --out models/aedp $MODEL > logs/aedp.log 2>&1 &
[ -f models/erae/manifest.json ] || "$TV" train erae --corpus splits/train.jsonl --dev-corpus splits/dev.jsonl \
    --out models/erae $MODEL --set pretrain_epochs=1 > logs/erae.log 2>&1
wait

# The entity stage is off: paper 002 has none, and Table 1 compares the mechanisms themselves.
EVAL="--risk-corpus splits/train.jsonl --risk-unknown splits/eval.jsonl --label-field user
      --attacks fasttext-char,char3-svm,word1-svm --utility semantic-similarity,stylometric-l2 --seed 1
      --entities off"
"$TV" evaluate --mechanism random $EVAL --out reports/random > logs/eval-random.log 2>&1 &
"$TV" evaluate --mechanism syntf --grid 20 $EVAL --out reports/syntf > logs/eval-syntf.log 2>&1
wait
"$TV" evaluate --model models/aedp --grid 10,20,50,100 $EVAL --out reports/aedp > logs/eval-aedp.log 2>&1 &
"$TV" evaluate --model models/erae --grid 10,20,50,100 $EVAL --out reports/erae > logs/eval-erae.log 2>&1
wait

# The same models under the sampler of the authors' public code (issue 30): a lexical set drawn from
# the generator, the set by the exponential mechanism, the token inside it at token_epsilon 0.1. Its
# Guarantee states the epsilon it really gives (ln(1 + e^(eps/2)) + ln N + 0.05 per token).
TWO_SET="--set sampler=two-set"
"$TV" evaluate --model models/aedp --grid 10,20,50,100 $TWO_SET $EVAL --out reports/aedp-two-set \
    > logs/eval-aedp-two-set.log 2>&1 &
"$TV" evaluate --model models/erae --grid 10,20,50,100 $TWO_SET $EVAL --out reports/erae-two-set \
    > logs/eval-erae-two-set.log 2>&1
wait

"$PY" "$ROOT/benchmarks/paper002_table1.py" --epsilon 20 --report Random-R=reports/random --report SynTF=reports/syntf \
    --report AE-DP=reports/aedp --report ER-AE=reports/erae \
    --report "AE-DP (two-set)=reports/aedp-two-set" --report "ER-AE (two-set)=reports/erae-two-set" --out table1.md
for epsilon in 20 100; do
  "$PY" "$ROOT/benchmarks/paper002_tables.py" --aedp models/aedp --erae models/erae --inputs splits/eval.jsonl \
      --epsilon "$epsilon" --seed 1 --count 4 --out "tables-eps$epsilon.md"
done
echo "written: $WORK/table1.md, $WORK/tables-eps20.md, $WORK/tables-eps100.md, $WORK/reports/*"
