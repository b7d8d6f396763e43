# Sourced by bench-distalgo.sh and bench-locks.sh (from the repository's root): sets BIN (the
# distsync binary) and BENCH (crates/net/examples/lockbench). DISTSYNC_BIN and LOCKBENCH_BIN
# (both) name binaries built elsewhere, an earlier commit's, to compare before and after in one
# session; otherwise both are built in release mode under $CARGO_TARGET_DIR (default target).
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -n "${DISTSYNC_BIN:-}" ] && [ -n "${LOCKBENCH_BIN:-}" ]; then
  BIN=$DISTSYNC_BIN
  BENCH=$LOCKBENCH_BIN
else
  cargo build --release -q -p distsync-cli
  cargo build --release -q -p distsync-net --example lockbench
  BIN=$CARGO_TARGET_DIR/release/distsync
  BENCH=$CARGO_TARGET_DIR/release/examples/lockbench
fi
