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
#   scripts/test.sh --fuzz           the libFuzzer targets only (clang), each
#                                    run RUVLLM_FUZZ_SECONDS (20) over its seeds
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(release asan-ubsan tsan)
for arg in "$@"; do
  case "$arg" in
    --no-sanitizers) presets=(release) ;;
    --asan-ubsan) presets=(release asan-ubsan) ;;
    --fuzz) presets=(fuzz) ;;
    *) echo "usage: scripts/test.sh [--no-sanitizers | --asan-ubsan | --fuzz]" >&2; exit 2 ;;
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

for preset in "${presets[@]}"; do run_preset "$preset"; done
echo "== total $(($(date +%s) - t0)) s"
