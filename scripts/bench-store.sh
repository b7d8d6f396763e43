#!/usr/bin/env bash
# The replicated store and the snapshots measured on loopback (issue 36, target 5): for each
# multicast algorithm and 3 and 5 nodes, a cluster (`cluster up --multicast ALGO`), then
# crates/net/examples/storebench.rs: CLIENTS clients (round-robin over the nodes) each sending
# `add` updates and waiting until its node's replica applied each, for SECONDS: updates/s and
# latency p50/p99; and per cluster size, COUNT snapshots through node 0 while every node sends
# money to the next: time to snapshot (p50/p99, as the client sees it and as the initiator
# measures it). Beside each row, the messages per update the notes predict (N^2-1 for total
# order, N-1 for causal and FIFO) and the bodies the store sends ahead of them (N-1). Not part
# of the tests.
#
# Usage: scripts/bench-store.sh [SECONDS per run, default 2]
# Environment: CLIENTS (default "1 16"), NODES (default "3 5"), COUNT (snapshots, default 50),
# MULTICASTS (default "total-order-multicast causal-broadcast fifo-broadcast"), DISTSYNC_BIN and
# STOREBENCH_BIN (both: use those binaries instead of building).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-2}
read -r -a CLIENT_COUNTS <<< "${CLIENTS:-1 16}"
read -r -a NODE_COUNTS <<< "${NODES:-3 5}"
read -r -a ALGOS <<< "${MULTICASTS:-total-order-multicast causal-broadcast fifo-broadcast}"
COUNT=${COUNT:-50}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ -n "${DISTSYNC_BIN:-}" ] && [ -n "${STOREBENCH_BIN:-}" ]; then
  BIN=$DISTSYNC_BIN
  BENCH=$STOREBENCH_BIN
else
  cargo build --release -q -p distsync-cli
  cargo build --release -q -p distsync-net --example storebench
  BIN=$CARGO_TARGET_DIR/release/distsync
  BENCH=$CARGO_TARGET_DIR/release/examples/storebench
fi
WORK=$(mktemp -d)
cleanup() {
  "$BIN" cluster down --dir "$WORK/c" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
echo "| multicast | nodes | clients | updates/s | p50 | p99 | messages per update (notes + bodies) |"
echo "|---|---|---|---|---|---|---|"
SNAPS=()
for n in "${NODE_COUNTS[@]}"; do
  for algo in "${ALGOS[@]}"; do
    "$BIN" cluster down --dir "$WORK/c" >/dev/null 2>&1 || true
    rm -rf "$WORK/c"
    "$BIN" cluster up --nodes "$n" --mutex central --multicast "$algo" --dir "$WORK/c" \
      --heartbeat 100ms --heartbeat-timeout 1s --log warn >/dev/null
    case $algo in
      total-order-multicast) msgs="$((n * n - 1)) + $((n - 1))" ;;
      *) msgs="$((n - 1)) + $((n - 1))" ;;
    esac
    for c in "${CLIENT_COUNTS[@]}"; do
      r=$("$BENCH" updates "$WORK/c/cluster.toml" "$c" "$SECS")
      echo "| $algo | $n | $c | $(field "$r" throughput_per_s) | $(field "$r" p50_us) us | $(field "$r" p99_us) us | $msgs |"
    done
    if [ "$algo" = "${ALGOS[0]}" ]; then
      r=$("$BENCH" snapshots "$WORK/c/cluster.toml" "$COUNT")
      SNAPS+=("| $n | $(field "$r" snapshots) | $(field "$r" conserved) | $(field "$r" p50_us) us | $(field "$r" p99_us) us | $(field "$r" node_p50_us) us | $(field "$r" node_p99_us) us | $((n * (n - 1))) + $((n - 1)) |")
    fi
  done
done
echo
echo "| nodes | snapshots | conserved | client p50 | client p99 | initiator p50 | initiator p99 | messages (markers + parts) |"
echo "|---|---|---|---|---|---|---|---|"
for row in "${SNAPS[@]}"; do echo "$row"; done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
