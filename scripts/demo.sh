#!/usr/bin/env bash
# The main job: installs what is missing, builds the examples in Release and
# runs the quickstart (which prints the SIMD target chosen at run time and a
# kernel result).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target quickstart
./build/release/examples/quickstart
