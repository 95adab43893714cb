#!/usr/bin/env bash
# Installs the Debian packages factorybench needs to build and test, when they are missing.
# Idempotent; runs as root or through sudo; says what it installed.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ pkg-config git
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev libxxhash-dev
  libgtest-dev libbenchmark-dev
  python3 python3-jsonschema python3-prometheus-client libxml2-utils chromium
  clang libclang-rt-14-dev  # libFuzzer and the clang sanitizer runtimes (scripts/fuzz.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Root, or sudo, only when something is missing: a user on a machine where everything is installed needs
# neither.
SUDO=""
need_root() {
  [ "$(id -u)" -eq 0 ] && return 0
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install $1" >&2; exit 1; }
  SUDO=sudo
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
else
  need_root "${missing[*]}"
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: installed ${#missing[@]} package(s): ${missing[*]}"
fi

# ---- cuDNN frontend headers (issue 15) ----
# The cuDNN frontend C++ API is header-only; NVIDIA ships the headers in the nvidia-cudnn-frontend wheel
# (include/cudnn_frontend*.h, no dependencies). Only the headers are taken: the wheel's Python part is not
# installed, so the local Python version does not matter. cmake/FactorybenchCudnn.cmake looks in this prefix.
# cuDNN 9 itself (libcudnn, cudnn.h) comes with the CUDA installation or NVIDIA's cudnn packages.
CUDNN_FRONTEND_VERSION=${CUDNN_FRONTEND_VERSION:-1.32.0}
CUDNN_FRONTEND_PREFIX=${CUDNN_FRONTEND_PREFIX:-/opt/cudnn-frontend}
if [ -f "$CUDNN_FRONTEND_PREFIX/include/cudnn_frontend.h" ] &&
   grep -qx "$CUDNN_FRONTEND_VERSION" "$CUDNN_FRONTEND_PREFIX/VERSION" 2>/dev/null; then
  echo "install-deps: cudnn-frontend $CUDNN_FRONTEND_VERSION headers already in $CUDNN_FRONTEND_PREFIX"
else
  python3 -m pip --version >/dev/null 2>&1 || {
    need_root python3-pip
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  }
  wheels=$(mktemp -d)
  # Any platform wheel carries the same headers; pin manylinux x86-64 CPython 3.12 so one always matches.
  # Optional: without PyPI the cuda build leaves out the cuDNN attention engine (FACTORYBENCH_CUDNN=AUTO) and
  # the host build needs none of it, so a failed download is said, not fatal.
  if ! python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$wheels" \
    "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION"; then
    echo "install-deps: warning: could not download nvidia-cudnn-frontend $CUDNN_FRONTEND_VERSION from PyPI;" \
      "a cuda build leaves out the cuDNN attention engine (FACTORYBENCH_CUDNN=AUTO)" >&2
    rm -rf "$wheels"
    exit 0
  fi
  # A prefix the user can write (CUDNN_FRONTEND_PREFIX=$HOME/...) needs no root; one that needs root, without
  # root or sudo, is said and left out like a failed download.
  if ! { mkdir -p "$CUDNN_FRONTEND_PREFIX" 2>/dev/null && [ -w "$CUDNN_FRONTEND_PREFIX" ]; }; then
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
      echo "install-deps: warning: cannot write $CUDNN_FRONTEND_PREFIX (not root, no sudo): set" \
        "CUDNN_FRONTEND_PREFIX to a directory of yours; a cuda build leaves out the cuDNN attention engine" >&2
      rm -rf "$wheels"
      exit 0
    fi
    need_root "the cudnn-frontend headers in $CUDNN_FRONTEND_PREFIX"
  fi
  $SUDO mkdir -p "$CUDNN_FRONTEND_PREFIX"
  $SUDO python3 - "$wheels" "$CUDNN_FRONTEND_PREFIX" "$CUDNN_FRONTEND_VERSION" <<'PY'
import glob, os, sys, zipfile
wheels, prefix, version = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(wheels, "*.whl"))[0]) as whl:
    headers = [n for n in whl.namelist() if n.startswith("include/") and n.endswith(".h")]
    if not any(n.endswith("/cudnn_frontend.h") for n in headers):
        sys.exit("install-deps: the nvidia-cudnn-frontend wheel has no include/cudnn_frontend.h")
    for n in headers:
        whl.extract(n, prefix)
open(os.path.join(prefix, "VERSION"), "w").write(version + "\n")
print(f"install-deps: cudnn-frontend {version}: {len(headers)} headers in {prefix}/include")
PY
  rm -rf "$wheels"
fi
# ---- end of cuDNN frontend headers ----
