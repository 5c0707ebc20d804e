#!/usr/bin/env bash
# Weakens each memory ordering (and barrier) the engine's update/flush
# handshake keeps, one at a time, and runs the loom models (the integration
# models and the crate's unit tests built for loom): every mutant
# must be caught by at least one model, or the ordering is not needed (and
# its comment overstates it). Not part of CI (about a minute per mutant);
# run it after touching an ordering:
#
#     scripts/loom-mutants.sh            # in a scratch copy of the tree
#     ONLY="fold skip|claim" scripts/loom-mutants.sh   # the mutants whose name has one of these
#
# A mutant that makes a model spin forever (a drain following a stale list
# link, say) is reported as caught by a hang after MUTANT_TIMEOUT seconds
# (default 900).
# It works on a copy (in $MUTANTS_DIR, default $TMPDIR/hierstat-mutants: give
# each concurrent run its own), so the checkout is never left mutated.
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
work="${MUTANTS_DIR:-${TMPDIR:-/tmp}/hierstat-mutants}"
mkdir -p "$work"
rm -rf "$work/tree" && mkdir -p "$work/tree"
tar -C "$src" --exclude=./target --exclude=./.git -cf - . | tar -C "$work/tree" -xf -
# tar keeps the checkout's (older) mtimes, and cargo rebuilds only what
# looks newer than its last build: without this, a new invocation's
# baseline could run the binary of the previous invocation's last mutant.
find "$work/tree/crates" -name '*.rs' -exec touch {} +
export CARGO_TARGET_DIR="$work/target"
cd "$work/tree/crates/hierstat" || exit 1
run_loom() {
    LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" timeout "${MUTANT_TIMEOUT:-900}" \
        cargo test -p hierstat --lib --test loom --release --no-fail-fast 2>&1
}
caught_all=1
# ONLY="a|b": only the mutants whose name contains a or b.
selected() {
    [ -z "${ONLY:-}" ] && return 0
    local IFS='|' p
    for p in $ONLY; do
        case "$1" in *"$p"*) return 0 ;; esac
    done
    return 1
}
mutant() {
    local name="$1" file="$2" from="$3" to="$4"
    selected "$name" || return
    cp "$file" "$work/backup"
    if ! python3 - "$file" "$from" "$to" <<'PY'
import sys
p, a, b = sys.argv[1:4]
s = open(p).read()
if s.count(a) != 1:
    sys.exit(f"{p}: {s.count(a)} matches for {a!r}")
open(p, "w").write(s.replace(a, b))
PY
    then
        echo "PATTERN ERROR  $name"; caught_all=0; return
    fi
    local out failed rc
    out=$(run_loom); rc=$?
    cp "$work/backup" "$file"
    if [ "$rc" = 124 ]; then
        echo "caught (hang)  $name  <- the models did not finish in ${MUTANT_TIMEOUT:-900} s"
        return
    fi
    failed=$(echo "$out" | grep -E "^test .* FAILED" | sed 's/^test //; s/ \.\.\. FAILED//' | tr '\n' ' ')
    # A model that fails inside a spawned loom thread aborts the process.
    aborted=$(echo "$out" | sed -n "s/^thread '\([^']*\)'.* panicked.*/\1/p" | sort -u | tr '\n' ' ')
    if [ -n "$failed" ]; then
        echo "caught         $name  <- $failed"
    elif [ "$rc" != 0 ] && [ -n "$aborted" ]; then
        echo "caught (abort) $name  <- $aborted"
    else
        echo "NOT CAUGHT     $name"; caught_all=0
    fi
}
out=$(run_loom); echo "$out" | grep -q "test result: ok" || { echo "baseline fails:"; echo "$out" | tail -20; exit 1; }
echo "baseline passes"
mutant "shared path: header residue add AcqRel -> Relaxed" src/header.rs "let old = self.0.fetch_add(small, Ordering::AcqRel);" "let old = self.0.fetch_add(small, Ordering::Relaxed);"
mutant "shared path: header residue add AcqRel -> Release" src/header.rs "let old = self.0.fetch_add(small, Ordering::AcqRel);" "let old = self.0.fetch_add(small, Ordering::Release);"
mutant "claim: fetch_or AcqRel -> Relaxed" src/header.rs "let old = self.0.fetch_or(QUEUED | w.bit(), Ordering::AcqRel);" "let old = self.0.fetch_or(QUEUED | w.bit(), Ordering::Relaxed);"
mutant "claim: fetch_or AcqRel -> Release" src/header.rs "let old = self.0.fetch_or(QUEUED | w.bit(), Ordering::AcqRel);" "let old = self.0.fetch_or(QUEUED | w.bit(), Ordering::Release);"
mutant "owner path: light barrier removed" src/update.rs "        #[cfg(any(loom, miri))]
        crate::sync::fence_seqcst();" ""
