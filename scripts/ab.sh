#!/usr/bin/env bash
# Paired A/B timing of two whole commands: A and B run alternately N times
# (A B A B ...), each timed from start to exit by /usr/bin/time (wall, and
# user + system CPU of the command and the children it waited for). Prints
# each command's median and range, and the median of the pair-by-pair
# ratios A/B (pairing keeps the ratio meaningful when the machine's speed
# drifts during the run).
#
#   scripts/ab.sh [-n N] [-w WARMUP] 'COMMAND A' 'COMMAND B'
#
# The commands are run by sh -c, their output discarded.
set -euo pipefail
n=5 warm=1
while getopts n:w: o; do case $o in n) n=$OPTARG ;; w) warm=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
[ $# = 2 ] || { echo "usage: $0 [-n N] [-w WARMUP] 'COMMAND A' 'COMMAND B'" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
t=$(mktemp); trap 'rm -f "$t"' EXIT
one() { /usr/bin/time -o "$t" -f "%e %U %S" sh -c "$1" >/dev/null 2>&1 || true; awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$t"; }
for _ in $(seq "$warm"); do one "$1" >/dev/null; one "$2" >/dev/null; done
for i in $(seq "$n"); do echo "$i $(one "$1") $(one "$2")"; done | python3 -c '
import sys, statistics as st
rows = [list(map(float, l.split()[1:])) for l in sys.stdin if l.strip()]
aw, ac, bw, bc = zip(*rows)
def s(x): return f"median {st.median(x):.3f} [{min(x):.3f}, {max(x):.3f}]" if x else "n/a"
print(f"A wall {s(aw)} s, cpu {s(ac)} s")
print(f"B wall {s(bw)} s, cpu {s(bc)} s")
rw = [a / b for a, b in zip(aw, bw) if b > 0]; rc = [a / b for a, b in zip(ac, bc) if b > 0]
print(f"A/B wall {s(rw)}, cpu {s(rc)}  ({len(rows)} pairs)")
'
