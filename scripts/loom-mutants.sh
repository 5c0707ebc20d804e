#!/usr/bin/env bash
# Weakens each memory ordering (and barrier) of hierstat's engine, one at a
# time, and runs the loom models (the integration models and the crate's
# unit tests built for loom): every mutant must be caught by at least one
# model, or the ordering is not needed (and its comment overstates it).
# Every non-Relaxed ordering and fence of `crates/hierstat/src` has a mutant
# here, or an `unmutated` line saying why no model can fail it:
# `scripts/orderings.py` lists the sites and measures that coverage.
#
#     scripts/loom-mutants.sh                        # every mutant (about 70 CPU seconds each)
#     ONLY="fold skip|claim" scripts/loom-mutants.sh # the mutants whose name has one of these
#     ROTATE=3 scripts/loom-mutants.sh               # CI: 3 mutants, a different 3 each day
#     LIST=1 scripts/loom-mutants.sh                 # the table, NUL-separated (for orderings.py)
#     DRY=1 ROTATE=3 scripts/loom-mutants.sh         # the names it would run, and no run
#
# ROTATE=N splits the mutants (after ONLY) into K = ceil(M / N) slots by
# their index modulo K and runs slot (ROTATE_SEED mod K), where ROTATE_SEED
# defaults to the UTC day number: run daily (CI), every mutant is run once
# every K days. ROTATE skips the unmutated baseline (CI has just run the
# same models on the same tree) unless BASELINE=1.
#
# Whatever the mode, every mutant's and every `unmutated` line's pattern is
# checked against the tree first: one that does not match exactly once is
# a PATTERN ERROR and fails the run, so the list cannot rot silently.
#
# A mutant that makes a model spin forever (a drain following a stale list
# link, say) is reported as caught by a hang after MUTANT_TIMEOUT seconds
# (default 900; 300 under ROTATE).
# It works on a copy (in $MUTANTS_DIR, default $TMPDIR/hierstat-mutants: give
# each concurrent run its own), so the checkout is never left mutated; the
# copy builds in $MUTANTS_DIR/target, kept between runs, or in
# $MUTANTS_TARGET_DIR (CI: scripts/test.sh's loom build folder, whose
# dependencies it reuses).
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"

kinds=() names=() files=() froms=() tos=() cpu=0
# mutant NAME FILE FROM TO: replace FROM (exactly one match in FILE, a path
# under crates/hierstat) by TO.
mutant() { kinds+=(mutant); names+=("$1"); files+=("$2"); froms+=("$3"); tos+=("$4"); }
# unmutated FILE PATTERN REASON: the orderings inside PATTERN have no mutant,
# because no model can fail one (REASON says why).
unmutated() { kinds+=(unmutated); names+=(""); files+=("$1"); froms+=("$2"); tos+=("$3"); }
# survives NAME NOTE: mutant NAME is known to survive every model (a
# finding, still open: strengthen a model until it is caught, or replace
# the mutant by an `unmutated` reason). Its run reports SURVIVES and
# does not fail; a catch of it says to remove this line.
declare -A survivors=()
survives() { survivors["$1"]="$2"; }

all_mutants() {
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
mutant "flusher: fence after the snapshots removed (counted claims, fold skip, early break)" src/flush.rs "            // groups' snapshots counted (see \`Handover::reset_opened\`).
            crate::sync::fence_seqcst();" "            // groups' snapshots counted (see \`Handover::reset_opened\`)."
mutant "early break: no flag at a reset from above the level" src/count.rs "            if snap > level || v & COUNT_MASK > level {" "            if false {"
mutant "per-pass gate: overlapping flushes each subtract their snapshot" src/flush.rs "if t.snapshot.is_none() && (!self.held || t.group.hold_snapshot()) {" "if t.snapshot.is_none() {"
mutant "per-pass gate: overlapping root flushes each subtract the global snapshot" src/flush.rs "            && (!per_pass || self.global.hold_snapshot())" "            && true"
# A fold or reservation a flush's snapshot counts must come from a row its
# drains find (issue #32: the Some(0) of a root flush after a subtree flush).
mutant "fold: count add Release -> Relaxed" src/count.rs "self.0.fetch_add(m.min(MAX_FOLD), Ordering::Release);" "self.0.fetch_add(m.min(MAX_FOLD), Ordering::Relaxed);"
mutant "claim: reservation add Release -> Relaxed" src/update.rs ".fetch_add(self.params.batch - 1, Ordering::Release);" ".fetch_add(self.params.batch - 1, Ordering::Relaxed);"
# The claim's order (src/update.rs, `Core::claim`): a shared or per-CPU
# writer reserves before its claim RMW, the owner after it.
reserve_shared="        if folded && w == Writer::Shared {
            self.reserve(g, work);
        }
