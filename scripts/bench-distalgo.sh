#!/usr/bin/env bash
# DistAlgo's mutual-exclusion workload, 10 processes x 100 critical-section entries each (issue
# 15, target 5), run by distsync and, when DistAlgo is installed, by DistAlgo's own examples, in
# one run. Not part of the tests.
#
# distsync: `cluster up --nodes 10` (bully election) per algorithm, then 10 persistent lock
# clients (crates/net/examples/lockbench.rs `entries`), client i on node i, each entering lock
# "cs" 100 times, with `--handoff 0`: every entry goes through the algorithm, as in DistAlgo's
# examples (hand-offs would let a node pass the lock between entries without it). Three wall
# times: the entries alone; everything up to the last entry (cluster up, the view opening, the
# entries), which the ratio uses; and that plus `cluster down` (DistAlgo's time includes its
# processes stopping), given as a second ratio.
# DistAlgo: `python -m da EXAMPLE/orig.da 10 100` for lamutex (Lamport), ramutex
# (Ricart-Agrawala) and sktoken (Suzuki-Kasami), wall time of the whole command (it starts its 10
# processes, runs the entries and stops). DistAlgo 1.1.0b15 needs Python 3.7: the script uses
# $DISTALGO_PYTHON, else `python3.7`, else pyenv's 3.7 (PYENV_VERSION=3.7.16 python); install
# DistAlgo with `python3.7 -m pip install pyDistAlgo==1.1.0b15`. Without it, the script says so and
# runs only the distsync side.
#
# Usage: scripts/bench-distalgo.sh [PROCESSES, default 10] [ENTRIES, default 100] [REPS, default 3]
# ALGOS="ricart-agrawala lamport-mutex" runs only those (default: all three). DISTSYNC_BIN and
# LOCKBENCH_BIN (both) use those binaries instead of building (to compare two builds).
# Prints a markdown table of medians; the load average is printed beside each figure.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}
M=${2:-100}
REPS=${3:-3}
. scripts/bench-bins.sh
WORK=$(mktemp -d)
cleanup() {
  "$BIN" cluster down --dir "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
load() { cut -d' ' -f1 /proc/loadavg; }
now() { date +%s.%N; }
median() { python3 -c 'import statistics,sys; print("%.3f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }

PY=
if [ -n "${DISTALGO_PYTHON:-}" ]; then
  PY=$DISTALGO_PYTHON
elif command -v python3.7 >/dev/null && python3.7 -c 'import da' 2>/dev/null; then
  PY=python3.7
elif command -v pyenv >/dev/null && PYENV_VERSION=3.7.16 python -c 'import da' 2>/dev/null; then
  PY="env PYENV_VERSION=3.7.16 python"
fi
DA_EXAMPLES=
if [ -n "$PY" ]; then
  DA_EXAMPLES=$($PY -c 'import da, os; print(os.path.join(os.path.dirname(da.__file__), "examples"))')
else
  echo "DistAlgo not found (it needs Python 3.7: python3.7 -m pip install pyDistAlgo==1.1.0b15); running only the distsync side" >&2
fi

echo "$N processes x $M entries, $REPS repetitions (medians); load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| algorithm | distsync entries (s) | distsync with start-up (s) | with start-up and shutdown (s) | DistAlgo example | DistAlgo (s) | ratio (DistAlgo / distsync with start-up) | ratio with shutdown | load avg |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
ALGOS=${ALGOS:-ricart-agrawala lamport-mutex suzuki-kasami}
for pair in ricart-agrawala:ramutex lamport-mutex:lamutex suzuki-kasami:sktoken; do
  algo=${pair%%:*}
  ex=${pair##*:}
  case " $ALGOS " in *" $algo "*) ;; *) continue ;; esac
  lock_s=()
  total_s=()
  down_s=()
  da_s=()
  loads=()
  for _ in $(seq 1 "$REPS"); do
    loads+=("$(load)")
    rm -rf "$WORK/cluster"
    t0=$(now)
    "$BIN" cluster up --nodes "$N" --mutex "$algo" --election bully --dir "$WORK/cluster" \
      --heartbeat 100ms --heartbeat-timeout 1s --log warn --handoff 0 >/dev/null
    j=$("$BENCH" entries "$WORK/cluster/cluster.toml" "$N" "$M")
    t1=$(now)
    "$BIN" cluster down --dir "$WORK/cluster" >/dev/null
    t2=$(now)
    down_s+=("$(python3 -c "print($t2 - $t0)")")
    lock_s+=("$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["wall_s"])' "$j")")
    total_s+=("$(python3 -c "print($t1 - $t0)")")
    if [ -n "$DA_EXAMPLES" ]; then
      (cd "$WORK" && t0=$(now) && timeout 300 $PY -m da "$DA_EXAMPLES/$ex/orig.da" "$N" "$M" >/dev/null 2>&1 && t1=$(now) && python3 -c "print($t1 - $t0)" > "$WORK/da_time") || echo nan > "$WORK/da_time"
      da_s+=("$(cat "$WORK/da_time")")
    fi
  done
  l=$(median "${lock_s[@]}")
  t=$(median "${total_s[@]}")
  td=$(median "${down_s[@]}")
  ratio_of() { python3 -c "import sys; d, t = float(sys.argv[1]), float(sys.argv[2]); print('-' if d != d else '%.1fx' % (d / t))" "$1" "$2"; }
  if [ -n "$DA_EXAMPLES" ]; then
    d=$(median "${da_s[@]}")
    ratio=$(ratio_of "$d" "$t")
    ratio_down=$(ratio_of "$d" "$td")
  else
    d="not installed"
    ratio="-"
    ratio_down="-"
  fi
  lo=$(python3 -c 'import sys; x=[float(a) for a in sys.argv[1:]]; print("%.1f-%.1f" % (min(x), max(x)))' "${loads[@]}")
  echo "| $algo | $l | $t | $td | $ex/orig.da | $d | $ratio | $ratio_down | $lo |"
done
