#!/usr/bin/env python3
"""Issue 38's goals, read from the outputs scripts/bench-all.sh kept of its sections.

Usage: scripts/bench-goals.py DIR, where DIR holds what the sections printed: `1` (distsync
bench, whose last line sums up its own goals), `2` (benches/checker-vs-stateright) and
`3.jsonl` (scripts/bench-locks.sh's raw rows). A section that did not run is left out; a goal
whose figure is missing from its section's output is said to be not measured.
"""
import json
import os
import re
import statistics
import sys


def read(logs, name):
    path = os.path.join(logs, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read()


def verdict(name, ratio, at_least=None, at_most=None):
    if ratio is None:
        return f"{name}: not measured"
    met = ratio >= at_least if at_least is not None else ratio <= at_most
    bound = f">= {at_least}" if at_least is not None else f"<= {at_most}"
    return f"{name}: {ratio:.3f} (goal {bound}) {'met' if met else 'NOT MET'}"


def lock_ratio(rows, algo):
    """Median ops/s of `algo` with one client and no hand-off, over Redis's paired with it."""

    def median(system, key):
        xs = [
            r["result"]["throughput_per_s"]
            for r in rows
            if r.get(key) == algo
            and r.get("clients") == 1
            and r.get("handoff", 0) == 0
            and r["system"] == system
            and not r["result"].get("failed")
        ]
        return statistics.median(xs) if xs else None

    ours, redis = median(algo, "system"), median("redis", "pair")
    return ours / redis if ours and redis else None


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: bench-goals.py DIR (the folder of the sections' outputs)")
    logs = sys.argv[1]
    lines = []
    one = read(logs, "1")
    if one is not None:
        lines += ["distsync bench " + l for l in one.splitlines() if l.startswith("goals:")]
    two = read(logs, "2")
    if two is not None:
        # States per CPU second on one thread (issue 38's measure; the wall clock of a loaded
        # machine is mostly waiting for a core), and what a second thread adds.
        for name, pattern, bound in (
            (
                "checker, 1 thread, distsync / stateright by CPU seconds",
                r"stateright CPU s / distsync CPU s, 1 thread[^:]*: ([0-9.]+)x",
                5,
            ),
            (
                "checker, a second core, distsync 2 threads / 1 thread",
                r"speed-up from 1 to \d+ threads: distsync ([0-9.]+)x",
                1.7,
            ),
        ):
            m = re.search(pattern, two)
            lines.append(verdict(name, m and float(m.group(1)), at_least=bound))
    three = read(logs, "3.jsonl")
    if three is not None:
        rows = [json.loads(l) for l in three.splitlines() if l.strip()]
        for algo, bound in (("central", 1.0), ("ricart-agrawala", 0.5)):
            lines.append(
                verdict(f"lock service, 1 client, {algo} / Redis", lock_ratio(rows, algo), at_least=bound)
            )
    print("\n".join(lines) if lines else "no section with a goal ran")


if __name__ == "__main__":
    main()
