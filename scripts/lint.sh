#!/usr/bin/env bash
# Formatting and static analysis.
#   scripts/lint.sh            clang-format check of every C++ file
#   scripts/lint.sh --fix      reformat in place
#   scripts/lint.sh --tidy     also clang-tidy (.clang-tidy) over the tests,
#                              with the compile commands of build/tidy (the
#                              release preset with one unit per test file)
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
  # The presets compile each test executable as one unity unit, whose
  # compile commands name the generated unit, not the test files.
  [ -f build/tidy/compile_commands.json ] || cmake --preset release -B build/tidy -DRUVLLM_UNITY_TESTS=OFF >/dev/null
  mapfile -t units < <(git ls-files 'tests/*.cpp' ':!tests/consumers/*')
  clang-tidy -p build/tidy --quiet "${units[@]}"
fi