mutant "flusher: fence and heavy barrier before reading removed" src/flush.rs "            self.writers.barrier_before_reading(s, work);" ""
mutant "claims: end_claim Release -> Relaxed" src/dirty.rs "self.claiming[t.0].fetch_sub(1, Ordering::Release);" "self.claiming[t.0].fetch_sub(1, Ordering::Relaxed);"
mutant "claims: wait load Acquire -> Relaxed" src/dirty.rs "self.claiming[p].load(Ordering::Acquire) == 0" "self.claiming[p].load(Ordering::Relaxed) == 0"
mutant "claims: wait fast path reads one parity" src/dirty.rs "if self.no_claims(0) && self.no_claims(1) && self.no_claims(0) {" "if self.no_claims(0) {"
mutant "claims: wait fast path without its second look at parity 0" src/dirty.rs "if self.no_claims(0) && self.no_claims(1) && self.no_claims(0) {" "if self.no_claims(0) && self.no_claims(1) {"
mutant "claims: two grace waits, not three" src/dirty.rs "        for _ in 0..3 {" "        for _ in 0..2 {"
mutant "list: push CAS Release -> Relaxed" src/dirty.rs ".compare_exchange_weak(head, me, Ordering::Release, Ordering::Relaxed)" ".compare_exchange_weak(head, me, Ordering::Relaxed, Ordering::Relaxed)"
mutant "list: take_all swap Acquire -> Relaxed" src/dirty.rs "self.head.swap(0, Ordering::Acquire)" "self.head.swap(0, Ordering::Relaxed)"
mutant "fold skip: no look at the flush count" src/update.rs "let may_skip = owner && !self.flushes.running_for_skip();" "let may_skip = owner;"
mutant "fold skip: flush count load Acquire -> Relaxed" src/flush/state.rs "self.running.0.load(Ordering::Acquire) != 0" "self.running.0.load(Ordering::Relaxed) != 0"
mutant "fold skip: flush exit Release -> Relaxed" src/flush/state.rs "self.0.fetch_sub(1, Ordering::Release);" "self.0.fetch_sub(1, Ordering::Relaxed);"
mutant "fold skip: owner's fence after its push removed" src/update.rs "        // \`FlushingGuard\`).
        crate::sync::fence_seqcst();" "        // \`FlushingGuard\`)."
# The bound at every instant (see flush.rs, "What a flush hands over").
mutant "read: the value before the bound" src/read.rs "        let bound = self.error_bound(g).map(|p| unit.from_pages(p));
        // ORDERING: Acquire; pairs with a flush's Release pin of a
        // saturated aggregate, so that a pinned value comes with its flag
        // (read next).
        let signed = g.agg[slot.get()].load(Ordering::Acquire);" "        let signed = g.agg[slot.get()].load(Ordering::Acquire);
        let bound = self.error_bound(g).map(|p| unit.from_pages(p));"
