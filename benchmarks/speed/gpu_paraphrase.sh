#!/usr/bin/env bash
# paraphrase on one GPU against transformers' generate (issue 46), as one command: a model of the
# bundled model's shape with random weights (the 94 MB file does not travel to a GPU machine that
# takes 64 MiB a call; speed depends on the shape, not the values), 256-token prompts, 64 new
# tokens, at 128 and 1,024 rows, each after a warm-up of the same shape; the draw on the device.
# Writes one JSON per batch size, and the GPU, driver and library versions, into OUT.
#
#   .venv/bin/python benchmarks/speed/model_of_shape.py prepare benchmarks/out/smollm2-shape   # here, once
#   OUT=benchmarks/out/gpu benchmarks/speed/gpu_paraphrase.sh                                  # on the GPU
#
# PYTHON is a Python with torch (CUDA), transformers and textveil's requirements (default python3,
# with the repository on PYTHONPATH). With COMPARE=1, and where ../shared/data and the bundled model
# are there, it then runs the 150-user blog comparison of paraphrase at 30 on the GPU
# (benchmarks/comparisons/frontier_blog_short.sh, ONLY='paraphrase:30') and writes its time.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$ROOT/benchmarks/out/gpu}
SHAPE=${SHAPE:-$ROOT/benchmarks/out/smollm2-shape}
MODEL=${MODEL:-/tmp/smollm2-random}
ROWS=${ROWS:-128 1024}
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
mkdir -p "$OUT"
[ -f "$MODEL/config.json" ] || "$PYTHON" "$ROOT/benchmarks/speed/model_of_shape.py" weights "$SHAPE" "$MODEL"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$PYTHON" -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'transformers', transformers.__version__)"; } | tee "$OUT/versions.txt"
for rows in $ROWS; do
    "$PYTHON" "$ROOT/benchmarks/speed/bench_paraphrase.py" --engine transformers --model "$MODEL" \
        --prompt-tokens 256 --max-new-tokens 64 --batch "$rows" --texts $((2 * rows)) --no-quality \
        | tee "$OUT/paraphrase-$rows-rows.json"
done
if [ "${COMPARE:-0}" = 1 ]; then
    cd "$ROOT"  # the comparison script reads ../shared/data from the repository root
    started=$(date +%s)
    TEXTVEIL_DEVICE=cuda ONLY='paraphrase:30' OUT="$OUT/frontier-paraphrase-30" PYTHON="$PYTHON" \
        "$ROOT/benchmarks/comparisons/frontier_blog_short.sh"
    echo "{\"comparison\": \"blog_short 150 users, paraphrase 30\", \"seconds\": $(( $(date +%s) - started ))}" \
        | tee "$OUT/comparison-time.json"
fi
