#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (H200): builds with CUDA (or uses a carried build),
# runs the GPU-labelled tests, then prints a short table of GPU figures. Designed to end in under 8 minutes.
# Usage: scripts/device-check.sh [BUILD_DIR]   (results also go to $OUT when set)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build/device}
OUT=${OUT:-/tmp/fb-device-check}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TABLE="$OUT/table.md"
: >"$TABLE"
row() { echo "| $* |" | tee -a "$TABLE"; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv | tee "$OUT/nvidia-smi.csv"

if [ ! -x "$BUILD_DIR/tools/factorybench" ]; then
  echo "== building with CUDA in $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFACTORYBENCH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DFACTORYBENCH_BENCH=OFF >"$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build "$BUILD_DIR" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
fi
FB="$BUILD_DIR/tools/factorybench"
"$FB" --version
"$FB" info --backend cuda -o "$OUT/info.json" || echo "info failed"

echo "== GPU-labelled tests"
(cd "$BUILD_DIR" && timeout 240 ctest -L gpu --output-on-failure) >"$OUT/gpu-tests.log" 2>&1
gpu_rc=$?
tail -5 "$OUT/gpu-tests.log"

echo "| check | figure | reference | fraction |" | tee -a "$TABLE"
echo "| --- | --- | --- | --- |" | tee -a "$TABLE"
row "GPU-labelled tests" "exit $gpu_rc" "0" "-"

# --- GEMM section (issue 3) ---
# --- collective section (issue 4) ---
# --- training-step section (issue 5) ---

echo
echo "== summary table ($TABLE)"
cat "$TABLE"
