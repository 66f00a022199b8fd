#!/usr/bin/env bash
# The main job: installs what is missing, builds the examples in Release, runs
# the quickstart (which prints the SIMD target chosen at run time and a kernel
# result) and generates text with ruvllm-run from a GGUF model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target quickstart ruvllm-run
./build/release/examples/quickstart
# Text generation from a GGUF model (a tiny random-weight llama kept for the
# conformance tests: its words are noise, the pipeline is real).
./build/release/examples/ruvllm-run --model tests/data/conformance/tiny-f32.gguf \
  --prompt "The quick brown fox jumps over the lazy dog." -n 32 --temp 0.7 --seed 1
