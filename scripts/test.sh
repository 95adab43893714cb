#!/usr/bin/env bash
# One command from a fresh clone to every test: installs dependencies, configures (cuda backend when nvcc
# is present), builds with all cores, runs ctest. Exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh

BUILD_DIR=${BUILD_DIR:-build/release}
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== configure ($BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFACTORYBENCH_CUDA="${FACTORYBENCH_CUDA:-AUTO}" \
  | grep -E "cuda backend|Configuring done|Error|Warning" || true
echo "== build (-j$JOBS)"
cmake --build "$BUILD_DIR" -j "$JOBS"
"$BUILD_DIR/tools/factorybench" --version

echo "== test"
cd "$BUILD_DIR"
# GPU-labelled tests skip themselves where no GPU is visible.
ctest --output-on-failure -j "${CTEST_JOBS:-2}" --timeout 900
