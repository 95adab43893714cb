#!/usr/bin/env bash
# scripts/device-check.sh up to where it needs a GPU (issue 15): --dry-run lists the GPU test executables it
# would run directly and prints the table with its column separators; with no build it says so (exit 2);
# without a GPU it stops before measuring anything (exit 77), with one clear line. What comes back from the
# device tool's $OUT (at most 8 files): the table and one tarball of the logs.
. "$(dirname "$0")/../lib.sh"
cd "$T"
SCRIPT="$FB_SOURCE_DIR/scripts/device-check.sh"
BUILD=$(cd "$(dirname "$FACTORYBENCH")/.." && pwd)
export OUT="$T/out" FB_DEVICE_LOG_DIR="$T/logs"

run_capture dry bash "$SCRIPT" --dry-run "$BUILD"
[ "$RC" -eq 0 ] || fail "dry run: exit $RC: $(cat "$T/dry.err")"
grep -q "adam_multi_tensor_cuda_test" "$T/dry.out" || fail "dry run does not list the GPU test executables"
grep -q "attention_cudnn_cuda_test" "$T/dry.out" || fail "dry run does not list the cuDNN attention test"
grep -qx "| check | factorybench | anchor, same session | ratio |" "$T/dry.out" ||
  fail "table header without column separators: $(grep check "$T/dry.out")"
grep -qx "| --- | --- | --- | --- |" "$OUT/table.md" || fail "table.md lacks the separator row"
tar -tzf "$OUT/device-check-logs.tar.gz" 2>/dev/null | grep -qx "./table.md" ||
  fail "no log tarball with the table in \$OUT: $(ls "$OUT")"
[ "$(ls "$OUT" | wc -l)" -le 8 ] || fail "more than 8 files in \$OUT: $(ls "$OUT")"
ok "dry run lists the GPU tests and prints a separated table"

expect_error no_build 2 "device-check: no build at $T/nowhere/tools/factorybench" bash "$SCRIPT" "$T/nowhere"

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  ok "a GPU is visible: the no-GPU stop is not exercised here"
else
  rm -rf "$OUT"
  run_capture no_gpu bash "$SCRIPT" "$BUILD"
  [ "$RC" -eq 77 ] || fail "without a GPU: exit $RC, expected 77"
  [ "$(grep -c . "$T/no_gpu.err")" -eq 1 ] && grep -q "device-check: no GPU here (.*): nothing measured" "$T/no_gpu.err" ||
    fail "without a GPU: stderr '$(cat "$T/no_gpu.err")'"
  [ ! -s "$OUT/table.md" ] && [ ! -s "$T/logs/table.md" ] || fail "without a GPU a table was written: $(cat "$T/logs/table.md")"
  ok "without a GPU it stops with one line and exit 77"
fi
finish
