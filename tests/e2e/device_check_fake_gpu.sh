#!/usr/bin/env bash
# scripts/device-check.sh past its GPU check, on this machine, with a fake nvidia-smi and a stand-in build whose
# commands fail as they might on a first GPU run: a GEMM whose own check failed, a GPU test that hangs, a budget
# that runs out. What the one device session would return must hold up: no figure from an earlier run, FAILED
# for a failed check (never its figure), a hung test cut off and counted, the steps past the budget listed as
# not run, and the table in $OUT.
. "$(dirname "$0")/../lib.sh"
cd "$T"
SCRIPT="$FB_SOURCE_DIR/scripts/device-check.sh"
mkdir -p bin build/tools build/gpu build/bench logs out
cat >bin/nvidia-smi <<'SH'
#!/usr/bin/env bash
case "$*" in -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)" ;; *) printf 'name, driver_version\nNVIDIA H200, 580.00\n' ;; esac
SH
cat >build/tools/factorybench <<SH
#!/usr/bin/env bash
case "\$1" in
  --version) exec "$FACTORYBENCH" --version ;;
  info) printf '{"tool": {"git_commit": "0123456789ab"}, "results": []}' >"\$5" ;;
  gemm) while [ \$# -gt 0 ]; do [ "\$1" = -o ] && out=\$2; shift; done
        printf '{"results": [{"status": "failed", "error": "wrong result: 3 of 64 sampled", "metrics": {"tflops": {"value": 0.2}}}]}' >"\$out"
        exit 1 ;;
  *) exit 1 ;;
esac
SH
printf '#!/usr/bin/env bash\necho "[  SKIPPED ] 2 tests"\n' >build/gpu/a_cuda_test
printf '#!/usr/bin/env bash\nsleep 300\n' >build/gpu/b_cuda_test
printf '#!/usr/bin/env bash\necho "adam bf16 1 params in 1 tensors: 1 ms/step, 5.0 GB/s (28 B/param), copy 10.0 GB/s read+write: fraction 0.500"\n' >build/bench/adam_bench
chmod +x bin/nvidia-smi build/tools/factorybench build/gpu/* build/bench/adam_bench
# An earlier run's folder, with a figure this run will not produce.
echo old >logs/table.md
printf '{"results": [{"status": "ok", "metrics": {"tflops": {"value": 999.9}}}]}' >logs/attention.json

# The hung test takes what is left of a 90 s budget (less 15 s for the table); the two smoke steps after it
# no longer fit. Generous, so that a loaded CI machine still reaches the tests before the budget is spent.
run_capture fake env PATH="$T/bin:$PATH" OUT="$T/out" FB_DEVICE_LOG_DIR="$T/logs" FB_DEVICE_BUDGET_S=90 \
  TORCH_PYTHON=/bin/false GPU_TEST_TIMEOUT=100 bash "$SCRIPT" "$T/build"
[ "$RC" -eq 1 ] && ok "a hung GPU test fails the run: exit 1" || fail "exit $RC: $(stderr_summary "$T/fake.err")"
TABLE="$T/out/table.md"
[ -s "$TABLE" ] || die "no table in \$OUT: $(ls "$T/out")"
grep -q "999.9" "$TABLE" && fail "an earlier run's figure is in the table" || ok "the earlier run's figures are gone"
grep -q "^| GEMM bf16 .* | FAILED (wrong result: 3 of 64 sampled) |" "$TABLE" && ! grep -q "| 0.2 |" "$TABLE" \
  && ok "a GEMM whose check failed reads FAILED, not its figure" || fail "gemm row: $(grep GEMM "$TABLE")"
grep -q "| 1 failed (b_cuda_test), 1 with skipped tests (a_cuda_test) |" "$TABLE" \
  && ok "the hung test is cut off and counted" || fail "tests row: $(grep 'GPU tests' "$TABLE")"
grep -q "^| not run (budget of 90 s spent) | collective health |" "$TABLE" \
  && ok "steps past the budget are listed as not run" || fail "budget row: $(tail -3 "$TABLE")"
grep -q "fraction 0.500" "$T/logs/adam-bench.log" && grep -q "| FAILED check (0.500) (5.0 GB/s) |" "$TABLE" \
  && ok "an adam figure without its check reads FAILED check" || fail "adam row: $(grep Adam "$TABLE")"
grep -q "^| build (commit), device | 0123456789ab | NVIDIA H200, 580.00 |" "$TABLE" \
  && ok "the table names the commit and the device" || fail "build row: $(grep build "$TABLE")"
tar -tzf "$T/out/device-check-logs.tar.gz" | grep -q "b_cuda_test.log" && ok "the logs come back as one tarball" \
  || fail "no tarball of the logs"
pgrep -f "$T/build/gpu/b_cuda_test" >/dev/null && fail "the hung test is still running" || ok "nothing left running"
finish
