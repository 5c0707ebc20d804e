//! A host finding as a reproducer a kernel developer can run without
//! mmlab: a POSIX shell script over cgroupfs that creates its groups, shows
//! the effect, and removes everything it made on every exit path, the way
//! regressions are reported upstream (`mmlab run stale-read-kernel
//! --reproducer FILE`). Every exit a shell can trap cleans up: a normal
//! exit, and every signal whose default action ends the process ([`SIGNALS`]:
//! Ctrl-C, a closed terminal, a closed pipe as in `sh stale.sh | head -1`,
//! `kill`), after which the script ends by that same signal. Only
//! `SIGKILL` (and a signal ignored when the script started, which a shell
//! cannot trap) leaves the groups behind.
//!
//! The stale read ([`stale_read_script`]): a parent with one child; a
//! reader loops on the parent's `memory.stat` while a shell in the child
//! writes a tmpfs file; right after, the parent's `memory.stat` misses the
//! whole charge (its pending count is stuck at the threshold behind the
//! early break of `memcg_rstat_updated`), while the child's shows it; the
//! script then re-reads the parent until the periodic flush (every 2 s)
//! brings it up to date, and prints how long that took.

use crate::spec::{Experiment, KernelScenario};

/// The reproducer of a kernel scenario, when its experiment has one (the
/// stale read).
pub fn script(sc: &KernelScenario) -> Option<String> {
    match &sc.experiment {
        Experiment::StaleRead(cfg) => {
            let mib = cfg
                .spikes_kib
                .iter()
                .copied()
                .max()
                .map_or(16, |k| (k / 1024).clamp(1, 1024));
            Some(stale_read_script(mib, cfg.repetitions.clamp(1, 20)))
        }
        _ => None,
    }
}

/// The stale-read reproducer: a charge of `mib` MiB, up to `tries` times
/// until the parent misses it.
pub fn stale_read_script(mib: u64, tries: usize) -> String {
    STALE_READ
        .replace("@MIB@", &mib.to_string())
        .replace("@TRIES@", &tries.to_string())
        .replace("@SIGNALS@", SIGNALS)
}

/// The signals the script traps: every signal POSIX names whose default
/// action ends the process (all but `KILL` and `STOP`, which cannot be
/// caught). A trapped signal removes what the script made, then ends the
/// script by the same signal, so its parent sees how it ended.
pub const SIGNALS: &str =
    "HUP INT QUIT ILL TRAP ABRT BUS FPE USR1 SEGV USR2 PIPE ALRM TERM XCPU XFSZ VTALRM PROF SYS";

const STALE_READ: &str = r#"#!/bin/sh
# memcg: a parent's memory.stat misses a child's charge until the periodic
# flush (2 s), written by `mmlab run stale-read-kernel --reproducer`.
#
# A reader loops on the parent's memory.stat while a shell in the child
# writes @MIB@ MiB to tmpfs. Each read that finds the parent over the flush
# threshold (64 pages x online CPUs) flushes the parent's subtree, visiting
# the child, then the parent, and zeroing each one's pending count; a charge
# between the two visits leaves the child's count ahead of its parent's.
# Once the child is over the threshold, the early break in
# memcg_rstat_updated() ("if this level needs a flush, its ancestors do")
# stops every update at the child: the parent's count stays at or below the
# threshold (exactly at it in the memcg:memcg_flush_stats tracepoint), so no
# read of the parent flushes it until the periodic flush.
#
# Needs root and the memory controller (cgroup v1 or v2) and a tmpfs at
# /dev/shm. Everything it creates is removed on every exit a shell can
# trap: a normal exit, Ctrl-C, a closed terminal or pipe (sh FILE | head),
# kill; it then ends by the signal it got. Only kill -KILL leaves them.
# Exit status: 0 if the parent missed the charge (the effect), 1 if not.
set -u

if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	V=2 ROOT=/sys/fs/cgroup
	grep -qw memory "$ROOT/cgroup.controllers" || { echo "no memory controller on cgroup v2" >&2; exit 2; }
	KEYS="anon file"
else
	V=1 ROOT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
	[ -n "$ROOT" ] || { echo "no memory controller mounted" >&2; exit 2; }
	KEYS="total_rss total_cache"