"
reserve_percpu="${reserve_shared/Shared/PerCpu}"
claim_push="        let c = hdr.claim(w);
        work.count(Work::Atomic, 3);
        if c.push {
            list.push(g.hot.id, hdr, work);
        }
        if folded && c.reserve"
mutant "shared claim: reservation after the claim RMW" src/update.rs "$reserve_shared$claim_push && w == Writer::Owner {" "$claim_push {"
mutant "global: root flush snapshot Acquire -> Relaxed" src/count.rs "        self.0.load(Ordering::Acquire) & COUNT_MASK" "        self.0.load(Ordering::Relaxed) & COUNT_MASK"
mutant "saturation: pin Release -> Relaxed" src/flush.rs "    n.agg[k].store(dir.limit(), Ordering::Release);" "    n.agg[k].store(dir.limit(), Ordering::Relaxed);"
mutant "saturation: read's aggregate load Acquire -> Relaxed" src/read.rs "let signed = g.agg[slot.get()].load(Ordering::Acquire);" "let signed = g.agg[slot.get()].load(Ordering::Relaxed);"
# Rows on first touch (see table.rs): a row's address and index are
# published by the entry's Release store and read after its Acquire load.
mutant "row table: entry load Acquire -> Relaxed" src/table.rs "NonNull::new(e.load(Ordering::Acquire)).map(|p| unsafe { RowAddr::from_ptr(p) })" "NonNull::new(e.load(Ordering::Relaxed)).map(|p| unsafe { RowAddr::from_ptr(p) })"
mutant "row table: entry store Release -> Relaxed" src/table.rs "slot.row.store(a.as_ptr(), Ordering::Release);" "slot.row.store(a.as_ptr(), Ordering::Relaxed);"
# Issue #34: the remaining orderings.
mutant "global snapshot hold: swap Acquire -> Relaxed" src/count.rs "!self.held.swap(true, Ordering::Acquire)" "!self.held.swap(true, Ordering::Relaxed)"
mutant "global snapshot release: Release -> Relaxed" src/count.rs "self.held.store(false, Ordering::Release);" "self.held.store(false, Ordering::Relaxed);"
mutant "global bound: in-flight load Acquire -> Relaxed" src/count.rs "self.in_flight.load(Ordering::Acquire)" "self.in_flight.load(Ordering::Relaxed)"
mutant "global hand-over: in-flight release Release -> Relaxed" src/count.rs "self.in_flight.fetch_sub(landed, Ordering::Release);" "self.in_flight.fetch_sub(landed, Ordering::Relaxed);"
mutant "hand-over: reservation reset Release -> Relaxed" src/flush.rs ".reserved
                        .fetch_update(Ordering::Release, Ordering::Relaxed, |v| {" ".reserved
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {"
mutant "bound: reservation load Acquire -> Relaxed" src/read.rs "let reserved = n.reserved.load(Ordering::Acquire);" "let reserved = n.reserved.load(Ordering::Relaxed);"
mutant "snapshot hold: fetch_or Acquire -> Relaxed" src/state.rs "self.flags.fetch_or(Flags::SNAPSHOT_HELD, Ordering::Acquire)" "self.flags.fetch_or(Flags::SNAPSHOT_HELD, Ordering::Relaxed)"
mutant "snapshot release: Release -> Relaxed" src/state.rs ".fetch_and(!Flags::SNAPSHOT_HELD, Ordering::Release);" ".fetch_and(!Flags::SNAPSHOT_HELD, Ordering::Relaxed);"
mutant "flusher: pass fence before reading removed (heavy barrier kept)" src/update/writers.rs "        crate::sync::fence_seqcst();
        // ORDERING: Relaxed, after the \`SeqCst\` fence" "        // ORDERING: Relaxed, after the \`SeqCst\` fence"
# Orderings that no loom model can fail, each with the reason.
unmutated src/state.rs "self.flags.load(Ordering::Acquire) & f != 0" "its Relaxed mutant survived every model (issue #34's run): the one flag set with Release, SATURATED, is set under the saturation table's lock, and a reader that sees it reads the table under that lock, which coherence then orders after the setter's (the table entry is published by the lock)"
unmutated src/state.rs "self.flags.fetch_or(f, Ordering::Release);" "as GroupState::flag's Acquire: the saturation table's lock publishes the entry (the Relaxed mutant survived every model)"
unmutated src/update.rs "        self.writers.announce_owner(s);
        crate::sync::fence_seqcst();" "its removal survived every model (issue #34's run): under loom every owner update issues the heavy barrier's model, a SeqCst fence, before its claim check, and the flusher's heavy barrier is a SeqCst fence after its pass fence, so the owner flag this fence orders decides nothing a model sees (std builds: the flag decides whether the flusher issues membarrier)"
unmutated src/update/writers.rs "                None => self.barriers.heavy()," "under loom (and Miri) the heavy barrier is a SeqCst fence, right after the pass's own SeqCst fence: removed alone it changes nothing a model can see; the mutant that removes both ('flusher: fence and heavy barrier before reading removed') checks the flusher's side, and the std build's membarrier runs in the real-thread owner tests"
unmutated src/rows.rs "word.store(addr, Ordering::Release);" "std builds only: under loom a chunk's sections and their head words are set with the chunk (rows.rs, Chunk::new), published by the row table's Release store, and read as immutable (sync::load_published)"
unmutated src/sync.rs "    #[cfg(not(loom))]
    word.load(Ordering::Acquire)" "std builds only: under loom the head word is read as immutable (see the publish store in rows.rs)"
unmutated src/update.rs "crate::sync::std_only::compiler_fence(Ordering::SeqCst);" "std builds only: the updater's half of the asymmetric barrier; loom and Miri model it as the SeqCst fence that follows (mutant 'owner path: light barrier removed')"
unmutated src/flush/state.rs "self.requested.store(true, Ordering::Release);" "the background flusher is a real thread, not built under loom (flusher.rs); the pair orders a requester's updates before the flush it requests"
unmutated src/flush/state.rs "self.requested.load(Ordering::Acquire)" "the background flusher is a real thread, not built under loom (see AsyncRequests::request)"
unmutated src/flush/state.rs "self.requested.swap(false, Ordering::Acquire)" "the background flusher is a real thread, not built under loom (see AsyncRequests::request)"
unmutated src/flusher.rs "let stopped = || sh.stop.load(Ordering::Acquire);" "the background flusher is a real thread, not built under loom; the stop flag carries nothing (shutdown joins the thread)"
unmutated src/flusher.rs "self.shared.stop.store(true, Ordering::Release);" "the background flusher is a real thread, not built under loom; the stop flag carries nothing (shutdown joins the thread)"
# The per-CPU mode (issue #36; tests/loom.rs, `percpu`): its claim check,
# its claims' reservation order and fences, the flushers' rseq membarrier,
# and the modelled sections' own rule (a store only if nothing committed on
# the CPU since the section armed; arming after a commit reads its writes).
mutant "percpu: claim check Acquire -> Relaxed" src/header.rs "self.0.load(Ordering::Acquire) & OWNER_RES != 0" "self.0.load(Ordering::Relaxed) & OWNER_RES != 0"
mutant "percpu: flushers' rseq membarrier removed" src/update/writers.rs "                Some(r) => r.membarrier()," "                Some(_) => {}"
mutant "percpu: claim reserves after its bit (the owner's order)" src/update.rs "$reserve_percpu$reserve_shared$claim_push && w == Writer::Owner {" "$reserve_shared$claim_push && w != Writer::Shared {"
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
mutant "percpu model: commit Release -> Relaxed" src/rseq.rs "c.gen.store(gen + 1, Ordering::Release);" "c.gen.store(gen + 1, Ordering::Relaxed);"
mutant "percpu model: fold's arming load Acquire -> Relaxed" src/rseq.rs "                // ORDERING: Acquire, as in \`add\`.
                let gen = self.cpus[cpu].gen.load(Ordering::Acquire);" "                // ORDERING: Acquire, as in \`add\`.
                let gen = self.cpus[cpu].gen.load(Ordering::Relaxed);"
mutant "percpu model: membarrier's first fence removed" src/rseq.rs "        pub(crate) fn membarrier(&self) {
            crate::sync::fence_seqcst();" "        pub(crate) fn membarrier(&self) {"
mutant "percpu model: membarrier's last fence removed" src/rseq.rs "                c.gen.fetch_add(1, Ordering::Relaxed);
            }
            crate::sync::fence_seqcst();" "                c.gen.fetch_add(1, Ordering::Relaxed);
            }"
# Tolerance reads (issue #37, src/within.rs and the partial flush in
# src/flush.rs, src/dirty/partial.rs): the models in tests/loom.rs, mod
# within.
mutant "within: the left subtrees' bounds not counted" src/within.rs "Some(Plan::new(g, left, held, sum))" "Some(Plan::new(g, left, held, 0))"
mutant "partial flush: opened groups reset as if carried" src/dirty/partial.rs "Part::Opened => false," "Part::Opened => true,"
mutant "partial flush: opened groups not aggregated" src/dirty/partial.rs "            if expanded {
                out.push(n);" "            if expanded {"
mutant "partial flush: an opened group leaves the tree with a left child on it" src/dirty/partial.rs "let empty = self.nodes.get(&n).is_none_or(|l| l.children.is_empty());" "let empty = true;"
mutant "subtree read: the opened groups' left sums not counted" src/within/subtree.rs "g.children[i].iter().fold(0u64, |s, &c| {
                s.saturating_add(if left[c] { bound[c] } else { composed[c] })
            })" "0"
mutant "partial flush: opened groups reset by their whole count snapshot" src/flush.rs "o.count.pages().saturating_sub(o.left.0)," "o.count.pages(),"
mutant "partial flush: opened groups reset by their whole reservations" src/flush.rs "o.reserved.saturating_sub(o.left.1)," "o.reserved,"
mutant "partial flush: left groups loaded before the snapshot fence" src/flush.rs "            crate::sync::fence_seqcst();
            if let (Some(p), Some(o), Some(st)) = (opened_reset, opened, whole_st) {
                hand.reset_opened(st, p, o, self.params.threshold, self.params.break_above);
            }" "            if let (Some(p), Some(o), Some(st)) = (opened_reset, opened, whole_st) {
                hand.reset_opened(st, p, o, self.params.threshold, self.params.break_above);
            }
            crate::sync::fence_seqcst();"
mutant "tolerance read: aggregate load Acquire -> Relaxed" src/within.rs "let v = g.agg[slot.get()].load(Ordering::Acquire);" "let v = g.agg[slot.get()].load(Ordering::Relaxed);"
}
# The per-CPU model's own rules (src/rseq.rs, mod model): no model runs a
# fold's credit on a CPU right after another thread's commit there, and the
# CPU locks the membarrier visits may order what its first fence does.
survives "percpu model: fold's arming load Acquire -> Relaxed" "no percpu model fails it"
survives "percpu model: membarrier's first fence removed" "no percpu model fails it"
survives "percpu model: membarrier's last fence removed" "no percpu model fails it"
# Found by CI's rotation on 2026-12-03 (slot 7): the per-CPU claim's second
# fence. The owner's twin is caught (a_skipped_fold_with_a_claim_...), and
# percpu_a_skipped_fold_with_a_claim_is_carried_by_the_racing_flush, its
# per-CPU form, passes with the fence removed at 2 and 3 preemptions. A
# per-CPU claimer reserves before its bit, after a SeqCst fence (loom totally
# orders SeqCst fences with the flusher's), which may cover the fold's look
# at the flush count; unproven, so the fence stays (a cold path).
survives "percpu: claim's fence after the push removed" "no percpu model fails it, the skipped-fold one included"
# Found by a full run on a quiet host (2026-12-04; every mutant, nothing
# else running): the per-CPU claim's first fence, between the CPU's owned
# flag and the claim's push. Earlier full runs, beside other builds,
# reported it caught by a hang (MUTANT_TIMEOUT): the load, not a model. It
# survives at bf71567^ too, so no model change lost it. The owner's twin
# (announce_owner(s) and its fence) is `unmutated` above for that reason:
# the flag decides only whether a flusher issues the barrier, and under
# loom the flusher's pass fence and the model's sections' SeqCst fences may
# order what it orders; unproven for the per-CPU model, so the fence stays
# (a cold path: a CPU's first write of a pair since its last drain).
survives "percpu: claim's fence after announcing the CPU removed" "no percpu model fails it (a quiet host's full run); reported caught by a hang under load before"
all_mutants
for n in "${!survivors[@]}"; do
    printf '%s\n' "${names[@]}" | grep -qxF -- "$n" || { echo "PATTERN ERROR  survives names no mutant: $n"; exit 1; }
done

if [ -n "${LIST:-}" ]; then
    for i in "${!kinds[@]}"; do
        printf '%s\0' "${kinds[$i]}" "${names[$i]}" "${files[$i]}" "${froms[$i]}" "${tos[$i]}"
    done
    exit 0
fi

# Every pattern against the checkout, and no two mutants of one name.
for i in "${!kinds[@]}"; do
    printf '%s\0%s\0%s\0%s\0' "${kinds[$i]}" "${names[$i]}" "${files[$i]}" "${froms[$i]}"
done | python3 -c '
import collections, os, sys
root = sys.argv[1]
f = sys.stdin.buffer.read().decode().split("\0")
bad, seen = 0, collections.Counter()
for kind, name, path, pat in zip(f[0::4], f[1::4], f[2::4], f[3::4]):
    p = os.path.join(root, path)
    n = open(p).read().count(pat) if os.path.exists(p) else 0
    label = name if kind == "mutant" else f"unmutated {pat.strip()!r}"
    if n != 1:
        print(f"PATTERN ERROR  {label}: {n} matches in {path}")
        bad = 1
    if kind == "mutant":
        seen[name] += 1
        if seen[name] == 2:
            print(f"PATTERN ERROR  two mutants named {name!r}")
            bad = 1
sys.exit(bad)
' "$src/crates/hierstat" || { echo "some patterns no longer match: fix them (the orderings moved or changed)"; exit 1; }

# ONLY="a|b": only the mutants whose name contains a or b.
only() {
    [ -z "${ONLY:-}" ] && return 0
    local IFS='|' p
    for p in $ONLY; do
        case "$1" in *"$p"*) return 0 ;; esac
    done
    return 1
}
chosen=()
for i in "${!kinds[@]}"; do
    [ "${kinds[$i]}" = mutant ] && only "${names[$i]}" && chosen+=("$i")
