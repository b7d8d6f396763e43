#!/usr/bin/env bash
# The lock service against Redis, measured in one run (issue 15, target 5): for each algorithm a
# 5-node distsync cluster (bully election) and, for 1 and 64 clients, acquire-and-release
# throughput and latency (p50, p99) through the persistent lock client
# (distsync_net::lock_client, via crates/net/examples/lockbench.rs), each row paired with a Redis
# row measured right after it (SET lock TOKEN NX PX 10000, retried after 1 ms while held; release
# by compare-and-delete) on a local redis-server, so both see the same machine load. The load
# average is printed beside every pair. Not part of the tests.
#
# Each algorithm runs with every `[locks] handoff` setting of HANDOFFS: 0 sends every grant
# through the algorithm; K > 0 lets a node hand a released lock straight to its next waiting
# client at most K times in a row (lock cohorting, docs/net.md).
#
# Usage: scripts/bench-locks.sh [SECONDS per run, default 3] [ALGORITHMS..., default
#        central raymond ricart-agrawala suzuki-kasami lamport-mutex]
# Environment: CLIENTS (default "1 64"), HANDOFFS (default "0 8"), REPS (paired repetitions, default 2; the table shows
# medians), MODE (distsync: drop the guard, the Unlock written ahead of the next Lock; or
# distsync-release: wait for each release's confirmation, a second round trip as Redis's),
# OUT (raw JSON lines, default target/bench-locks.jsonl), PLACEMENT (auto, the default: clients
# connect where the library puts them, central's on the coordinator's node through
# `LockClient::connect`, the others' round-robin over the nodes; spread: round-robin for every
# algorithm, central's 4-hop path included), DISTSYNC_BIN and LOCKBENCH_BIN (both: use those
# binaries instead of building, to compare two builds).
# Needs redis-server (Debian package redis-server: apt-get install redis-server); without it the
# Redis columns stay empty. Redis runs on 127.0.0.1, a free port, no persistence, and is killed
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-3}
shift || true
ALGOS=("$@")
if [ ${#ALGOS[@]} -eq 0 ]; then
  ALGOS=(central raymond ricart-agrawala suzuki-kasami lamport-mutex)
fi
read -r -a CLIENT_COUNTS <<< "${CLIENTS:-1 64}"
read -r -a HANDOFF_VALUES <<< "${HANDOFFS:-0 8}"
REPS=${REPS:-2}
MODE=${MODE:-distsync}
OUT=${OUT:-target/bench-locks.jsonl}
. scripts/bench-bins.sh
WORK=$(mktemp -d)
REDIS_PID=
cleanup() {
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null 2>&1 || true
  if [ -n "$REDIS_PID" ]; then kill "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$(dirname "$OUT")"
: > "$OUT"
load() { cut -d' ' -f1 /proc/loadavg; }
FAILED='{"throughput_per_s":0,"p50_us":0,"p99_us":0,"failed":true}'

REDIS=
if command -v redis-server >/dev/null; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --daemonize no >/dev/null &
  REDIS_PID=$!
  for _ in $(seq 1 50); do
    if redis-cli -p "$PORT" ping >/dev/null 2>&1; then REDIS="127.0.0.1:$PORT"; break; fi
    sleep 0.1
  done
fi
[ -n "$REDIS" ] || echo "redis-server not installed or not answering: Redis columns left empty (apt-get install redis-server)" >&2

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $SECS s per run, $REPS paired repetitions, mode $MODE" >&2
for algo in "${ALGOS[@]}"; do
 for handoff in "${HANDOFF_VALUES[@]}"; do
  rm -rf "$WORK/cluster"
  if ! "$BIN" cluster up --nodes 5 --mutex "$algo" --election bully --dir "$WORK/cluster" \
      --heartbeat 100ms --heartbeat-timeout 1s --log warn --handoff "$handoff" >/dev/null; then
    echo "{\"system\":\"$algo\",\"handoff\":$handoff,\"failed\":\"could not start\"}" >> "$OUT"
    continue
  fi
  # Wait (bounded) for the nodes to agree on a leader and open their view.
  for _ in $(seq 1 100); do
    if "$BIN" leader --cluster "$WORK/cluster/cluster.toml" --timeout 1s >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  sleep 0.5
  for c in "${CLIENT_COUNTS[@]}"; do
    for rep in $(seq 1 "$REPS"); do
      l=$(load)
      j=$(timeout $((SECS * 4 + 30)) "$BENCH" "$MODE" "$WORK/cluster/cluster.toml" "$c" "$SECS" || echo "$FAILED")
      echo "{\"system\":\"$algo\",\"handoff\":$handoff,\"clients\":$c,\"rep\":$rep,\"load\":$l,\"result\":$j}" >> "$OUT"
      if [ -n "$REDIS" ]; then
        l=$(load)
        j=$(timeout $((SECS * 4 + 30)) "$BENCH" redis "$REDIS" "$c" "$SECS" || echo "$FAILED")
        echo "{\"system\":\"redis\",\"pair\":\"$algo\",\"handoff\":$handoff,\"clients\":$c,\"rep\":$rep,\"load\":$l,\"result\":$j}" >> "$OUT"
      fi
    done
  done
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null
 done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(xs):
    return statistics.median(xs) if xs else float("nan")
print("| system | handoff | clients | ops/s | p50 (us) | p99 (us) | Redis ops/s | Redis p50 | Redis p99 | ops/s ratio | load avg |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
seen = []
for r in rows:
    key = (r["system"], r.get("handoff", 0), r.get("clients"))
    if r["system"] != "redis" and "clients" in r and key not in seen:
        seen.append(key)
for algo, h, c in seen:
    d = [r for r in rows if r["system"] == algo and r.get("handoff", 0) == h and r.get("clients") == c]
    q = [r for r in rows if r["system"] == "redis" and r.get("pair") == algo and r.get("handoff", 0) == h and r.get("clients") == c]
    f = lambda rs, k: med([r["result"][k] for r in rs if not r["result"].get("failed")])
    loads = [r["load"] for r in d + q]
    ds, rs = f(d, "throughput_per_s"), f(q, "throughput_per_s")
    ratio = ds / rs if q and rs == rs and rs > 0 else float("nan")
    fmt = lambda x: "-" if x != x else "%.0f" % x
    print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        algo, h, c, fmt(ds), fmt(f(d, "p50_us")), fmt(f(d, "p99_us")),
        fmt(rs), fmt(f(q, "p50_us")), fmt(f(q, "p99_us")),
        "-" if ratio != ratio else "%.2f" % ratio,
        "%.1f-%.1f" % (min(loads), max(loads)) if loads else "-"))
for r in rows:
    if r.get("failed") == "could not start":
        print("| %s | %s | - | could not start | | | | | | | |" % (r["system"], r.get("handoff", "-")))
EOF
