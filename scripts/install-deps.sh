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

# ---- files taken from NVIDIA wheels on PyPI ----
# Both are optional: without PyPI, or without a prefix this user can write, the warning says what is left out
# and install-deps still succeeds. Only the named files are taken; the wheels' Python parts are not installed,
# so the local Python version does not matter.
# pip_ready LEFT_OUT: python3 -m pip works, installed from Debian when missing; else a warning saying what is
# left out, and false (never an exit: what needs pip is optional).
pip_ready() {
  python3 -m pip --version >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    echo "install-deps: warning: no pip, and no root or sudo to install python3-pip; $1" >&2
    return 1
  fi
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if ! { $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null; }; then
    echo "install-deps: warning: could not install python3-pip; $1" >&2
    return 1
  fi
}

# take_from_wheel NAME VERSION PREFIX MEMBERS STRIP REQUIRED LEFT_OUT: downloads NAME==VERSION and writes its
# members matching the regular expression MEMBERS into PREFIX, less the leading STRIP of their names, and
# PREFIX/VERSION. REQUIRED is a file the wheel must hold; LEFT_OUT says what goes missing when this fails.
take_from_wheel() {
  local name=$1 version=$2 prefix=$3 members=$4 strip=$5 required=$6 left_out=$7 wheels
  wheels=$(mktemp -d)
  # Any platform wheel carries the same files; pin x86-64 CPython 3.12 and the manylinux tags NVIDIA uses so
  # one always matches.
  if ! python3 -m pip download -q --timeout 30 --retries 2 --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d "$wheels" "$name==$version"; then
    echo "install-deps: warning: could not download $name $version from PyPI; $left_out" >&2
    rm -rf "$wheels"
    return 1
  fi
  # A prefix the user can write needs no root; one that needs root, without root or sudo, is said and left
  # out like a failed download.
  if ! { mkdir -p "$prefix" 2>/dev/null && [ -w "$prefix" ]; }; then
    if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
      echo "install-deps: warning: cannot write $prefix (not root, no sudo): set its variable to a directory" \
        "of yours; $left_out" >&2
      rm -rf "$wheels"
      return 1
    fi
    need_root "$name in $prefix"
  fi
  # Called as `take_from_wheel ... || ...`, where set -e does not act inside it: each step is checked.
  if ! $SUDO mkdir -p "$prefix"; then
    echo "install-deps: warning: cannot create $prefix; $left_out" >&2
    rm -rf "$wheels"
    return 1
  fi
  if ! $SUDO python3 - "$wheels" "$prefix" "$version" "$members" "$strip" "$required" <<'PY'
import glob, os, re, stat, sys, zipfile
wheels, prefix, version, members, strip, required = sys.argv[1:]
with zipfile.ZipFile(glob.glob(os.path.join(wheels, "*.whl"))[0]) as whl:
    names = [n for n in whl.namelist() if re.fullmatch(members, n)]
    if strip + required not in names:
        sys.exit(f"install-deps: the wheel in {wheels} has no {strip + required}")
    for n in names:
        target = os.path.join(prefix, n[len(strip):])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with whl.open(n) as src, open(target, "wb") as dst:
            dst.write(src.read())
        if "/bin/" in "/" + n[len(strip):]:  # zipfile keeps no modes; the tools must run
            os.chmod(target, 0o755)
open(os.path.join(prefix, "VERSION"), "w").write(version + "\n")
print(f"install-deps: {len(names)} files of {os.path.basename(glob.glob(os.path.join(wheels, '*.whl'))[0])} in {prefix}")
PY
  then
    echo "install-deps: warning: could not take $name's files into $prefix; $left_out" >&2
    rm -rf "$wheels"
    return 1
  fi
  rm -rf "$wheels"
}

# True when PREFIX/REQUIRED exists and PREFIX/VERSION names VERSION.
already_taken() {
  [ -f "$1/$3" ] && grep -qx "$2" "$1/VERSION" 2>/dev/null
}

# ---- cuDNN frontend headers (issue 15) ----
# The cuDNN frontend C++ API is header-only; NVIDIA ships the headers in the nvidia-cudnn-frontend wheel
# (include/cudnn_frontend*.h, no dependencies). cmake/FactorybenchCudnn.cmake looks in this prefix. cuDNN 9
# itself (libcudnn, cudnn.h) comes with the CUDA installation or NVIDIA's cudnn packages. Optional: without
# the headers the cuda build leaves out the cuDNN attention engine (FACTORYBENCH_CUDNN=AUTO), and the host
# build needs none of it.
CUDNN_FRONTEND_VERSION=${CUDNN_FRONTEND_VERSION:-1.32.0}
CUDNN_FRONTEND_PREFIX=${CUDNN_FRONTEND_PREFIX:-/opt/cudnn-frontend}
if already_taken "$CUDNN_FRONTEND_PREFIX" "$CUDNN_FRONTEND_VERSION" include/cudnn_frontend.h; then
  echo "install-deps: cudnn-frontend $CUDNN_FRONTEND_VERSION headers already in $CUDNN_FRONTEND_PREFIX"
else
  left_out="a cuda build leaves out the cuDNN attention engine (FACTORYBENCH_CUDNN=AUTO)"
  if pip_ready "$left_out"; then
    take_from_wheel nvidia-cudnn-frontend "$CUDNN_FRONTEND_VERSION" "$CUDNN_FRONTEND_PREFIX" 'include/.*\.h' '' \
      include/cudnn_frontend.h "$left_out" || true
  fi
fi

# ---- cuobjdump and nvdisasm, to read the built kernels' machine code ----
# tests/build/kernel_machine_code.sh checks in the SASS that every kernel reaches memory through global or
# shared instructions and keeps its arrays in registers. The CUDA toolkit here ships neither tool; NVIDIA's
# wheels do (cuobjdump -sass runs nvdisasm). Only where nvcc is, since a host-only build has no kernels.
CUDA_BINUTILS_VERSION=${CUDA_BINUTILS_VERSION:-13.2.51}
CUDA_BINUTILS_PREFIX=${CUDA_BINUTILS_PREFIX:-/opt/cuda-binutils}
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  :
elif [ -x /usr/local/cuda/bin/cuobjdump ] && [ -x /usr/local/cuda/bin/nvdisasm ]; then
  echo "install-deps: cuobjdump and nvdisasm already in /usr/local/cuda/bin"
elif already_taken "$CUDA_BINUTILS_PREFIX" "$CUDA_BINUTILS_VERSION" bin/cuobjdump &&
     [ -f "$CUDA_BINUTILS_PREFIX/bin/nvdisasm" ]; then
  echo "install-deps: cuobjdump and nvdisasm $CUDA_BINUTILS_VERSION already in $CUDA_BINUTILS_PREFIX/bin"
else
  left_out="the kernel machine-code test skips"
  if pip_ready "$left_out"; then
    for tool in cuobjdump nvdisasm; do
      # VERSION is written after each wheel; the cuobjdump check above also asks for nvdisasm.
      take_from_wheel "nvidia-cuda-$tool" "$CUDA_BINUTILS_VERSION" "$CUDA_BINUTILS_PREFIX" "nvidia/cu13/bin/$tool" \
        nvidia/cu13/ "bin/$tool" "$left_out" || break
    done
  fi
fi
