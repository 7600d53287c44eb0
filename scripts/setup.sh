#!/usr/bin/env bash
# Installs the Debian packages llmc needs (when missing), then configures and
# builds everything into build/. Sourced by demo.sh and test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

PACKAGES=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev libomp-22-dev cmake ninja-build ccache libgtest-dev pybind11-dev python3-dev python3-numpy
  python3-torch python3-pytest python3-sentencepiece
  libvulkan-dev mesa-vulkan-drivers spirv-tools vulkan-tools
  libopenmpi-dev openmpi-bin)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

JOBS="${LLMC_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/llmc-ccache}"
if [ ! -f "$ROOT/build/build.ninja" ]; then
  cmake -S "$ROOT" -B "$ROOT/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
fi
ninja -C "$ROOT/build" -j "$JOBS"
