#!/usr/bin/env bash
# Writes the static site of `distsync web` into DIR: the same page (index.html and assets/) with
# the in-browser engine, the API compiled to WebAssembly (crates/web-wasm), run in a Web Worker.
# Put DIR on any static web server (a course page, GitHub Pages, `python3 -m http.server`): no
# server-side code, and once loaded it works offline.
#
#   scripts/build-static.sh DIR
#
# Needs the wasm32-unknown-unknown target (`rustup target add wasm32-unknown-unknown`) and
# wasm-bindgen-cli 0.2.130, the version of the wasm-bindgen crate in Cargo.lock
# (`cargo install wasm-bindgen-cli --version 0.2.130`).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: scripts/build-static.sh DIR   (writes the static site into DIR)" >&2
  exit 2
fi
out=$1
cd "$(dirname "$0")/.."
want=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
have=$(wasm-bindgen --version 2> /dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  echo "error: scripts/build-static.sh needs wasm-bindgen-cli $want (Cargo.lock's wasm-bindgen), found '${have:-none}': cargo install wasm-bindgen-cli --version $want" >&2
  exit 1
fi
export CARGO_INCREMENTAL=0
cargo build --locked --profile wasm --target wasm32-unknown-unknown -p distsync-web-wasm
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$out/assets"
wasm-bindgen --target no-modules --no-typescript --remove-name-section --remove-producers-section --out-dir "$out/assets" \
  "$target_dir/wasm32-unknown-unknown/wasm/distsync_web_wasm.wasm"
for f in app.js engine.js worker.js style.css favicon.svg; do
  cp crates/web/assets/$f "$out/assets/$f"
done
# The one difference from the page `distsync web` serves: which engine answers it.
sed 's|<meta name="distsync-engine" content="server">|<meta name="distsync-engine" content="browser">|' \
  crates/web/assets/index.html > "$out/index.html"
grep -q 'content="browser"' "$out/index.html" || {
  echo "error: crates/web/assets/index.html has no distsync-engine meta tag to switch" >&2
  exit 1
}
echo "static site written to $out ($(du -sh "$out" | cut -f1); the .wasm is $(du -h "$out/assets/distsync_web_wasm_bg.wasm" | cut -f1))"