fi
[ -d /dev/shm ] || { echo "no tmpfs at /dev/shm" >&2; exit 2; }

P=$ROOT/memcg-stale-read-$$
C=$P/child
F=/dev/shm/memcg-stale-read-$$
RD=

cleanup() {
	[ -n "$RD" ] && kill "$RD" 2>/dev/null && wait "$RD" 2>/dev/null
	rm -f "$F"
	[ -d "$C" ] && rmdir "$C"
	[ -d "$P" ] && rmdir "$P"
}
# Every signal that would end the script: ignore the others while cleaning
# up, then end by the same signal (its default action restored).
SIGNALS="@SIGNALS@"
on_signal() {
	trap '' $SIGNALS
	cleanup
	trap - EXIT $SIGNALS
	kill -s "$1" $$
	exit 1
}
trap cleanup EXIT
for s in $SIGNALS; do
	trap "on_signal $s" "$s"
done

mkdir "$P" || exit 2
if [ "$V" = 2 ]; then
	echo +memory > "$P/cgroup.subtree_control" || exit 2
fi
mkdir "$C" || exit 2

PAGE=$(getconf PAGESIZE)
CPUS=$(getconf _NPROCESSORS_ONLN)
T=$((64 * CPUS))
PAGES=$((@MIB@ * 1024 * 1024 / PAGE))

# The sum of $KEYS in a memory.stat, in pages.
pages() {
	awk -v keys="$KEYS" -v page="$PAGE" '
		BEGIN { n = split(keys, k, " "); for (i = 1; i <= n; i++) want[k[i]] = 1 }
		$1 in want { s += $2 }
		END { printf "%d\n", s / page }' "$1/memory.stat"
}

nap() { sleep 0.05 2>/dev/null || sleep 1; }
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

echo "cgroup v$V, $CPUS CPUs, page $PAGE B: threshold T = 64 x $CPUS = $T pages; charge $PAGES pages"
try=1
while [ "$try" -le @TRIES@ ]; do
	p0=$(pages "$P")
	c0=$(pages "$C")
	( while :; do cat "$P/memory.stat" > /dev/null; done ) &
	RD=$!
	sh -c "echo \$\$ > '$C/cgroup.procs' && exec dd if=/dev/zero of='$F' bs=1M count=@MIB@ 2>/dev/null"
	kill "$RD"; wait "$RD" 2>/dev/null; RD=
	t0=$(now_ms)
	p1=$(pages "$P")
	lag=$((PAGES - (p1 - p0)))
	echo "try $try: the parent shows $((p1 - p0)) of $PAGES pages (lag $lag pages)"
	if [ "$lag" -gt "$T" ]; then
		waited=0
		while [ "$waited" -lt 5000 ]; do
			nap
			p=$(pages "$P")
			waited=$(($(now_ms) - t0))
			[ $((PAGES - (p - p0))) -le "$T" ] && break
		done
		c1=$(pages "$C")
		echo "  the child's own memory.stat showed $((c1 - c0)) pages; the parent caught up after ~$waited ms"
		echo "STALE: the parent's memory.stat missed $lag pages (> T = $T) for ~$waited ms"
		exit 0
	fi
	rm -f "$F"
	try=$((try + 1))
done
echo "not reproduced in @TRIES@ tries (kernels without the early break, before 6.16, should not show it)"
exit 1
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_filled_in_and_cleans_up() {
        let s = stale_read_script(16, 5);
        assert!(s.starts_with("#!/bin/sh\n"));
        assert!(!s.contains('@'), "every placeholder filled");
        assert!(s.contains("count=16") && s.contains("-le 5 ]"));
        assert!(s.contains("trap cleanup EXIT") && s.contains("rmdir \"$P\""));
        for sig in ["HUP", "INT", "QUIT", "PIPE", "TERM"] {
            assert!(SIGNALS.split(' ').any(|x| x == sig), "{sig}");
        }
        // POSIX sh: no bashisms.
        for b in ["[[", "function ", "$((RANDOM", "local ", "pushd"] {
            assert!(!s.contains(b), "{b}");
        }
    }
}
