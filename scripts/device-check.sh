#!/usr/bin/env bash
# The one prepared script for a lent GPU machine (H200, issue 15). It runs a packed build: that machine has no
# Open MPI, OpenBLAS or cmake dependencies, so build and pack here first:
#   cmake --preset release -DFACTORYBENCH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a && cmake --build --preset release
#   ../shared/device/pack.sh build/release .device
#   mkdir -p .device/build/bench && cp build/release/bench/adam_bench .device/build/bench/
# then, in one device run with carry [".device"]:  bash scripts/device-check.sh .device/build
# It runs the GPU test executables directly (no ctest there), our GPU figures, and the PyTorch anchors of the
# same work (scripts/torch_anchors.py, with the machine's torch) in the same session, and prints a table of
# figure, anchor and ratio. Designed to end in under 8 minutes. Logs go to FB_DEVICE_LOG_DIR (default
# /tmp/fb-device-check); where the device tool sets $OUT (at most 8 files come back from it), the table and
# one tarball of every log are copied there after each part, so a run cut short still returns what it has.
# Usage: scripts/device-check.sh [--dry-run] [BUILD_DIR]   (default .device/build)
#   --dry-run: check the build and list what would run, without a GPU; exit 0 when everything is there.
# Exit: 0 done (see the table), 1 a GPU test failed, 2 no build to run, 77 no GPU here (nothing measured).
set -uo pipefail
cd "$(dirname "$0")/.."
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
BUILD_DIR=${1:-.device/build}
LOG=${FB_DEVICE_LOG_DIR:-/tmp/fb-device-check}
mkdir -p "$LOG"
TABLE="$LOG/table.md"
: >"$TABLE"
# What comes back from the device machine: $LOG/table.md and $LOG/device-check-logs.tar.gz.
save_logs() {
  [ -n "${OUT:-}" ] && [ "$OUT" != "$LOG" ] || return 0
  mkdir -p "$OUT" && cp "$TABLE" "$OUT/table.md" &&
    tar -czf "$OUT/device-check-logs.tar.gz" -C "$LOG" --exclude=device-check-logs.tar.gz . 2>/dev/null || true
}
# One table row: cells joined with " | ".
row() {
  local line="|" cell
  for cell in "$@"; do line+=" $cell |"; done
  echo "$line" | tee -a "$TABLE"
}

FB="$BUILD_DIR/tools/factorybench"
if [ ! -x "$FB" ]; then
  echo "device-check: no build at $FB. Build with CUDA here and pack it (../shared/device/pack.sh build/release" \
    ".device), then run: scripts/device-check.sh .device/build" >&2
  exit 2
