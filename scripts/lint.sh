#!/usr/bin/env bash
# Formatting and static analysis.
#   scripts/lint.sh            clang-format check of every C++ file
#   scripts/lint.sh --fix      reformat in place
#   scripts/lint.sh --tidy     also clang-tidy (.clang-tidy) over the tests,
#                              using build/release/compile_commands.json
set -euo pipefail
cd "$(dirname "$0")/.."

mode=check tidy=0
for arg in "$@"; do
  case "$arg" in
    --fix) mode=fix ;;
    --tidy) tidy=1 ;;
    *) echo "usage: scripts/lint.sh [--fix] [--tidy]" >&2; exit 2 ;;
  esac
done

mapfile -t files < <(git ls-files '*.hpp' '*.h' '*.cpp' ':!single_include/*')
if [ "$mode" = fix ]; then
  clang-format -i "${files[@]}"
else
  clang-format --dry-run --Werror "${files[@]}"
fi

if [ "$tidy" = 1 ]; then
  [ -f build/release/compile_commands.json ] || cmake --preset release >/dev/null
  mapfile -t units < <(git ls-files 'tests/*.cpp' ':!tests/consumers/*')
  clang-tidy -p build/release --quiet "${units[@]}"
fi
