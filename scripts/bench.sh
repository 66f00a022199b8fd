#!/usr/bin/env bash
# Builds the release preset and runs every benchmark executable
# (build/release/bench/*_bench) on the rows matching REGEX (default: all),
# printing each console table; writes one merged Google Benchmark JSON to
# build/bench/results.json: the first executable's context, an "executables"
# list with each one's own context, and every row tagged with its
# "executable".
#
# Usage: scripts/bench.sh [REGEX]
#   REGEX       Google Benchmark filter, a plain ECMAScript regex (1.7.1
#               has no (?i)), matched anywhere in the name, e.g. 'dot',
#               'stream', '/768/', 'stream/read' (plain 'read' also matches
#               every "threads:N").
#   BENCH_ARGS  extra flags for every executable, e.g.
#               BENCH_ARGS='--benchmark_repetitions=5 --benchmark_enable_random_interleaving=true'
#               (--benchmark_min_time takes a plain number of seconds in 1.7.1).
# The machine is shared: the load average is printed before and after, and
# recorded in the JSON context; compare ratios (speedup, bw_frac), not times.

set -euo pipefail

filter="${1:-.}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ -x scripts/setup.sh ]]; then
  scripts/setup.sh
fi

echo "== uptime: $(uptime)"

cmake --preset release
cmake --build --preset release

bench_dir=build/release/bench
out_dir=build/bench
raw_dir="$out_dir/raw"
mkdir -p "$raw_dir"
rm -f "$raw_dir"/*.json

read -r -a extra_args <<<"${BENCH_ARGS:-}"

shopt -s nullglob
executables=("$bench_dir"/*_bench)
shopt -u nullglob
if ((${#executables[@]} == 0)); then
  echo "bench.sh: no executables named *_bench in $bench_dir" >&2
  exit 1
fi

ran=()
for exe in "${executables[@]}"; do
  [[ -x "$exe" ]] || continue
  name="$(basename "$exe")"
  # Skip executables with no matching row rather than let them print
  # Google Benchmark's "Failed to match" error.
  if [[ -z "$("$exe" --benchmark_list_tests=true --benchmark_filter="$filter" 2>/dev/null)" ]]; then
    echo "== $name: no rows match '$filter'"
    continue
  fi
  echo "== $name"
  "$exe" --benchmark_filter="$filter" --benchmark_out="$raw_dir/$name.json" --benchmark_out_format=json \
    "${extra_args[@]}"
  ran+=("$raw_dir/$name.json")
done

if ((${#ran[@]} == 0)); then
  echo "bench.sh: no benchmark matches '$filter'" >&2
  exit 1
fi

python3 - "$out_dir/results.json" "${ran[@]}" <<'PY'
import json
import os
import sys

out_path, inputs = sys.argv[1], sys.argv[2:]
merged = None
for path in inputs:
    with open(path) as f:
        run = json.load(f)
    name = os.path.splitext(os.path.basename(path))[0]
    if merged is None:
        merged = {"context": dict(run["context"]), "executables": [], "benchmarks": []}
    merged["executables"].append({"name": name, "context": run["context"]})
    for row in run.get("benchmarks", []):
        row["executable"] = name
        merged["benchmarks"].append(row)
with open("/proc/loadavg") as f:
    merged["context"]["load_average_after"] = ", ".join(f.read().split()[:3])
with open(out_path, "w") as f:
    json.dump(merged, f, indent=2)
    f.write("\n")
print(f"== {len(merged['benchmarks'])} rows from {len(inputs)} executable(s) -> {out_path}")
PY

echo "== uptime: $(uptime)"
