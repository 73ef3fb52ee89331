#!/usr/bin/env bash
# Proves that tr-bench reports are Google Benchmark JSON: runs Google
# Benchmark's own compare.py (Debian libbenchmark-tools) on two reports and
# fails if it errors or its table lacks any benchmark the two files share.
#   ci/check_compare_py.sh BASELINE.json CURRENT.json
#   ci/check_compare_py.sh            # the golden pair under tests/golden/
# Installs libbenchmark-tools, python3-scipy and python3-numpy (what compare.py
# imports) from Debian when missing; needs no other network.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# == 0)); then
  set -- tests/golden/report_small.json tests/golden/report_small_b.json
fi
if (($# != 2)); then
  echo "usage: ci/check_compare_py.sh [BASELINE.json CURRENT.json]" >&2
  exit 2
fi
for f in "$1" "$2"; do
  [ -f "$f" ] || { echo "check_compare_py: no such file: $f" >&2; exit 2; }
done

COMPARE=${COMPARE_PY:-/usr/share/benchmark/compare.py}
# Debian's interpreter: the python3-* packages live there, while a python3
# earlier on PATH (pyenv, venv) may lack them.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "check_compare_py: installing $*"
  # Refresh the package lists only when the install cannot find the packages.
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
}
need=()
[ -f "$COMPARE" ] || need+=(libbenchmark-tools)
"$PY" -c 'import scipy.stats, numpy' 2>/dev/null || need+=(python3-scipy python3-numpy)
((${#need[@]} == 0)) || apt_install "${need[@]}"
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

echo "check_compare_py: $PY $COMPARE --no-color benchmarks $1 $2"
set +e
out=$("$PY" "$COMPARE" --no-color benchmarks "$1" "$2" 2>&1)
rc=$?
set -e
printf '%s\n' "$out"
if ((rc != 0)) || grep -q '^Traceback' <<<"$out"; then
  echo "check_compare_py: FAILED: compare.py exited with $rc" >&2
  exit 1
fi

# Every benchmark both files hold must appear in compare.py's table, with its
# aggregates; with >= 2 repetitions compare.py also prints a U test line.
mapfile -t names < <("$PY" - "$1" "$2" <<'PYEOF'
import json, sys
def names(path):
    with open(path) as f:
        return [b["name"] for b in json.load(f)["benchmarks"]]
a, b = names(sys.argv[1]), set(names(sys.argv[2]))
seen = set()
for n in a:
    if n in b and n not in seen:
        seen.add(n)
        print(n)
PYEOF
)
if ((${#names[@]} == 0)); then
  echo "check_compare_py: FAILED: the two reports share no benchmark names" >&2
  exit 1
fi
missing=0
for n in "${names[@]}"; do
  if ! grep -qF -- "$n " <<<"$out"; then
    echo "check_compare_py: FAILED: compare.py output lacks $n" >&2
    missing=$((missing + 1))
  fi
done
((missing == 0)) || exit 1
grep -q '^OVERALL_GEOMEAN' <<<"$out" || { echo "check_compare_py: FAILED: no OVERALL_GEOMEAN line" >&2; exit 1; }
echo "check_compare_py: ok: compare.py read both reports; all ${#names[@]} shared benchmark names present"
