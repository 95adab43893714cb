#!/usr/bin/env bash
# From a fresh machine to a printed report: installs dependencies, builds, then runs the default suite on
# this machine under mpirun -np 4 (host backend when no GPU is visible: GEMM, every collective, dense and MoE
# training steps, and a training run under a crash and a hang with real checkpoints) and prints the summary.
# The JSON report lands in $REPORT (a relative path is taken from where the script was called), by default
# quickstart-report.json in the source tree's root; the Markdown and HTML renderings beside it.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build/release}
# A unity build (CMake batches each library's sources): a fresh build in about half the time.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD="${FB_UNITY_BUILD:-ON}" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target factorybench
FB="$BUILD_DIR/tools/factorybench"
RANKS=${RANKS:-4}
REPORT=${REPORT:-$PWD/quickstart-report.json}
case "$REPORT" in /*) ;; *) REPORT="$caller/$REPORT" ;; esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

"$FB" --version
echo "== suite quickstart under mpirun -np $RANKS"
# A failed step still leaves a report (the suite exits 1): render it, then exit with the suite's status.
suite_rc=0
mpirun --oversubscribe -np "$RANKS" "$FB" suite quickstart --output "$REPORT" || suite_rc=$?
[ -s "$REPORT" ] || { echo "quickstart: the suite wrote no report (exit $suite_rc)" >&2; exit "$((suite_rc ? suite_rc : 1))"; }

# The suite ended with one line per step (headline figure and verdict); the full tables and charts go to files.
"$FB" report "$REPORT" --format md -o "${REPORT%.json}.md"
"$FB" report "$REPORT" --format html -o "${REPORT%.json}.html"
echo "== summary"
"$FB" report "$REPORT" --format summary
echo "quickstart: report in $REPORT (tables: ${REPORT%.json}.md, charts: ${REPORT%.json}.html)"
[ "$suite_rc" -eq 0 ] || echo "quickstart: the suite failed (exit $suite_rc): see the failed steps above" >&2
exit "$suite_rc"
