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
  python3 python3-jsonschema libxml2-utils chromium
  clang libclang-rt-14-dev  # libFuzzer and the clang sanitizer runtimes (scripts/fuzz.sh)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: installed ${#missing[@]} package(s): ${missing[*]}"
