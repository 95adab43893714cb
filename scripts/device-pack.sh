#!/usr/bin/env bash
# Packs a CUDA build for the lent GPU machine (issue 15): ../shared/device/pack.sh (binary, GPU tests, libraries,
# relocatable Open MPI), plus bench/adam_bench, with every binary moved into one xz tarball that env.sh unpacks
# on first use. The plain pack is over the device tool's 64 MiB carry limit (the binaries travel uncompressed);
# this one is about a quarter of it, and refuses to finish above 56 MiB.
# Usage, from the project root: scripts/device-pack.sh [BUILD_DIR=build/release] [DEST=.device]
# Then: run with carry [".device"] the command  bash scripts/device-check.sh .device/build
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
D=${2:-.device}
PACK=${FB_SHARED_PACK:-../shared/device/pack.sh}
[ -x "$PACK" ] || { echo "device-pack: no $PACK" >&2; exit 2; }
"$BUILD/tools/factorybench" --version | grep -q "; cuda [0-9]" ||  # a build without cuda says "cuda: off"
  { echo "device-pack: $BUILD is not a CUDA build ($("$BUILD/tools/factorybench" --version))" >&2; exit 2; }
[ -x "$BUILD/bench/adam_bench" ] || { echo "device-pack: no $BUILD/bench/adam_bench (build the bench targets)" >&2; exit 2; }
bash "$PACK" "$BUILD" "$D" >/dev/null
mkdir -p "$D/build/bench"
cp "$BUILD/bench/adam_bench" "$D/build/bench/"
strip --strip-unneeded "$D/build/bench/adam_bench" 2>/dev/null || true
# The binaries travel compressed; env.sh (sourced by every wrapper and by device-check.sh before it looks for
# them) unpacks them next to the libraries.
tar -cJf "$D/bin.tar.xz" -C "$D" build/tools/factorybench.bin build/gpu build/bench
rm -rf "$D/build/tools/factorybench.bin" "$D/build/gpu" "$D/build/bench"
sed -i 's|^\[ -d "\$R/lib" \] \|\| tar -xJf "\$R/libs.tar.xz" -C "\$R"$|&\n[ -e "$R/build/tools/factorybench.bin" ] \|\| tar -xJf "$R/bin.tar.xz" -C "$R"|' "$D/env.sh"
grep -q 'bin.tar.xz' "$D/env.sh" || { echo "device-pack: could not teach $D/env.sh to unpack bin.tar.xz" >&2; exit 3; }
bytes=$(du -sb "$D" | cut -f1)
limit=$((56 * 1024 * 1024))
if [ "$bytes" -gt "$limit" ]; then
  echo "device-pack: $D is $((bytes / 1048576)) MiB, over 56 MiB (the carry limit is 64 MiB with the tree)" >&2
  exit 3
fi
echo "device-pack: $((bytes / 1048576)) MiB in $D (commit $(git rev-parse --short=12 HEAD)$(git diff --quiet HEAD || echo ', uncommitted changes'))"
