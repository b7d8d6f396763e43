#!/usr/bin/env bash
# Every row of issue 15's performance table, each beside its anchor measured in the same run:
#   1. `distsync bench` (release): the simulator against a bare binary-heap event loop, the
#      per-event cost against the pending-queue size, elections on a ring of RING processes
#      (CPU time, peak memory), the checker's states per second;
#   2. the checker against stateright on the same model (benches/checker-vs-stateright, a
#      workspace of its own);
#   3. the lock service against Redis (scripts/bench-locks.sh), when redis-server is installed;
#   4. `distsync lock -- true` in a shell loop against `lock --stdin` (one persistent client),
#      on a 3-node central cluster;
#   5. DistAlgo's 10 x 100 mutual-exclusion workload (scripts/bench-distalgo.sh), when DistAlgo
#      (Python 3.7) is installed.
# A missing program is said ("skipped: ...") and its rows are left out. Not part of the tests.
#
# Usage: scripts/bench-all.sh [--quick]
# Environment: RING (ring size of `distsync bench` row c, default 1000000), SECS (seconds per
# lock-service run, default 3), BENCH_ARGS (more flags for `distsync bench`, e.g. "--rows a,b"),
# SECTIONS (which of the five to run, default "1 2 3 4 5").
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=
if [ "${1:-}" = "--quick" ]; then QUICK=--quick; fi
RING=${RING:-1000000}
SECS=${SECS:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
BIN=$CARGO_TARGET_DIR/release/distsync
load() { cut -d' ' -f1 /proc/loadavg; }
SECTIONS=${SECTIONS:-1 2 3 4 5}
for s in $SECTIONS; do
  case $s in [1-5]) ;; *) echo "SECTIONS: expected numbers 1 to 5, got '$s'" >&2; exit 2 ;; esac
done
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(load)"
cargo build --release -q -p distsync-cli
# Each section's output is kept, and its goals (issue 38's table) are summed up at the end.
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

if want 1; then
echo
echo "== 1. distsync bench (simulator, elections at scale, checker)"
if [ -n "$QUICK" ]; then
  # shellcheck disable=SC2086
  "$BIN" bench --quick ${BENCH_ARGS:-} | tee "$LOGS/1"
else
  # shellcheck disable=SC2086
  "$BIN" bench --ring "$RING" ${BENCH_ARGS:-} | tee "$LOGS/1"
fi
fi

if want 2; then
echo
echo "== 2. checker: distsync against stateright 0.31 (same model), load $(load)"
ROUNDS=3
[ -n "$QUICK" ] && ROUNDS=1
cargo run --release -q --manifest-path benches/checker-vs-stateright/Cargo.toml -- --rounds "$ROUNDS" \
  | tee "$LOGS/2"
fi

if want 3; then
echo
echo "== 3. lock service against Redis, load $(load)"
if command -v redis-server >/dev/null; then
  OUT="$LOGS/3.jsonl" scripts/bench-locks.sh "$SECS" central raymond ricart-agrawala suzuki-kasami lamport-mutex
else
  echo "skipped: redis-server not installed (install with apt-get install redis-server)"
fi
fi

if want 4; then
echo
echo "== 4. one lock per process start against one persistent client, load $(load)"
WORK=$(mktemp -d)
cleanup() {
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf "$WORK" "$LOGS"
}
trap cleanup EXIT
"$BIN" cluster up --nodes 3 --mutex central --election bully --dir "$WORK/cluster" \
  --heartbeat 100ms --heartbeat-timeout 1s --log warn >/dev/null
CLUSTER=$WORK/cluster/cluster.toml
python3 - "$BIN" "$CLUSTER" "$SECS" <<'EOF'
import subprocess, sys, time
bin_, cluster, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
# A lock per process start, as a shell loop does.
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    subprocess.run([bin_, "lock", "--cluster", cluster, "bench", "--", "true"], check=True)
    n += 1
loop = n / (time.monotonic() - t0)
# One persistent client: `lock --stdin`, a lock and an unlock per round trip.
p = subprocess.Popen([bin_, "lock", "--stdin", "--cluster", cluster], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, bufsize=1)
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    p.stdin.write("lock bench\n"); p.stdin.flush()
    assert p.stdout.readline().startswith("granted"), "lock --stdin did not grant"
    p.stdin.write("unlock bench\n"); p.stdin.flush()
    assert p.stdout.readline().startswith("released"), "lock --stdin did not release"
    n += 1
stdin_rate = n / (time.monotonic() - t0)
p.stdin.close(); p.wait()
print("| figure | locks/s | anchor: lock --stdin (persistent client), locks/s | ratio |")
print("| --- | ---: | ---: | ---: |")
print(f"| `distsync lock -- true` in a loop | {loop:.0f} | {stdin_rate:.0f} | {loop / stdin_rate:.2f} |")
EOF
"$BIN" cluster down --dir "$WORK/cluster" >/dev/null 2>&1 || true
fi

if want 5; then
echo
echo "== 5. DistAlgo's 10 x 100 mutual-exclusion workload, load $(load)"
if [ -n "${DISTALGO_PYTHON:-}" ] \
  || { command -v python3.7 >/dev/null && python3.7 -c 'import da' 2>/dev/null; } \
  || { command -v pyenv >/dev/null && PYENV_VERSION=3.7.16 python -c 'import da' 2>/dev/null; }; then
  if [ -n "$QUICK" ]; then scripts/bench-distalgo.sh 10 100 1; else scripts/bench-distalgo.sh; fi
else
  echo "skipped: DistAlgo not installed (it needs Python 3.7: python3.7 -m pip install pyDistAlgo==1.1.0b15)"
fi
fi
echo
echo "== goals (issue 38), each a ratio to its anchor measured in the same run, load $(load)"
python3 scripts/bench-goals.py "$LOGS"
echo
echo "== done, load $(load)"
