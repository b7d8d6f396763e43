#!/usr/bin/env bash
# The screenshot check: headless Chromium (Debian's `chromium`, installed here when absent) loads
# the space-time diagram of the seed-002 bully example and renders it to PNG. The check fails
# unless Chromium reads the SVG without an XML error, exits cleanly, and writes a PNG of the
# drawing's size that is not blank and shows the marks of the run: the Election, Ok and
# Coordinator arrows, the leader diamonds and the crash. The PNG is kept as docs/bully-example.png.
#
#   [DISTSYNC_BIN=path] scripts/screenshot-check.sh [SCENARIO] [OUT.png]
set -euo pipefail
cd "$(dirname "$0")/.."

SCENARIO=${1:-scenarios/bully-eight-processes.toml}
OUT=${2:-docs/bully-example.png}

if ! command -v chromium > /dev/null; then
  echo "screenshot-check: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
fi

. scripts/distsync-bin.sh screenshot-check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rc=0
"$BIN" run "$SCENARIO" --svg "$work/run.svg" > "$work/run.out" 2>&1 || rc=$?
if [ "$rc" -gt 1 ]; then
  cat "$work/run.out" >&2
  echo "screenshot-check: FAILED: the scenario did not run" >&2
  exit 1
fi

size=$(python3 - "$work/run.svg" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
print(int(float(root.get("width"))), int(float(root.get("height"))))
EOF
)
read -r width height <<< "$size"

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --user-data-dir="$work/profile")

# 1. The document Chromium builds from the file is the SVG, not an XML error page.
timeout 120 chromium "${flags[@]}" --dump-dom "file://$work/run.svg" > "$work/dom.xml" 2> "$work/dom.err"
if grep -q "parsererror" "$work/dom.xml" || ! grep -q "<svg" "$work/dom.xml"; then
  head -c 2000 "$work/dom.xml" >&2
  echo "screenshot-check: FAILED: Chromium did not read the SVG" >&2
  exit 1
fi

# 2. The picture.
timeout 120 chromium "${flags[@]}" --window-size="$width,$height" \
  --screenshot="$work/shot.png" "file://$work/run.svg" 2> "$work/shot.err"
if grep -E "net::ERR_|Failed to load|Cannot open" "$work/shot.err" >&2; then
  echo "screenshot-check: FAILED: Chromium reported a loading error" >&2
  exit 1
fi

SCRIPTS=scripts python3 - "$work/shot.png" "$width" "$height" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["SCRIPTS"])
import png_pixels

path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
try:
    w, h, pixels = png_pixels.read(path)
except png_pixels.PngError as e:
    sys.exit(f"screenshot-check: FAILED: {e}")
if (w, h) != (width, height):
    sys.exit(f"screenshot-check: FAILED: the PNG is {w}x{h}, the drawing {width}x{height}")
inked = png_pixels.inked(pixels)
if inked < 0.02:
    sys.exit(f"screenshot-check: FAILED: the picture is nearly blank ({inked:.1%} inked)")
marks = {
    "Election arrows (#1f77b4)": (0x1F, 0x77, 0xB4),
    "Ok arrows (#ff7f0e)": (0xFF, 0x7F, 0x0E),
    "Coordinator arrows (#2ca02c)": (0x2C, 0xA0, 0x2C),
    "leader diamonds (#f2c500)": (0xF2, 0xC5, 0x00),
    "crash crosses (#d62728)": (0xD6, 0x27, 0x28),
}
missing = []
for name, colour in marks.items():
    near = sum(1 for p in pixels if sum(abs(p[k] - colour[k]) for k in range(3)) < 30)
    if near < 20:
        missing.append(f"{name}: {near} pixels")
if missing:
    sys.exit("screenshot-check: FAILED: not drawn: " + "; ".join(missing))
print(f"screenshot-check: {w}x{h} PNG, {inked:.1%} inked, every mark present")
EOF

mkdir -p "$(dirname "$OUT")"
cp "$work/shot.png" "$OUT"
echo "screenshot-check: ok, kept $OUT"
