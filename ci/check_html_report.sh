#!/usr/bin/env bash
# Renders tr-bench reports as HTML with `tr-bench report`, screenshots the page
# in headless Chromium and checks that something real was drawn: the PNG is
# larger than 20 KB, has many colours, and shows the bar colours of the charts.
#   ci/check_html_report.sh                 # the golden pair under tests/golden/
#   ci/check_html_report.sh A.json [B.json ...]
# Environment: TR_BENCH (default build/bin/tr-bench), OUT_DIR (default
# build/html-report-check; report.html and report.png are left there).
# Installs Debian's chromium when missing; the page itself needs no network.
set -euo pipefail
cd "$(dirname "$0")/.."
TR_BENCH=${TR_BENCH:-build/bin/tr-bench}
OUT_DIR=${OUT_DIR:-build/html-report-check}
if (($# == 0)); then
  set -- tests/golden/report_small.json tests/golden/report_small_b.json
fi
if [ ! -x "$TR_BENCH" ]; then
  echo "check_html_report: $TR_BENCH not found; build it first (bash ci/build.sh) or set TR_BENCH" >&2
  exit 2
fi

chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "check_html_report: installing chromium"
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  fi
  chrome=$(command -v chromium)
fi

mkdir -p "$OUT_DIR"
html="$OUT_DIR/report.html"
png="$OUT_DIR/report.png"
rm -f "$html" "$png"
"$TR_BENCH" report "$@" -o "$html"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
timeout 180 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --screenshot="$png" --window-size=1400,2000 \
  "file://$(realpath "$html")" >"$OUT_DIR/chromium.log" 2>&1 || {
  echo "check_html_report: FAILED: chromium exited with $? (log: $OUT_DIR/chromium.log)" >&2
  exit 1
}
[ -f "$png" ] || { echo "check_html_report: FAILED: no screenshot written (log: $OUT_DIR/chromium.log)" >&2; exit 1; }
size=$(stat -c %s "$png")
if ((size <= 20480)); then
  echo "check_html_report: FAILED: $png is only $size bytes: a blank page?" >&2
  exit 1
fi

# Decode the PNG with the standard library only (no PIL) and look at it.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" - "$png" <<'PYEOF'
import struct, sys, zlib
from collections import Counter

data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, []
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat.append(body)
    pos += 12 + n
assert depth == 8 and ctype in (2, 6) and interlace == 0, f"unexpected PNG format {depth} {ctype} {interlace}"
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(b"".join(idat))
stride = w * bpp
prev = bytearray(stride)
colors = Counter()
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 1:
        for i in range(bpp, stride):
            line[i] = (line[i] + line[i - bpp]) & 255
    elif f == 2:
        line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif f == 3:
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
    elif f == 4:
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    colors.update(bytes(line[i:i + 3]) for i in range(0, stride, bpp))

total = w * h
white = colors.get(b"\xff\xff\xff", 0)
bars = {"eager #d1495b": b"\xd1\x49\x5b", "partial-capture #edae49": b"\xed\xae\x49", "full-capture #00798c": b"\x00\x79\x8c"}
print(f"check_html_report: {w}x{h} screenshot, {len(colors)} distinct colours, "
      f"{100 * (total - white) / total:.1f}% non-white")
for name, rgb in bars.items():
    print(f"check_html_report:   bar colour {name}: {colors.get(rgb, 0)} pixels")
problems = []
if len(colors) < 16:
    problems.append(f"only {len(colors)} colours")
if total - white < total * 0.03:
    problems.append("almost entirely white")
if sum(colors.get(rgb, 0) > 500 for rgb in bars.values()) < 3:
    problems.append("the chart bars are missing")
if problems:
    sys.exit("check_html_report: FAILED: " + "; ".join(problems))
PYEOF
echo "check_html_report: ok: $png ($size bytes), from $html"
