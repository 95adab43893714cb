#!/usr/bin/env bash
# From a fresh machine to a printed report: installs dependencies, builds, then runs the default suite on
# this machine under mpirun -np 4 (host backend when no GPU is visible) and prints the human summary.
# The JSON report lands in ${REPORT:-quickstart-report.json}.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build/release}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target factorybench
FB="$BUILD_DIR/tools/factorybench"
RANKS=${RANKS:-4}
REPORT=${REPORT:-quickstart-report.json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

"$FB" --version
echo "== suite quickstart under mpirun -np $RANKS"
mpirun --oversubscribe -np "$RANKS" "$FB" suite quickstart --output "$REPORT"

# The supervisor launches its own mpirun jobs, so it runs as one process beside the suite.
RES_REPORT=${REPORT%.json}-resilience.json
echo "== resilience: tiny-dense on $RANKS ranks with a crash and a hang injected"
"$FB" resilience --ranks "$RANKS" --launcher mpirun --launcher-args "--oversubscribe" --model tiny-dense \
  --steps 30 --checkpoint-every 10 --hang-timeout 4s --max-restarts 4 --run-dir "$(mktemp -d)/run" \
  --faults "crash@step=12,rank=1;hang@step=24,rank=2" --output "$RES_REPORT"

echo "== summary"
"$FB" report "$REPORT" "$RES_REPORT" --format md
echo "quickstart: reports written to $REPORT and $RES_REPORT"
