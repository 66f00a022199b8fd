#!/usr/bin/env bash
# Installs ruvllm's build, test and benchmark dependencies from Debian 12
# packages. Idempotent: when everything is present it only checks and exits.
# Arguments name further packages to install the same way
# (scripts/check-aarch64.sh: the cross toolchain).
set -euo pipefail

packages=(
  # toolchain
  g++ clang-14 libclang-rt-14-dev clang-format clang-tidy cmake ninja-build pkg-config python3 binutils git
  # library dependencies (the usage requirements of ruvllm::ruvllm)
  libhwy-dev libxsimd-dev libboost-dev
  # tests and benchmarks
  catch2 libbenchmark-dev
  # benchmark-only baselines
  libopenblas-dev libhnswlib-dev libfaiss-dev
  # opt-in session encryption (RUVLLM_WITH_SODIUM)
  libsodium-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  # One status line per installed architecture (arm64 ones too on a machine
  # set up by scripts/check-aarch64.sh).
  if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
