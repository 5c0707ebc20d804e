//! Analytical checks: with a backend whose work per call is fixed, the
//! simulated latencies must equal the cost model's sums exactly.

use sim::backend::{FlushReason, FlushRules, FlushScope, LineId, ReadValue, StatsBackend, Update};
use sim::cost::{CostModel, Work};
use sim::lock::LockMode;
use sim::runner::sim::{run, SimSetup};
use sim::workload::{GroupIdx, TreeShape};
use sim::workload::{ReadersSpec, Targets, WritersSpec};
use simcore::time::MILLIS;

/// Costs chosen so that every unit is distinguishable; a read's syscalls
/// and formatting cost 100 + 1 × 3 ns, and one engine counter stands for
/// one kernel counter (1 item in the file, 1 in the schema).
const COSTS: &str = "call_ns = 1\natomic_ns = 2\nshard_scanned_ns = 3\ngroup_visited_ns = 5\n\
counter_aggregated_ns = 7\nlock_ns = 11\nitem_read_ns = 13\nline_transfer_ns = 17\n\
[kernel]\nfault_anon_ns = 1\nfault_cow_ns = 1\nfault_shared_ns = 1\nsend_ns = 1\n\
charge_level_ns = 1\nstat_update_ns = 1\nrstat_level_ns = 1\nread_syscall_ns = 100\n\
read_item_ns = 3\nflush_visit_ns = 1\nupdates_per_fault_anon = 1\nupdates_per_fault_cow = 1\n\
updates_per_fault_shared = 1\nsock_pages_per_send = 1\nstat_items = 1\n";

/// A backend whose calls do a fixed amount of work.
struct Fixed {
    lock: LockMode,
}

const FLUSH_WORK: Work = Work {
    calls: 1,
    atomics: 0,
    shards_scanned: 3,
    groups_visited: 2,
    counters_aggregated: 5,
    locks: 0,
    items_read: 0,
};

impl StatsBackend for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn rules(&self) -> FlushRules {
        FlushRules {
            lock: self.lock,
            scope: FlushScope::Subtree,
            periodic: false,
        }
    }
    fn add(&self, _: GroupIdx, _: usize, _: i64) {}
    fn add_counted(&mut self, _: Update, w: &mut Work, _: &mut Vec<LineId>) {
        w.calls += 1;
        w.atomics += 2;
    }
    fn needs_flush(&self, _: GroupIdx, _: FlushReason) -> bool {
        true
    }
    fn flush(&self, _: GroupIdx, _: FlushReason, w: &mut Work) {
        w.merge(&FLUSH_WORK);
    }
    fn read(&self, _: GroupIdx, _: usize, w: &mut Work) -> ReadValue {
        w.items_read += 1;
        ReadValue {
            value: 0,
            bound: Some(0),
        }
    }
}

fn setup(cpus: usize, readers: u32, aligned: bool, writers: Option<u32>) -> SimSetup {
    SimSetup {
        cpus,
        duration: 10 * MILLIS,
        seed: 5,
        costs: CostModel::from_toml(COSTS).unwrap(),
        items: 1,
        writers: WritersSpec {
            cpus: writers,
            items: 1,
            ..WritersSpec::default()
        },
        readers: (readers > 0).then_some(ReadersSpec {
            count: readers,
            period_ms: 1.0,
            targets: Targets::Leaves,
            items: Some(1),
            aligned,
            tolerance: Default::default(),
        }),
        flush_period: None,
        spikes: None,
    }
}

/// Flush hold: the flush's work plus the lock acquisition the runner adds.
/// 1 call + 3×3 + 2×5 + 5×7 + 1 lock × 11 = 1 + 9 + 10 + 35 + 11 = 66 ns.
const HOLD: u64 = 66;
/// A read: 1 call + 1 item × 13 = 14 ns of engine work, then its
/// syscalls and its one line formatted: 100 + 3 ns.
const READ: u64 = 14 + 103;

#[test]
fn one_cpu_no_contention_latency_is_the_cost_sum() {
    let shape = TreeShape::chain(1);
    let mut b = Fixed {
        lock: LockMode::Serialize,
    };
    let o = run(&mut b, &shape, &setup(1, 1, false, Some(0)));
    assert_eq!(o.read_latencies.len(), 10, "one read per ms for 10 ms");
    for &l in &o.read_latencies {
        assert_eq!(l, HOLD + READ);
    }
    assert_eq!(o.lock_wait, 0);
    assert_eq!(o.max_hold, HOLD);
}

