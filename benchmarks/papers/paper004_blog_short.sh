#!/usr/bin/env bash
# Paper 004's evaluation on blog_short (docs/results/paper004-blog-short): train the three
# user-conditioned character models, sweep them over the temperatures with textveil evaluate beside
# redaction and iterative translation, and write the table, the figures and sample texts.
#
# The release-aware attacker's synthetic known texts come from the release's own model (as if the
# model were published: the attacker's best case, so the risk is not understated). Beside it, for
# the Delta-RNN, an attacker who trained its own model on its known texts (same settings, seed 1)
# and never sees the release's weights (reports/delta-own-attacker, three temperatures).
#
#   benchmarks/papers/paper004_blog_short.sh [WORK_FOLDER]     (default: ../paper004; needs ../shared/data)
#
# Per user (150), the first 70 texts train the models and are the attacker's known texts; the last
# 30 are the release set. Everything is seeded: a second run reuses the models and the release cache.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${1:-$ROOT/../paper004}"
TV="$ROOT/.venv/bin/textveil"
PY="$ROOT/.venv/bin/python"
DATA="$ROOT/../shared/data/blog_short/blog_short.jsonl"
mkdir -p "$WORK/logs" "$WORK/models" "$WORK/reports"
cd "$WORK"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1   # two processes side by side on two cores

# CPU-sized training (the paper: 150 epochs); each model within 30 minutes on one core.
declare -A EPOCHS=([elman]=20 [delta]=12 [gru]=8)
train() {  # architecture seed folder
  [ -f "models/$3/manifest.json" ] || "$PY" "$ROOT/benchmarks/papers/paper004_train.py" --architecture "$1" \
      --epochs "${EPOCHS[$1]}" --seed "$2" --out "models/$3" > "logs/train-$3.log" 2>&1
}
train elman 0 elman &
train gru 0 gru &
(train delta 0 delta; train delta 1 delta-attacker)
wait

SUITE=$(printf "%s," {word1,word2,char1,char2,writeprints}-{svm,nb,knn,rls}); SUITE=${SUITE%,}
EVAL="--risk-corpus $DATA --label-field user --known-per-label 70 --attribute-field industry --collapse-per-label
      --attacks $SUITE --utility unigram-cosine,bigram-cosine,sentiment-cosine,attribute-f1,memorisation --seed 0"
evaluate() {  # name, then textveil evaluate's own options
  local name=$1; shift
  [ -f "reports/$name/results.json" ] || "$TV" evaluate $EVAL "$@" --out "reports/$name" > "logs/eval-$name.log" 2>&1
}
evaluate redact --mechanism redact &
evaluate translate --mechanism translate
wait
GRID=0.25,0.5,1,1.5,1.75
evaluate elman --model models/elman --grid $GRID &
evaluate delta --model models/delta --grid $GRID
wait
evaluate gru --model models/gru --grid $GRID &
evaluate delta-own-attacker --model models/delta --attacker-model models/delta-attacker --trainings release \
    --grid 0.25,1,1.75 --utility unigram-cosine
wait

"$PY" "$ROOT/benchmarks/papers/paper004_report.py" --work "$WORK" --out "$ROOT/docs/results/paper004-blog-short"
