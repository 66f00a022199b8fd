#!/usr/bin/env bash
# Builds ruvllm for 64-bit ARM Linux (Highway's NEON target) with Debian's
# cross compiler and runs its tests under qemu-user, on a Debian 12 x86-64
# machine. Not part of scripts/test.sh: it adds arm64 to dpkg's
# architectures, and emulated tests run tens of times slower than native
# ones (the whole suite takes hours on two cores; pass a ctest regex).
# Debian 12's qemu-user (7.2) hangs on threads that wait for each other (the
# thread pool's tests, and a minimal two-thread atomic handshake alike), so
# choose single-threaded tests.
# Usage: bash scripts/check-aarch64.sh [ctest -R regex]
#   e.g. bash scripts/check-aarch64.sh 'kernels_tests:quant|model_tests:conformance'
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" dpkg --add-architecture arm64
fi
# The build machine's packages, and the cross toolchain (setup.sh runs
# apt-get update before installing anything missing).
bash scripts/setup.sh g++-aarch64-linux-gnu qemu-user libhwy-dev:arm64

cmake -S . -B build/aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DRUVLLM_BUILD_BENCH=OFF -DRUVLLM_WERROR=ON
cmake --build build/aarch64 -j"$(nproc)"
ctest --test-dir build/aarch64 -j"$(nproc)" --output-on-failure ${1:+-R "$1"}