#[test]
fn second_flusher_waits_exactly_the_first_hold() {
    let shape = TreeShape::chain(1);
    let mut b = Fixed {
        lock: LockMode::Serialize,
    };
    let o = run(&mut b, &shape, &setup(2, 2, true, Some(0)));
    assert_eq!(o.read_latencies.len(), 20);
    for pair in o.read_latencies.chunks(2) {
        assert_eq!(pair, [HOLD + READ, HOLD + HOLD + READ]);
    }
    assert_eq!(
        o.lock_wait,
        10 * HOLD,
        "10 contended rounds, each waits one hold"
    );
}

#[test]
fn skip_policy_skips_instead_of_waiting() {
    let shape = TreeShape::chain(1);
    let mut b = Fixed {
        lock: LockMode::Skip,
    };
    let o = run(&mut b, &shape, &setup(2, 2, true, Some(0)));
    for pair in o.read_latencies.chunks(2) {
        // The skipper pays one lock attempt (11 ns) and its read.
        assert_eq!(pair, [11 + READ, HOLD + READ]);
    }
    assert_eq!(o.skipped_flushes, 10);
}

/// A bounded wait shorter than the running flush: the second reader waits
/// exactly the bound, then skips (one lock attempt) and reads.
#[test]
fn a_bounded_wait_shorter_than_the_flush_skips_at_its_deadline() {
    let shape = TreeShape::chain(1);
    let mut b = Fixed {
        lock: LockMode::WaitOngoing { max_wait: 30 },
    };
    let o = run(&mut b, &shape, &setup(2, 2, true, Some(0)));
    assert_eq!(o.read_latencies.len(), 20);
    for pair in o.read_latencies.chunks(2) {
        assert_eq!(pair, [30 + 11 + READ, HOLD + READ]);
    }
    assert_eq!(o.skipped_flushes, 10);
    assert_eq!(o.lock_wait, 10 * 30, "each skipper waited the bound");
    assert_eq!(o.flushes, 10);
}

/// A bounded wait longer than the running flush: the waiter is granted when
/// the flush ends, checks its threshold again (always over, here) and
/// flushes, exactly as under `Serialize`; its stale deadline, which fires
/// after the grant, changes nothing.
#[test]
fn a_bounded_wait_longer_than_the_flush_waits_like_serialize() {
    let shape = TreeShape::chain(1);
    let mut b = Fixed {
        lock: LockMode::WaitOngoing { max_wait: 100 },
    };
    let o = run(&mut b, &shape, &setup(2, 2, true, Some(0)));
    assert_eq!(o.read_latencies.len(), 20);
    for pair in o.read_latencies.chunks(2) {
        assert_eq!(pair, [HOLD + READ, HOLD + HOLD + READ]);
    }
    assert_eq!(o.skipped_flushes, 0);
    assert_eq!(o.lock_wait, 10 * HOLD);
    assert_eq!(o.flushes, 20);
}

#[test]
fn disjoint_flushes_do_not_wait() {
    let shape = TreeShape::from_spec(&sim::workload::TreeSpec {
        fanout: vec![2],
        names: vec![],
    });
    let mut b = Fixed {
        lock: LockMode::DisjointParallel,
    };
    let mut s = setup(2, 2, true, Some(0));
    s.readers.as_mut().unwrap().targets = Targets::Leaves;
    let o = run(&mut b, &shape, &s);
    // Readers pick leaves at random: equal leaves wait, different ones not.
    for pair in o.read_latencies.chunks(2) {
        assert_eq!(pair[0], HOLD + READ);
        assert!(pair[1] == HOLD + READ || pair[1] == 2 * HOLD + READ);
    }
    assert!(o.read_latencies.chunks(2).any(|p| p[1] == HOLD + READ));
}

#[test]
fn back_to_back_updates_fill_the_duration() {
    // Each update costs 1 call + 2 atomics = 5 ns; one CPU writes for 10 ms
    // after a start offset below 1 µs.
    let shape = TreeShape::chain(2);
    let mut b = Fixed {
        lock: LockMode::Serialize,
    };
    let o = run(&mut b, &shape, &setup(1, 0, false, None));
    let max = 10 * MILLIS / 5;
    let min = (10 * MILLIS - 1_000) / 5;
    assert!(
        (min..=max).contains(&o.updates),
        "{} not in {min}..={max}",
        o.updates
    );
}