fi
# A packed build brings env.sh (library path, Open MPI relocation); a plain build dir needs nothing.
FB_LD_PATH=""
if [ -f "$BUILD_DIR/../env.sh" ]; then . "$BUILD_DIR/../env.sh"; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
with_libs() { LD_LIBRARY_PATH="$FB_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

# The GPU test executables: packed in BUILD_DIR/gpu, or in BUILD_DIR/tests of a plain build.
GPU_TESTS=()
for t in "$BUILD_DIR"/gpu/*_test "$BUILD_DIR"/tests/*_test; do
  [ -x "$t" ] || continue
  if [[ $(basename "$t") =~ cuda|nccl|gpu ]]; then GPU_TESTS+=("$t"); fi
done
BENCH_DIR="$BUILD_DIR/bench"
TORCH_PY=${TORCH_PYTHON:-}
if [ -z "$TORCH_PY" ]; then
  for p in /opt/torch/.venv/bin/python3 python3; do
    if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then TORCH_PY=$p; break; fi
  done
fi

gpu_reason=""
if ! command -v nvidia-smi >/dev/null; then
  gpu_reason="nvidia-smi not found"
elif ! nvidia-smi -L >"$LOG/nvidia-smi-L.txt" 2>&1; then
  gpu_reason="nvidia-smi -L: $(head -n1 "$LOG/nvidia-smi-L.txt")"
fi

if [ "$DRY" = 1 ] || [ -n "$gpu_reason" ]; then
  echo "== device-check plan for $BUILD_DIR"
  echo "factorybench: $FB"
  echo "GPU test executables (${#GPU_TESTS[@]}): $(for t in "${GPU_TESTS[@]}"; do basename "$t"; done | paste -sd' ')"
  for b in adam_bench; do
    if [ -x "$BENCH_DIR/$b" ]; then echo "bench: $BENCH_DIR/$b"; else echo "bench: $b not in $BENCH_DIR (its rows read n/a)"; fi
  done
  echo "torch anchors: ${TORCH_PY:-no python with torch here (anchor cells read n/a)}"
  if [ "$DRY" = 1 ]; then
    row "check" "factorybench" "anchor, same session" "ratio"
    row "---" "---" "---" "---"
    row "(dry run: nothing measured)" "-" "-" "-"
    save_logs
  fi
  missing=0
  [ ${#GPU_TESTS[@]} -gt 0 ] || { echo "device-check: no GPU test executables in $BUILD_DIR" >&2; missing=1; }
  if [ -n "$gpu_reason" ] && [ "$DRY" = 0 ]; then
    echo "device-check: no GPU here ($gpu_reason): nothing measured" >&2
    exit 77
  fi
  exit $((missing ? 2 : 0))
fi

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv | tee "$LOG/nvidia-smi.csv"
with_libs "$FB" --version | tee "$LOG/version.txt"
with_libs "$FB" info --backend cuda -o "$LOG/info.json" >"$LOG/info.log" 2>&1 || echo "info failed (see $LOG/info.log)"

echo "== GPU tests, run directly (${#GPU_TESTS[@]} executables)"
failed=()
skipped=()
for t in "${GPU_TESTS[@]}"; do
  if with_libs timeout "${GPU_TEST_TIMEOUT:-120}" "$t" --gtest_brief=1 >"$LOG/$(basename "$t").log" 2>&1; then
    echo "pass $(basename "$t")"
    if grep -q "SKIPPED" "$LOG/$(basename "$t").log"; then skipped+=("$(basename "$t")"); fi
  else
    echo "FAIL $(basename "$t") (exit $?): $(grep -m3 -E 'Failure|FAILED|error' "$LOG/$(basename "$t").log" | paste -sd' ')"
    failed+=("$(basename "$t")")
  fi
done
save_logs

# --- our figures ---
field() {  # FILE EXPR over d (the report) and r (its results): a value, or n/a
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['results']; print($2)" "$1" 2>/dev/null || echo n/a
}
declare -A OURS
for d in bf16 fp8_e4m3; do
  with_libs timeout 150 "$FB" gemm --backend cuda --dtype "$d" --m 8192 --n 8192 --k 8192 --autotune 8 --iters 50 \
    --warmup 10 -o "$LOG/gemm-$d.json" >"$LOG/gemm-$d.log" 2>&1
  OURS[gemm_$d]=$(field "$LOG/gemm-$d.json" "'%.1f' % r[0]['metrics']['tflops']['value']")
done
OURS[attention]=n/a OURS[adam]=n/a OURS[adam_gbs]=n/a OURS[copy]=n/a
# Attention through the CLI: Llama 3 8B's layer (32/8 heads, d 128) at s 8192, cuDNN, sampled fp64 check.
with_libs timeout 120 "$FB" attention --backend cuda --engine cudnn --seq 8192 -n 20 -w 5 -o "$LOG/attention.json" \
  >"$LOG/attention.log" 2>&1
OURS[attention]=$(field "$LOG/attention.json" "'%.1f' % r[0]['metrics']['tflops']['value'] if r[0]['status'] == 'ok' else 'FAILED (' + r[0]['error'] + ')'")
# MLA's unequal head dims (q/k 192, v 128; DeepSeek-V3's 128 heads over TP 8), where cuDNN supports them.
with_libs timeout 90 "$FB" attention --backend cuda --engine cudnn --model deepseek-v3 --tp 8 --seq 4096 -n 10 -w 3 \
  -o "$LOG/attention-mla.json" >"$LOG/attention-mla.log" 2>&1
OURS[attention_mla]=$(field "$LOG/attention-mla.json" "'%.1f' % r[0]['metrics']['tflops']['value'] if r[0]['status'] == 'ok' else 'FAILED (' + r[0]['error'] + ')'")
[ "${OURS[attention_mla]}" = n/a ] && OURS[attention_mla]="n/a: $(tail -n1 "$LOG/attention-mla.log")"
# cuDNN's fp8 SDPA at the same layer, scales calibrated by one untimed pass, checked at fp8's tolerance.
with_libs timeout 90 "$FB" attention --backend cuda --engine cudnn --dtype fp8_e4m3 --seq 8192 -n 10 -w 3 \
  -o "$LOG/attention-fp8.json" >"$LOG/attention-fp8.log" 2>&1
OURS[attention_fp8]=$(field "$LOG/attention-fp8.json" "'%.1f' % r[0]['metrics']['tflops']['value'] if r[0]['status'] == 'ok' else 'FAILED (' + r[0]['error'] + ')'")
[ "${OURS[attention_fp8]}" = n/a ] && OURS[attention_fp8]="n/a: $(tail -n1 "$LOG/attention-fp8.log")"
if [ -x "$BENCH_DIR/adam_bench" ]; then
  with_libs timeout 150 "$BENCH_DIR/adam_bench" 2>&1 | tee "$LOG/adam-bench.log"
  OURS[adam]=$(grep -v "sum of squares" "$LOG/adam-bench.log" | sed -n 's/.*fraction \([0-9.]*\).*/\1/p' | head -n1)
  OURS[adam_gbs]=$(grep -v "sum of squares" "$LOG/adam-bench.log" | sed -n 's/.* \([0-9.]*\) GB\/s (28.*/\1/p' | head -n1)
  OURS[copy]=$(sed -n 's/.*copy \([0-9.]*\) GB\/s read+write.*/\1/p' "$LOG/adam-bench.log" | head -n1)
  # The bench replays sampled elements on the host reference after timing; a figure without it is no figure.
  grep -q "^adam check: " "$LOG/adam-bench.log" || OURS[adam]="FAILED check (${OURS[adam]:-n/a})"
fi
train_field() {  # FILE EXPR over r (the first result)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['results'][0]; print($2)" "$1" 2>/dev/null || echo n/a
}
with_libs timeout 150 "$FB" train --backend cuda --model llama3-8b --layers 4 --dtype bf16 --steps 6 --warmup-steps 2 \
  -o "$LOG/train-llama3-8b.json" >"$LOG/train-llama3-8b.log" 2>&1
tail -n 15 "$LOG/train-llama3-8b.log"
OURS[step]=$(train_field "$LOG/train-llama3-8b.json" "'%.4f' % r['metrics']['step_time_s']['value']")
OURS[mfu]=$(train_field "$LOG/train-llama3-8b.json" "'%.3f' % r['metrics']['mfu']['value']")
OURS[engine]=$(train_field "$LOG/train-llama3-8b.json" "r['params']['attention_engine']")
OURS[breakdown]=$(train_field "$LOG/train-llama3-8b.json" "', '.join('%s %.4f' % (k, v) for k, v in sorted(r['extra']['breakdown'].items(), key=lambda kv: -kv[1]) if v > 0)")
with_libs timeout 120 "$FB" train --backend cuda --model mixtral-8x7b --layers 2 --dtype bf16 --steps 5 --warmup-steps 2 \
  -o "$LOG/train-mixtral.json" >"$LOG/train-mixtral.log" 2>&1
OURS[mixtral_mfu]=$(train_field "$LOG/train-mixtral.json" "'%.3f' % r['metrics']['mfu']['value']")
OURS[mixtral_breakdown]=$(train_field "$LOG/train-mixtral.json" "', '.join('%s %.4f' % (k, v) for k, v in sorted(r['extra']['breakdown'].items(), key=lambda kv: -kv[1]) if v > 0)")

save_logs
# --- PyTorch anchors, same session ---
ANCHORS="$LOG/anchors.jsonl"
: >"$ANCHORS"
if [ -n "$TORCH_PY" ]; then
  echo "== PyTorch anchors ($TORCH_PY)"
  PYTHONUNBUFFERED=1 timeout 240 "$TORCH_PY" scripts/torch_anchors.py >"$ANCHORS" 2>"$LOG/anchors.log"
  cat "$ANCHORS"
else
  echo "== no python with torch here: anchors n/a"
fi
anchor() {  # NAME_PREFIX: the value of the first anchor whose name starts with it, or n/a
  python3 -c "
import json, sys
for line in open(sys.argv[1]):
    a = json.loads(line)
    if a['anchor'].startswith(sys.argv[2]) and 'value' in a:
        print(a['value']); break
else:
    print('n/a')" "$ANCHORS" "$1" 2>/dev/null || echo n/a
}
anchor_note() {
  python3 -c "
import json, sys
for line in open(sys.argv[1]):
    a = json.loads(line)
    if a['anchor'].startswith(sys.argv[2]) and 'value' in a:
        print(a.get('note', '')); break" "$ANCHORS" "$1" 2>/dev/null
}
ratio() {  # A B: A / B to 2 places, or -
  python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2" 2>/dev/null || echo -
}

copy_frac=$(anchor_note "torch AdamW" | sed -n 's/fraction of copy \([0-9.]*\)/\1/p')
torch_step=$(anchor "torch eager step")
echo
row "check" "factorybench" "anchor, same session" "ratio"
row "---" "---" "---" "---"
row "GPU tests run directly (${#GPU_TESTS[@]} executables)" \
  "${#failed[@]} failed${failed[*]:+ (${failed[*]})}, ${#skipped[@]} with skipped tests${skipped[*]:+ (${skipped[*]})}" \
  "0 failed, 0 skipped" "-"
t=$(anchor "torch.matmul bf16")
row "GEMM bf16 8192^3, autotune 8 (TFLOP/s)" "${OURS[gemm_bf16]}" "torch.matmul $t" "$(ratio "${OURS[gemm_bf16]}" "$t")"
t=$(anchor "torch._scaled_mm fp8")
row "GEMM fp8 e4m3 8192^3, autotune 8 (TFLOP/s)" "${OURS[gemm_fp8_e4m3]}" "torch._scaled_mm $t" "$(ratio "${OURS[gemm_fp8_e4m3]}" "$t")"
t=$(anchor "torch SDPA cudnn")
row "attention fwd+bwd causal s8192 32/8 heads d128 (TFLOP/s)" "${OURS[attention]:-n/a}" "torch SDPA cuDNN $t" "$(ratio "${OURS[attention]:-n/a}" "$t")"
t=$(anchor "torch SDPA flash")
row "attention fwd+bwd, vs FlashAttention backend (TFLOP/s)" "${OURS[attention]:-n/a}" "torch SDPA flash $t" "$(ratio "${OURS[attention]:-n/a}" "$t")"
row "attention MLA deepseek-v3 tp8 s4096, q/k 192 v 128 (TFLOP/s)" "${OURS[attention_mla]:-n/a}" "-" "-"
row "attention fp8 e4m3 causal s8192 32/8 heads d128 (TFLOP/s)" "${OURS[attention_fp8]:-n/a}" \
  "ours bf16 ${OURS[attention]:-n/a}" "$(ratio "${OURS[attention_fp8]:-n/a}" "${OURS[attention]:-n/a}")"
t=$(anchor "torch copy 1 GiB")
row "device copy 1 GiB, read+write (GB/s)" "${OURS[copy]:-n/a}" "torch copy_ $t" "$(ratio "${OURS[copy]:-n/a}" "$t")"
row "Adam bf16 512 Mi params, fraction of copy bandwidth" "${OURS[adam]:-n/a} (${OURS[adam_gbs]:-n/a} GB/s)" \
  "torch AdamW fused fp32 ${copy_frac:-n/a}" "$(ratio "${OURS[adam]:-n/a}" "${copy_frac:-n/a}")"
row "train llama3-8b --layers 4 seq 8192 bf16 (s/step, MFU; attention engine)" "${OURS[step]} s, MFU ${OURS[mfu]}; ${OURS[engine]}" \
  "torch eager ${torch_step} s" "$(ratio "$torch_step" "${OURS[step]}") (torch time / ours)"
row "its breakdown (s per step, profiled warm-up step)" "${OURS[breakdown]}" "-" "-"
row "train mixtral-8x7b --layers 2 bf16 MFU" "${OURS[mixtral_mfu]}" "-" "-"
row "its breakdown (s per step)" "${OURS[mixtral_breakdown]}" "-" "-"

# --- collective, health, telemetry smoke (issues 4, 9) ---
with_libs timeout 150 "$FB" collective --backend cuda --op all --check --inplace -b 8 -e 256M -f 8 -n 10 -w 3 \
  -o "$LOG/collective-nccl.json" >"$LOG/collective-nccl.txt" 2>&1
row "NCCL 1-GPU smoke (--op all --check --inplace)" "exit $?" "0" "-"
with_libs timeout 120 "$FB" health --backend cuda --expect-gpu H200 --checkpoint-dir /tmp -o "$LOG/health.json" \
  >"$LOG/health.log" 2>&1
row "health --expect-gpu H200" "exit $?, $(field "$LOG/health.json" "d['summary']['health']['verdict']")" "pass" "-"

save_logs
echo
echo "== summary table ($TABLE)"
cat "$TABLE"
[ ${#failed[@]} -eq 0 ]