mutant "bound: count load Acquire -> Relaxed" src/count.rs "CountValue(self.0.load(Ordering::Acquire))" "CountValue(self.0.load(Ordering::Relaxed))"
mutant "hand-over: count reset Release -> Relaxed" src/count.rs ".fetch_update(Ordering::Release, Ordering::Relaxed, |v| {
                Some(((v & COUNT_MASK)" ".fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(((v & COUNT_MASK)"
mutant "bound: in-flight load Acquire -> Relaxed" src/read.rs "let in_flight = n.in_flight.load(Ordering::Acquire);" "let in_flight = n.in_flight.load(Ordering::Relaxed);"
mutant "hand-over: in-flight release Release -> Relaxed" src/flush.rs "n.in_flight.fetch_sub(t.in_flight, Ordering::Release);" "n.in_flight.fetch_sub(t.in_flight, Ordering::Relaxed);"
mutant "kernel-exact: in-flight not counted" src/flush.rs "st.group(id).in_flight.fetch_add(r, Ordering::Relaxed);" ""
mutant "global: in-flight not counted" src/count.rs "self.in_flight.fetch_add(pages, Ordering::Relaxed);" ""
mutant "residue take: Release -> Relaxed" src/header.rs ".fetch_update(Ordering::Release, Ordering::Relaxed, |h| {" ".fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| {"
mutant "kernel-exact: residue taken after the drain" src/flush.rs "let take_first = self.params.walks_ancestors;" "let take_first = false;"
mutant "kernel-exact: acquire fence after the take removed" src/flush.rs "crate::sync::fence_acquire();" ""
mutant "ancestor walk: residue RMW AcqRel -> Release" src/header.rs "self.0.fetch_add(small, Ordering::AcqRel) & RESIDUE_MASK" "self.0.fetch_add(small, Ordering::Release) & RESIDUE_MASK"
mutant "ancestor walk: residue RMW AcqRel -> Acquire" src/header.rs "self.0.fetch_add(small, Ordering::AcqRel) & RESIDUE_MASK" "self.0.fetch_add(small, Ordering::Acquire) & RESIDUE_MASK"
mutant "fold: residue take Acquire -> Relaxed" src/header.rs "self.0.fetch_and(!RESIDUE_MASK, Ordering::Acquire) & RESIDUE_MASK" "self.0.fetch_and(!RESIDUE_MASK, Ordering::Relaxed) & RESIDUE_MASK"
mutant "flusher: fence after the snapshots removed (counted claims, fold skip, early break)" src/flush.rs "            // before its drains, for owners that skip a fold (see
            // \`FlushingGuard\`).
            crate::sync::fence_seqcst();" "            // before its drains, for owners that skip a fold (see
            // \`FlushingGuard\`)."
mutant "early break: no flag at a reset from above the level" src/count.rs "            if snap > level || v & COUNT_MASK > level {" "            if false {"
mutant "per-pass gate: overlapping flushes each subtract their snapshot" src/flush.rs "if t.snapshot.is_none() && (!self.held || t.group.hold_snapshot()) {" "if t.snapshot.is_none() {"
mutant "per-pass gate: overlapping root flushes each subtract the global snapshot" src/flush.rs "            && (!per_pass || self.global.hold_snapshot())" "            && true"
# A fold or reservation a flush's snapshot counts must come from a row its
# drains find (issue #32: the Some(0) of a root flush after a subtree flush).
mutant "fold: count add Release -> Relaxed" src/count.rs "self.0.fetch_add(m.min(MAX_FOLD), Ordering::Release);" "self.0.fetch_add(m.min(MAX_FOLD), Ordering::Relaxed);"
mutant "claim: reservation add Release -> Relaxed" src/update.rs ".fetch_add(self.params.batch - 1, Ordering::Release);" ".fetch_add(self.params.batch - 1, Ordering::Relaxed);"
mutant "shared claim: reservation after the claim RMW" src/update.rs "        if folded && w == Writer::Shared {
            self.reserve(g, work);
        }
        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve && w == Writer::Owner {" "        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve {"
mutant "global: root flush snapshot Acquire -> Relaxed" src/count.rs "        self.0.load(Ordering::Acquire) & COUNT_MASK" "        self.0.load(Ordering::Relaxed) & COUNT_MASK"
mutant "saturation: pin Release -> Relaxed" src/flush.rs "    n.agg[k].store(dir.limit(), Ordering::Release);" "    n.agg[k].store(dir.limit(), Ordering::Relaxed);"
mutant "saturation: read's aggregate load Acquire -> Relaxed" src/read.rs "let signed = g.agg[slot.get()].load(Ordering::Acquire);" "let signed = g.agg[slot.get()].load(Ordering::Relaxed);"
# Rows on first touch (see table.rs): a row's address and index are
# published by the entry's Release store and read after its Acquire load.
mutant "row table: entry load Acquire -> Relaxed" src/table.rs "NonNull::new(e.load(Ordering::Acquire)).map(|p| unsafe { RowAddr::from_ptr(p) })" "NonNull::new(e.load(Ordering::Relaxed)).map(|p| unsafe { RowAddr::from_ptr(p) })"
mutant "row table: entry store Release -> Relaxed" src/table.rs "slot.row.store(a.as_ptr(), Ordering::Release);" "slot.row.store(a.as_ptr(), Ordering::Relaxed);"
# The per-CPU mode (issue #36; tests/loom.rs, `percpu`): its claim check,
# its claims' reservation order and fences, the flushers' rseq membarrier,
# and the modelled sections' own rule (a store only if nothing committed on
# the CPU since the section armed; arming after a commit reads its writes).
mutant "percpu: claim check Acquire -> Relaxed" src/header.rs "self.0.load(Ordering::Acquire) & OWNER_RES != 0" "self.0.load(Ordering::Relaxed) & OWNER_RES != 0"
mutant "percpu: flushers' rseq membarrier removed" src/update/writers.rs "                Some(r) => r.membarrier()," "                Some(_) => {}"
mutant "percpu: claim reserves after its bit (the owner's order)" src/update.rs "        if folded && w == Writer::PerCpu {
            self.reserve(g, work);
        }
        if folded && w == Writer::Shared {
            self.reserve(g, work);
        }
        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve && w == Writer::Owner {" "        if folded && w == Writer::Shared {
            self.reserve(g, work);
        }
        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve && w != Writer::Shared {"
mutant "percpu: claim's fence after announcing the CPU removed" src/update.rs "        self.writers.announce_owner(cpu);
        crate::sync::fence_seqcst();" "        self.writers.announce_owner(cpu);"
mutant "percpu: claim's fence after the push removed" src/update.rs "        self.claim(cpu, g, hdr, Writer::PerCpu, work);
        // As the owner's: before this update's fold reads the flush count.
        crate::sync::fence_seqcst();" "        self.claim(cpu, g, hdr, Writer::PerCpu, work);"
mutant "percpu model: a section's store without the restart check" src/rseq.rs "            if c.gen.load(Ordering::Relaxed) != gen {
                return false;
            }" ""
mutant "percpu model: arming load Acquire -> Relaxed" src/rseq.rs "                let gen = self.cpus[cpu].gen.load(Ordering::Acquire);
                if cpu >= table.len {" "                let gen = self.cpus[cpu].gen.load(Ordering::Relaxed);
                if cpu >= table.len {"
[ "$caught_all" = 1 ] && echo "every mutant caught" || { echo "some mutants survived"; exit 1; }