done
baseline="${BASELINE:-1}"
timeout_s="${MUTANT_TIMEOUT:-900}"
if [ -n "${ROTATE:-}" ]; then
    n="${ROTATE}" m="${#chosen[@]}"
    slots=$(( (m + n - 1) / n ))
    seed="${ROTATE_SEED:-$(( $(date -u +%s) / 86400 ))}"
    slot=$(( seed % slots ))
    rotated=()
    for j in "${!chosen[@]}"; do
        [ $(( j % slots )) = "$slot" ] && rotated+=("${chosen[$j]}")
    done
    chosen=("${rotated[@]}")
    baseline="${BASELINE:-0}"
    timeout_s="${MUTANT_TIMEOUT:-300}"
    echo "rotation: slot $slot of $slots (seed $seed): ${#chosen[@]} of $m mutants; each runs once every $slots seeds (days)"
fi
[ "${#chosen[@]}" -gt 0 ] || { echo "no mutant selected"; exit 1; }
if [ -n "${DRY:-}" ]; then
    for i in "${chosen[@]}"; do echo "${names[$i]}"; done
    exit 0
fi

work="${MUTANTS_DIR:-${TMPDIR:-/tmp}/hierstat-mutants}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
rm -rf "$work/tree" && mkdir -p "$work/tree"
tar -C "$src" --exclude=./target --exclude=./.git -cf - . | tar -C "$work/tree" -xf -
# tar keeps the checkout's (older) mtimes, and cargo rebuilds only what
# looks newer than its last build: without this, a new invocation's
# baseline could run the binary of the previous invocation's last mutant.
find "$work/tree/crates" -name '*.rs' -exec touch {} +
target="${MUTANTS_TARGET_DIR:-$work/target}"
mkdir -p "$target"
export CARGO_TARGET_DIR="$(cd "$target" && pwd)"
cd "$work/tree/crates/hierstat" || exit 1
# The build folder's last hierstat is a mutant's, with newer mtimes than
# the checkout's files: a later `cargo test` of the checkout in the same
# folder (MUTANTS_TARGET_DIR=target/loom) would reuse it. Drop it on exit.
trap 'cargo clean -p hierstat --release --quiet 2>/dev/null' EXIT
run_loom() {
    LOOM_MAX_PREEMPTIONS=2 RUSTFLAGS="--cfg loom" timeout "$timeout_s" \
        cargo test -p hierstat --lib --test loom --release --no-fail-fast 2>&1
}
# cpu: CPU seconds of this shell's finished children (cargo, rustc, the
# models), from `times` run in this shell (not in a subshell: a fork
# starts at zero).
cpu_now() {
    times >"$work/times"
    cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t }' "$work/times")
}
caught_all=1
run_mutant() {
    local name="$1" file="$2" from="$3" to="$4"
    local start=$SECONDS cpu0
    cpu_now
    cpu0=$cpu
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
    local out failed aborted rc
    out=$(run_loom); rc=$?
    cp "$work/backup" "$file"
    cpu_now
    local took="($((SECONDS - start)) s, $((cpu - cpu0)) s CPU)"
    if [ "$rc" = 124 ]; then
        echo "caught (hang)  $name  <- the models did not finish in $timeout_s s $took"
        return
    fi
    failed=$(echo "$out" | sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' | tr '\n' ' ')
    # A model that fails inside a spawned loom thread aborts the process.
    aborted=$(echo "$out" | sed -n "s/^thread '\([^']*\)'.* panicked.*/\1/p" | sort -u | tr '\n' ' ')
    if [ -n "$failed" ] && [ -n "${survivors[$name]:-}" ]; then
        echo "caught         $name  <- $failed$took: remove its `survives` line"; caught_all=0
    elif [ -n "$failed" ]; then
        echo "caught         $name  <- $failed$took"
    elif [ "$rc" != 0 ] && [ -n "$aborted" ]; then
        echo "caught (abort) $name  <- $aborted$took"
    elif [ "$rc" != 0 ] && ! echo "$out" | grep -q "^test result:"; then
        echo "NOT CAUGHT     $name  <- the mutant did not build or run: $took"
        echo "$out" | grep -E "^(error|warning: unused)" | head -5
        caught_all=0
    else
        if [ -n "${survivors[$name]:-}" ]; then
            echo "SURVIVES       $name  $took (known: ${survivors[$name]})"
        else
            echo "NOT CAUGHT     $name  $took"; caught_all=0
        fi
    fi
}
if [ "$baseline" = 1 ]; then
    start=$SECONDS
    cpu_now
    cpu0=$cpu
    out=$(run_loom); echo "$out" | grep -q "test result: ok" || { echo "baseline fails:"; echo "$out" | tail -20; exit 1; }
    cpu_now
    echo "baseline passes ($((SECONDS - start)) s, $((cpu - cpu0)) s CPU)"
fi
for i in "${chosen[@]}"; do
    run_mutant "${names[$i]}" "${files[$i]}" "${froms[$i]}" "${tos[$i]}"
done
[ "$caught_all" = 1 ] && echo "every mutant caught (${#chosen[@]})" || { echo "some mutants survived"; exit 1; }
