#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz; CMake preset `fuzz`: clang, ASan + UBSan) and runs each one:
# first its regression inputs (tests/fuzz/regressions/TARGET, every input that once crashed it), then
# FB_FUZZ_SECONDS (default 15) of fuzzing from a corpus seeded from tests/data, configs and tests/fuzz/seeds.
# Fails on any crash, leak, timeout or sanitizer report; the input that caused it is left in
# build/PRESET/findings/TARGET/ (copy it into tests/fuzz/regressions/TARGET/ once fixed).
#   scripts/fuzz.sh                 all targets
#   scripts/fuzz.sh units suite     some targets (names without _fuzz)
#   FB_FUZZ_SECONDS=0 scripts/fuzz.sh   regressions and seeds only
#   FB_FUZZ_JOBS=1 scripts/fuzz.sh      one target at a time (default: as many at once as cores)
#   FB_FUZZ_PRESET=sanitize scripts/fuzz.sh   in the sanitizer test build (scripts/test.sh does this)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FB_FUZZ_SECONDS:-15}
PRESET=${FB_FUZZ_PRESET:-fuzz}
BUILD=build/$PRESET
JOBS=${JOBS:-$(nproc)}


# Seeds per target: files and folders (every file in a folder).
seeds() {
  case $1 in
    report_json) echo tests/data/report_sample.json tests/data/nccl_tests_allreduce_h100.json configs/references ;;
    compare_rules) echo configs/rules ;;
    suite) echo configs/suites ;;
    model_config) echo configs/models ;;
    failure_model) echo configs/failure-models ;;
    hardware_table) echo configs/hardware ;;
    nccl_tests_import) echo tests/data/nccl_tests_allreduce_h100.txt tests/data/real tests/data/factorybench_console ;;
    mlperf_import) echo tests/data/mlperf_llama2_70b_lora_base_1.log tests/data/mlperf_llama2_70b_lora_cand_1.log ;;
  esac
  echo "tests/fuzz/seeds/$1"
}

if [ $# -gt 0 ]; then targets=("$@"); else
  targets=()
  for f in tests/fuzz/*_fuzz.cpp; do n=$(basename "$f" .cpp); targets+=("${n%_fuzz}"); done
fi

echo "== fuzz: configure and build ($BUILD, preset $PRESET, clang, -fsanitize=fuzzer,address,undefined)"
cmake --preset "$PRESET" >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]/%/_fuzz}"

# ASan's leak check stays on; UBSan reports are fatal (-fno-sanitize-recover) and print a stack.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Targets read configs/ for presets (suite steps name models and suites).
export FACTORYBENCH_CONFIG_DIR="$PWD/configs"
# One target: its regressions, then SECONDS_EACH of fuzzing. Prints its status line; non-zero when it failed.
fuzz_one() {
  local t=$1 bin="$BUILD/tests/fuzz/${1}_fuzz"
  local corpus="$BUILD/corpus/$t" findings="$BUILD/findings/$t" log="$BUILD/findings/$t.log" s r
  mkdir -p "$corpus" "$findings"
  for s in $(seeds "$t"); do
    if [ -d "$s" ]; then find "$s" -maxdepth 1 -type f -exec cp -n {} "$corpus/" \; ; elif [ -f "$s" ]; then cp -n "$s" "$corpus/"; fi
  done
  local regressions=()
  for r in tests/fuzz/regressions/"$t"/*; do [ -f "$r" ] && regressions+=("$r"); done
  if [ ${#regressions[@]} -gt 0 ]; then
    # Files (not a folder) as arguments: libFuzzer runs each once instead of fuzzing.
    if ! "$bin" -rss_limit_mb=4096 -timeout=30 "${regressions[@]}" >"$log" 2>&1; then
      echo "FAIL fuzz $t: a regression input fails again ($log):"; tail -30 "$log"; return 1
    fi
  fi
  # libFuzzer reads -max_total_time=0 as "no limit": 0 seconds runs the corpus (the seeds) once instead.
  local budget=(-max_total_time="$SECONDS_EACH")
  [ "$SECONDS_EACH" -eq 0 ] && budget=(-runs=0)
  if "$bin" "${budget[@]}" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$corpus" >>"$log" 2>&1; then
    echo "ok fuzz $t: ${#regressions[@]} regression input(s), $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') runs in ${SECONDS_EACH}s, corpus $(ls "$corpus" | wc -l)"
  else
    echo "FAIL fuzz $t ($log; input in $findings/):"; grep -E "ERROR|SUMMARY|fuzz:|runtime error" "$log" | head -10
    return 1
  fi
}

for t in "${targets[@]}"; do
  [ -x "$BUILD/tests/fuzz/${t}_fuzz" ] || { echo "fuzz: no target '$t' ($BUILD/tests/fuzz/${t}_fuzz)" >&2; exit 2; }
done
# FB_FUZZ_JOBS targets at a time (default: one per core); each keeps its full SECONDS_EACH, and its status
# goes to its own file so that the lines print whole, in the targets' order.
FUZZ_JOBS=${FB_FUZZ_JOBS:-$JOBS}
status_dir="$BUILD/findings/status"
rm -rf "$status_dir" && mkdir -p "$status_dir"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n || true; running=$((running - 1)); fi
  ( if fuzz_one "$t" >"$status_dir/$t.out" 2>&1; then : >"$status_dir/$t.ok"; fi ) &
  running=$((running + 1))
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$status_dir/$t.out"
  [ -f "$status_dir/$t.ok" ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2; exit 1; fi
echo "fuzz: ${#targets[@]} target(s) clean"
