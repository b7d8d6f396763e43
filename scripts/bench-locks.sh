#!/usr/bin/env bash
# Lock acquire-and-release latency (p50, p99) and throughput on loopback, with 1, 8 and 64
# clients, for each mutual-exclusion algorithm on a 5-node distsync cluster, and for a Redis
# SET NX PX / compare-and-delete lock on a local redis-server. Not part of the tests.
#
# Usage: scripts/bench-locks.sh [SECONDS per run, default 5] [ALGORITHMS..., default all]
# Needs redis-server (Debian package redis-server: apt-get install redis-server); without it the
# Redis rows are skipped. Prints a markdown table; raw JSON lines go to $OUT (default target/bench-locks.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
shift || true
ALGOS=("$@")
if [ ${#ALGOS[@]} -eq 0 ]; then
  ALGOS=(central ricart-agrawala suzuki-kasami raymond lamport-mutex token-ring ricart-agrawala-token maekawa singhal majority-vote)
fi
OUT=${OUT:-target/bench-locks.jsonl}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p distsync-cli
cargo build --release -q -p distsync-net --example lockbench
BIN=$CARGO_TARGET_DIR/release/distsync
BENCH=$CARGO_TARGET_DIR/release/examples/lockbench
WORK=$(mktemp -d)
REDIS_PID=
cleanup() {
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null 2>&1 || true
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
echo "| system | clients | ops/s | p50 (us) | p99 (us) |"
echo "| --- | ---: | ---: | ---: | ---: |"
row() { # name clients json
  python3 -c 'import json,sys; j=json.loads(sys.argv[3]); print("| %s | %s | %.0f | %.0f | %.0f |" % (sys.argv[1], sys.argv[2], j["throughput_per_s"], j["p50_us"], j["p99_us"]))' "$1" "$2" "$3"
}
for algo in "${ALGOS[@]}"; do
  if ! "$BIN" cluster up --nodes 5 --mutex "$algo" --election bully --dir "$WORK/cluster" \
      --heartbeat 100ms --heartbeat-timeout 1s --log warn >/dev/null; then
    echo "| $algo | - | could not start | | |"
    continue
  fi
  # Wait (bounded) for the nodes to agree on a leader and open their view.
  for _ in $(seq 1 100); do
    if "$BIN" leader --cluster "$WORK/cluster/cluster.toml" --timeout 1s >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  sleep 0.5
  for c in 1 8 64; do
    j=$(timeout $((SECS * 4 + 30)) "$BENCH" distsync "$WORK/cluster/cluster.toml" "$c" "$SECS" || echo '{"throughput_per_s":0,"p50_us":0,"p99_us":0,"failed":true}')
    echo "{\"system\":\"$algo\",\"clients\":$c,\"result\":$j}" >> "$OUT"
    row "$algo" "$c" "$j"
  done
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null
  # `cluster up` restarts an existing directory in place: start the next algorithm afresh.
  rm -rf "$WORK/cluster"
done
if command -v redis-server >/dev/null; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --daemonize no >/dev/null &
  REDIS_PID=$!
  for _ in $(seq 1 50); do
    if redis-cli -p "$PORT" ping >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  for c in 1 8 64; do
    j=$(timeout $((SECS * 4 + 30)) "$BENCH" redis "127.0.0.1:$PORT" "$c" "$SECS")
    echo "{\"system\":\"redis\",\"clients\":$c,\"result\":$j}" >> "$OUT"
    row "redis SET NX PX" "$c" "$j"
  done
else
  echo "| redis SET NX PX | - | redis-server not installed | | |"
fi
