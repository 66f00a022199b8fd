#!/usr/bin/env bash
# Installs what is missing, builds everything in Release (benchmarks are
# built, not run), runs every test including the `slow` label, then repeats
# the tests under AddressSanitizer + UndefinedBehaviorSanitizer, and the tests
# of the layers that run threads (core, memory, kv, store, sona) under
# ThreadSanitizer, both with RUVLLM_ASSERT's precondition checks compiled.
#
#   scripts/test.sh                  release, asan-ubsan, tsan (what CI runs)
#   scripts/test.sh --no-sanitizers  release only
#   scripts/test.sh --asan-ubsan     release and asan-ubsan only
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizers=(asan-ubsan tsan)
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) sanitizers=() ;;
    --asan-ubsan) sanitizers=(asan-ubsan) ;;
    *) echo "usage: scripts/test.sh [--no-sanitizers | --asan-ubsan]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
t0=$(date +%s)

run_preset() {
  local preset=$1 started=$(date +%s)
  echo "== ${preset}: configure and build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  local built=$(date +%s)
  echo "== ${preset}: test"
  ctest --preset "$preset"
  echo "== ${preset}: build $((built - started)) s, tests $(($(date +%s) - built)) s"
}

run_preset release
for preset in "${sanitizers[@]}"; do run_preset "$preset"; done
echo "== total $(($(date +%s) - t0)) s"
