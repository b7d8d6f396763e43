#!/usr/bin/env bash
# The plots' screenshot check: headless Chromium (Debian's `chromium`, installed when absent)
# renders the three README plots (`compare --plot`, `compare --family election --plot`,
# `sweep --plot`) to PNG. It fails unless each SVG parses, Chromium exits cleanly, and each PNG
# has the drawing's size, is not blank, and shows the colour of every algorithm the legend lists
# (one colour per algorithm, shared by its measured and theory lines). The PNGs are kept in
# docs/plots/ for the README.
#
#   scripts/plot-screenshot-check.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-docs/plots}

if ! command -v chromium > /dev/null; then
  echo "plot-screenshot-check: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null
fi

cargo build -q -p distsync-cli
BIN="${CARGO_TARGET_DIR:-target}/debug/distsync"
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
  python3 - "$work/$name.png" "$width" "$height" "$colours" "$name" <<'EOF'
import struct, sys, zlib

path, width, height, colours, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"plot-screenshot-check: FAILED: {name}: not a PNG")
pos, chunks = 8, {}
while pos < len(data):
    (length,) = struct.unpack(">I", data[pos:pos + 4])
    kind = data[pos + 4:pos + 8]
    chunks.setdefault(kind, []).append(data[pos + 8:pos + 8 + length])
    pos += 12 + length
w, h, depth, ctype = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
if (w, h) != (width, height):
    sys.exit(f"plot-screenshot-check: FAILED: {name}: the PNG is {w}x{h}, the drawing {width}x{height}")
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
stride = w * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1:
            line[x] = (line[x] + a) & 255
        elif f == 2:
            line[x] = (line[x] + b) & 255
        elif f == 3:
            line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line))
    prev = line
pixels = [(r[x], r[x + 1], r[x + 2]) for r in rows for x in range(0, stride, bpp)]
inked = sum(1 for p in pixels if min(p) < 200) / len(pixels)
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
