#!/usr/bin/env bash
# Draws every scenario in scenarios/ as a space-time diagram in docs/gallery/NAME.svg and writes
# docs/gallery.md linking them. Long runs are drawn up to their 400th event (the page says so and
# gives the command for the whole drawing). Run it again after adding or changing a scenario:
#
#   scripts/gallery.sh           # regenerate, then check
#   scripts/gallery.sh --check   # only check: fails naming every scenario the gallery lacks
#
# The check (also run by `cargo test -p distsync-cli --test docs`) fails when a scenario of
# scenarios/ has no section in docs/gallery.md or no drawing in docs/gallery/.
set -euo pipefail
cd "$(dirname "$0")/.."

check() {
  local missing=0
  for scenario in scenarios/*.toml; do
    local name
    name=$(basename "$scenario" .toml)
    if ! grep -qx "## $name" docs/gallery.md; then
      echo "gallery: $scenario has no section in docs/gallery.md" >&2
      missing=1
    fi
    if [ ! -s "docs/gallery/$name.svg" ]; then
      echo "gallery: $scenario has no drawing docs/gallery/$name.svg" >&2
      missing=1
    fi
  done
  if [ "$missing" -ne 0 ]; then
    echo "gallery: run scripts/gallery.sh to redraw it" >&2
    return 1
  fi
}

if [ "${1:-}" = "--check" ]; then
  check
  echo "gallery: every scenario is drawn"
  exit 0
fi

LIMIT=400
cargo build -q -p distsync-cli
BIN="${CARGO_TARGET_DIR:-target}/debug/distsync"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Nanoseconds in the largest unit that divides them: 270000000 -> 270ms.
human() {
  local ns=$1
  if ((ns % 1000000000 == 0)); then echo "$((ns / 1000000000))s"
  elif ((ns % 1000000 == 0)); then echo "$((ns / 1000000))ms"
  elif ((ns % 1000 == 0)); then echo "$((ns / 1000))us"
  else echo "${ns}ns"; fi
}

mkdir -p docs/gallery
rm -f docs/gallery/*.svg
page=docs/gallery.md
{
  echo "# Gallery: every scenario, drawn"
  echo
  echo "Each scenario in \`scenarios/\` run in the simulator and drawn as a space-time diagram"
  echo "(one line per process, messages as arrows coloured by kind; [viz.md](viz.md) explains the"
  echo "marks). Hover over an event or a message in a browser for its times and timestamps."
  echo "Regenerate with \`scripts/gallery.sh\`."
  echo
} > "$page"

for scenario in scenarios/*.toml; do
  name=$(basename "$scenario" .toml)
  trace="$tmp/$name.jsonl"
  rc=0
  "$BIN" run "$scenario" --trace "$trace" > "$tmp/$name.out" 2> "$tmp/$name.err" || rc=$?
  if [ "$rc" -gt 1 ]; then
    echo "gallery: $scenario did not run:" >&2
    cat "$tmp/$name.err" >&2
    exit 1
  fi
  events=$(($(wc -l < "$trace") - 1))
  window=()
  note=""
  if [ "$events" -gt "$LIMIT" ]; then
    # The time of the LIMIT-th event (line LIMIT + 1, after the header).
    to=$(sed -n "$((LIMIT + 1))p" "$trace" | sed -E 's/.*"time_ns":([0-9]+).*/\1/')
    to=$(human "$to")
    window=(--to "$to")
    note="The trace has $events events; drawn up to the time of its ${LIMIT}th, $to (\`distsync run $scenario --trace $name.jsonl\`, then \`distsync trace render $name.jsonl --svg $name.svg --to $to\`). The whole run (windowed if it has more than 4000 events): \`distsync run $scenario --svg $name.svg\`."
  fi
  if [ "$rc" -eq 1 ]; then
    # A run that breaks a property is drawn around its first violation, as `run --svg` does.
    "$BIN" run "$scenario" --svg "docs/gallery/$name.svg" > /dev/null 2> "$tmp/$name.window" || true
    why=$(grep -m1 "^docs/gallery/$name.svg: " "$tmp/$name.window" | sed "s|^docs/gallery/$name.svg: ||" || true)
    note=""
    if [ -n "$why" ]; then
      note="The run breaks a property, so the drawing is its window around the violation ($why; \`distsync run $scenario --svg $name.svg\` draws the same)."
    fi
  else
    "$BIN" trace render "$trace" --svg "docs/gallery/$name.svg" "${window[@]}" > /dev/null
  fi
  {
    echo "## $name"
    echo
    # The scenario's opening comment says what it shows.
    sed -n '/^#/!q; s/^# \{0,1\}//p' "$scenario"
    echo
    echo '```'
    head -n 1 "$tmp/$name.out"
    if [ "$rc" -eq 1 ]; then
      grep -E '^  ' "$tmp/$name.out" | head -n 3 || true
    fi
    echo '```'
    echo
    if [ -n "$note" ]; then
      echo "$note"
      echo
    fi
    echo "![$name](gallery/$name.svg)"
    echo
  } >> "$page"
done
check
echo "gallery: $(ls docs/gallery/*.svg | wc -l) drawings in docs/gallery, index $page"
