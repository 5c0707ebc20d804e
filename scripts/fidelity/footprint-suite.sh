#!/bin/bash
# The host's L1 footprint measurements (the host machine's l1_left_* and
# latency fields, crates/sim/src/machines/host.toml), as root:
#
#   gcc -O2 -o /tmp/footprint scripts/fidelity/footprint.c
#   REPS=9 scripts/fidelity/footprint-suite.sh > fp.txt
#   scripts/fidelity/footprint-summary.py fp.txt
#
# Each round runs every operation as its own process, interleaved, inside
# a memory cgroup two levels deep (cgroup v1 `memory` or v2), and removes
# the cgroup on exit.
set -euo pipefail
BIN=${BIN:-/tmp/footprint}
OPS=${OPS:-none spin:2500 pf1 pf2 pf3 send recv pf1x2 pf2x2 pf3x2 sendx2 recvx2 spin:5000}
if [ -d /sys/fs/cgroup/memory ]; then ROOT=/sys/fs/cgroup/memory; else ROOT=/sys/fs/cgroup; fi
CG=$ROOT/mmlab-footprint
cleanup() { echo $$ > "$ROOT/cgroup.procs" 2>/dev/null || true; rmdir "$CG/a" "$CG" 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$CG"
[ -f "$ROOT/cgroup.subtree_control" ] && echo +memory > "$CG/cgroup.subtree_control" 2>/dev/null || true
mkdir -p "$CG/a"
echo $$ > "$CG/a/cgroup.procs"
for r in $(seq "${REPS:-9}"); do
  for op in $OPS; do
    echo "rep=$r $("$BIN" "$op" "${TRIALS:-5000}") load=$(cut -d' ' -f1 /proc/loadavg)"
  done
done
