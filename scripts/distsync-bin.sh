# Sourced by the browser checks (`. scripts/distsync-bin.sh NAME`, NAME being the calling
# script's, for its messages): sets BIN to the distsync binary to check. DISTSYNC_BIN names one
# to use instead of building the debug binary (CI passes the one its `cargo test --workspace`
# built: `cargo build -p distsync-cli` resolves features differently and would build everything
# again).
if [ -n "${DISTSYNC_BIN:-}" ]; then
  BIN=$DISTSYNC_BIN
  if [ ! -x "$BIN" ]; then
    echo "$1: DISTSYNC_BIN=$BIN is not an executable file" >&2
    exit 2
  fi
else
  cargo build -q -p distsync-cli
  BIN="${CARGO_TARGET_DIR:-target}/debug/distsync"
fi
