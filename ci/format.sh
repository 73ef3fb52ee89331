#!/usr/bin/env bash
# Checks that every C++ and CUDA source is as .clang-format formats it (lines
# of at most 120 columns, comments included) and exits 1 naming the files that
# are not; with --fix, formats them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || bash ci/setup.sh
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cpp' '*.cu' | grep -v '^tests/fuzz/corpus/')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
long="$(awk 'length > 120 {print FILENAME ":" FNR ": " length " columns"}' "${files[@]}")"
if ((${#bad[@]})) || [ -n "$long" ]; then
  for f in "${bad[@]}"; do echo "ci/format.sh: not formatted: $f"; done
  [ -z "$long" ] || echo "$long" | sed 's/^/ci\/format.sh: over 120 columns: /'
  echo "ci/format.sh: run 'bash ci/format.sh --fix' (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "ci/format.sh: ok (${#files[@]} files)"
