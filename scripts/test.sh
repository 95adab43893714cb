#!/usr/bin/env bash
# One command from a fresh clone to every test: installs dependencies, then
#   1. release build (cuda backend when nvcc is present) and every ctest test: unit, gpu, mpi, e2e;
#      skipped tests (exit 77 in a script, GTEST_SKIP in a gtest) are counted and named, not hidden as passed;
#   2. scripts/test-sanitizers.sh: the `sanitize` preset (clang, ASan + UBSan), unit and MPI tests
#      (FB_SANITIZE=0 skips);
#   3. scripts/fuzz.sh: every libFuzzer target for FB_FUZZ_SECONDS each, after its regressions, in the same
#      build as step 2 (FB_FUZZ=0 skips).
# Every step runs even when an earlier one failed; the exit status is non-zero when any step failed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

BUILD_DIR=${BUILD_DIR:-build/release}
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
failed=()
# Each step's wall time, printed at the end: CI allows 90 minutes, the aim is under 20.
timings=()
step_start=0
timed() { timings+=("$1 $((SECONDS - step_start))s"); step_start=$SECONDS; }
timed install-deps

echo "== configure ($BUILD_DIR)"
# A failed configure or build fails this step and skips the tests that need it; the sanitizer and fuzz steps
# (their own build) still run.
built=1
mkdir -p "$BUILD_DIR"
if cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFACTORYBENCH_CUDA="${FACTORYBENCH_CUDA:-AUTO}" \
  -DCMAKE_UNITY_BUILD="${FB_UNITY_BUILD:-ON}" >"$BUILD_DIR/configure.log" 2>&1; then
  grep -E "cuda backend|Configuring done|Warning" "$BUILD_DIR/configure.log" || true
else
  cat "$BUILD_DIR/configure.log"
  failed+=(configure)
  built=0
fi
if [ "$built" = 1 ]; then
  echo "== build (-j$JOBS)"
  if cmake --build "$BUILD_DIR" -j "$JOBS"; then
    "$BUILD_DIR/tools/factorybench" --version
  else
    failed+=(build)
    built=0
  fi
fi
timed build

if [ "$built" = 1 ]; then
  echo "== test"
  # GPU-labelled tests skip themselves where no GPU is visible. Four at a time on two cores: the MPI and e2e
  # scripts spend half their time waiting (for a rank to be killed, a save to land, a hang to be detected); the
  # tests that judge relative speed run alone (RUN_SERIAL, tests/CMakeLists.txt). CTEST_JOBS overrides.
  log="$BUILD_DIR/ctest.log"
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "${CTEST_JOBS:-4}" --timeout 900) 2>&1 | tee "$log" || failed+=(ctest)
  # ctest lists skipped tests under "The following tests did not run:" as "NN - NAME (Skipped)".
  skipped=$(grep -E '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" | sed -E 's/^[[:space:]]*[0-9]+ - (.*) \(Skipped\)$/\1/' || true)
  count=$(printf '%s' "$skipped" | grep -c . || true)
  echo "== skipped: $count test(s)${skipped:+: $(echo $skipped)}"
  # ctest shows no output for a skipped test: the reason of each one that is not a GPU test (those all say
  # "no GPU"), from the log of the last run.
  while IFS= read -r name; do  # a parameterised test's name has spaces ("... # GetParam() = ...")
    case "$name" in gpu.* | "") continue ;; esac
    echo "-- why $name skipped (its last lines):"
    awk -v n="$name" '$0 ~ ("Testing: " n "$") {on = 1; next} on && $0 ~ ("^\"" n "\" end time") {exit} on' \
      "$BUILD_DIR/Testing/Temporary/LastTest.log" 2>/dev/null | grep -v '^-*$' | tail -n 15 || true
  done <<<"$skipped"
  timed ctest
fi

if [ "${FB_SANITIZE:-1}" != 0 ]; then
  echo "== sanitizers (sanitize preset: clang, ASan + UBSan)"
  bash scripts/test-sanitizers.sh || failed+=(sanitizers)
  timed sanitizers
fi
if [ "${FB_FUZZ:-1}" != 0 ]; then
  echo "== fuzz"
  FB_FUZZ_PRESET=${FB_FUZZ_PRESET:-sanitize} bash scripts/fuzz.sh || failed+=(fuzz)
  timed fuzz
fi

echo "== time: ${timings[*]} (total ${SECONDS}s)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "== all passed ($count skipped)"
