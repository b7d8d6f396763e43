#!/usr/bin/env bash
# The plots' screenshot check: headless Chromium (Debian's `chromium`, installed when absent)
# renders the three README plots (`compare --plot`, `compare --family election --plot`,
# `sweep --plot`) to PNG. It fails unless each SVG parses, Chromium exits cleanly, and each PNG
# has the drawing's size, is not blank, and shows the colour of every algorithm the legend lists
# (one colour per algorithm, shared by its measured and theory lines). The PNGs are kept in
# docs/plots/ for the README.
#
#   [DISTSYNC_BIN=path] scripts/plot-screenshot-check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-docs/plots}

if ! command -v chromium > /dev/null; then
  echo "plot-screenshot-check: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
fi

. scripts/distsync-bin.sh plot-screenshot-check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BIN" compare --nodes 3,5,8 --plot "$work/compare-mutex.svg" > /dev/null
"$BIN" compare --family election --nodes 4,8,16 --plot "$work/compare-election.svg" > /dev/null
"$BIN" sweep --algo ricart-agrawala,lamport-mutex,suzuki-kasami --param nodes=2..16 \
  --plot "$work/sweep.svg" > /dev/null

flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --hide-scrollbars --user-data-dir="$work/profile")

mkdir -p "$OUT"
for name in compare-mutex compare-election sweep; do
  svg="$work/$name.svg"
  read -r width height colours < <(python3 - "$svg" <<'EOF'
import re, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
text = open(sys.argv[1]).read()
# The legend's colours: the stroke of each legend sample, in order (the grey style key excluded).
strokes = re.findall(r'stroke="(#[0-9A-Fa-f]{6})"', text)
legend = sorted(set(s.upper() for s in strokes) - {"#555555", "#E4E4E4", "#000000", "#FFFFFF"})
print(int(float(root.get("width"))), int(float(root.get("height"))), ",".join(legend))
EOF
)
  timeout 120 chromium "${flags[@]}" --window-size="$width,$height" \
    --screenshot="$work/$name.png" "file://$svg" 2> "$work/$name.err"
  if grep -E "net::ERR_|Failed to load|Cannot open" "$work/$name.err" >&2; then
    echo "plot-screenshot-check: FAILED: Chromium reported a loading error for $name" >&2
    exit 1
  fi
  SCRIPTS=scripts python3 - "$work/$name.png" "$width" "$height" "$colours" "$name" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["SCRIPTS"])
import png_pixels

path, width, height, colours, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    w, h, pixels = png_pixels.read(path)
except png_pixels.PngError as e:
    sys.exit(f"plot-screenshot-check: FAILED: {name}: {e}")
if (w, h) != (width, height):
    sys.exit(f"plot-screenshot-check: FAILED: {name}: the PNG is {w}x{h}, the drawing {width}x{height}")
inked = png_pixels.inked(pixels)
if inked < 0.01:
    sys.exit(f"plot-screenshot-check: FAILED: {name}: nearly blank ({inked:.1%} inked)")
missing = []
for hexc in filter(None, colours.split(",")):
    c = tuple(int(hexc[k:k + 2], 16) for k in (1, 3, 5))
    near = sum(1 for p in pixels if sum(abs(p[k] - c[k]) for k in range(3)) < 30)
    if near < 20:
        missing.append(f"{hexc}: {near} pixels")
if missing:
    sys.exit(f"plot-screenshot-check: FAILED: {name}: colours not drawn: " + "; ".join(missing))
print(f"plot-screenshot-check: {name}: {w}x{h} PNG, {inked:.1%} inked, {len(colours.split(','))} colours drawn")
EOF
  cp "$work/$name.png" "$OUT/$name.png"
done
echo "plot-screenshot-check: ok, kept $OUT/"
