#!/usr/bin/env bash
# scripts/install-deps.sh, run by quickstart.sh and test.sh, as a user who is not root: with every package
# already installed it needs neither root nor sudo (it used to refuse at once, so neither command worked for
# such a user), and a missing package without sudo is one line naming it. `id` and `dpkg-query` are
# stand-ins on PATH.
. "$(dirname "$0")/../lib.sh"
set -e
BIN="$T/bin"
mkdir -p "$BIN" "$T/cudnn/include"
cat >"$BIN/id" <<'SH'
#!/bin/sh
[ "$1" = "-u" ] && { echo 1000; exit 0; }
exec /usr/bin/id "$@"
SH
# Without sudo, as on a machine where the user cannot become root. Where a real sudo is on PATH, a stand-in
# shadows it and records any call instead.
if command -v sudo >/dev/null; then
  cat >"$BIN/sudo" <<SH
#!/bin/sh
echo "\$*" >>"$T/sudo.calls"
exit 1
SH
fi
# Every package installed, except FB_MISSING_PACKAGE when it is set.
cat >"$BIN/dpkg-query" <<'SH'
#!/bin/sh
for a; do p=$a; done
[ "$p" = "${FB_MISSING_PACKAGE:-}" ] && exit 1
printf 'install ok installed'
SH
chmod +x "$BIN"/*
# The cuDNN frontend headers already in a prefix of the user's (no download, no root).
touch "$T/cudnn/include/cudnn_frontend.h"
echo 1.32.0 >"$T/cudnn/VERSION"
export CUDNN_FRONTEND_PREFIX="$T/cudnn" CUDNN_FRONTEND_VERSION=1.32.0
# Likewise cuobjdump and nvdisasm, which a machine with nvcc takes from NVIDIA's wheels.
mkdir -p "$T/binutils/bin"
touch "$T/binutils/bin/cuobjdump" "$T/binutils/bin/nvdisasm"
echo 13.2.51 >"$T/binutils/VERSION"
export CUDA_BINUTILS_PREFIX="$T/binutils" CUDA_BINUTILS_VERSION=13.2.51

run_capture ready env PATH="$BIN:$PATH" bash "$FB_SOURCE_DIR/scripts/install-deps.sh"
[ "$RC" -eq 0 ] && grep -q "^install-deps: all [0-9]* packages already installed$" "$T/ready.out" \
  && ok "not root, everything installed: exit 0" || fail "not root, everything installed: exit $RC: $(cat "$T/ready.out" "$T/ready.err")"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  grep -qE "^install-deps: cuobjdump and nvdisasm (13.2.51 already in $T/binutils/bin|already in /usr/local/cuda/bin)$" "$T/ready.out" \
    && ok "not root: cuobjdump and nvdisasm already there, not downloaded" || fail "cuobjdump: $(cat "$T/ready.out")"
fi
[ ! -e "$T/sudo.calls" ] && ok "not root, everything installed: sudo not called" || fail "sudo called: $(cat "$T/sudo.calls")"

# A missing package without sudo: one line naming it (left out where a real sudo would be used).
if [ -e "$BIN/sudo" ]; then
  echo "the missing-package case needs a machine without sudo; this one has $(command -v sudo)"
else
  run_capture missing env PATH="$BIN:$PATH" FB_MISSING_PACKAGE=libopenblas-dev bash "$FB_SOURCE_DIR/scripts/install-deps.sh"
  [ "$RC" -eq 1 ] && [ "$(cat "$T/missing.err")" = "install-deps: need root or sudo to install libopenblas-dev" ] \
    && ok "not root, no sudo, a package missing: exit 1 naming it" || fail "missing: exit $RC: $(cat "$T/missing.out" "$T/missing.err")"
fi
finish
