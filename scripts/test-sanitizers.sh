#!/usr/bin/env bash
# The `sanitize` preset (clang, ASan + UBSan, CMakePresets.json) for CI: builds factorybench and the unit
# tests only (not the benchmarks, not the GPU tests) and runs the unit and MPI tests under the sanitizers.
# UBSan reports are fatal; ASan's memory errors are fatal (leak checking: see below). The same build holds the
# fuzz targets (its libraries carry libFuzzer's coverage hooks), so scripts/test.sh then runs scripts/fuzz.sh
# in it without compiling everything a third time. FB_SANITIZE_PRESET=debug uses gcc's sanitizers instead.
# Called by scripts/test.sh; runs alone as well.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${FB_SANITIZE_PRESET:-sanitize}
BUILD=build/$PRESET
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The release run already kills the checkpoint loop at 52 points; here 12 (every save phase, sync and
# async) find what the sanitizers would, in a quarter of the time.
export FB_KILL_POINTS=${FB_KILL_POINTS:-12}
# Likewise the tests that repeat a fault on three seeds (the seed changes only the data) run one here: the
# release run has the three; locate_faults alone took 134 s of this step, run serially.
export FB_SEEDS=${FB_SEEDS:-1}

cmake --preset "$PRESET" -DFACTORYBENCH_BENCH=OFF >"$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log"; exit 1; }
units=()
for f in tests/unit/*_test.cpp; do units+=("$(basename "$f" .cpp)"); done
cmake --build "$BUILD" -j "$JOBS" --target factorybench fb_fake_nvml "${units[@]}"

# Leak checking is off here: Open MPI dlcloses its MCA components at MPI_Finalize, so what they keep for the
# process's life is reported from "<unknown module>" frames that no suppression can name (3,300+ allocations
# per rank, the same in every MPI test). Leaks in our parsers are checked by the fuzz targets (scripts/fuzz.sh,
# LeakSanitizer on, no MPI); set ASAN_OPTIONS yourself to check them here (tests/sanitizers/lsan.supp).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$BUILD"
# Four at a time, as in scripts/test.sh: the MPI scripts mostly wait.
ctest --output-on-failure -j "${CTEST_JOBS:-4}" --timeout 1800 -L '^(unit|mpi)$'
