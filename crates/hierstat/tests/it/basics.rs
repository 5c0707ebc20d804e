use crate::{tree, Items};
use hierstat::sim::{ManualClock, Shard, Simulator, WorkCounters};
use hierstat::{
    Config, ConfigError, Error, FlushKind, FlushOutcome, HierStats, ItemKind, Preset, Schema, Unit,
    MAX_SHARDS,
};

#[test]
fn exact_after_forced_flush_for_every_preset() {
    for p in Preset::ALL {
        let (
            t,
            Items {
                anon, pgfault, lru, ..
            },
        ) = tree(p, 4);
        let a = t.create(&t.root(), "a").unwrap();
        let b = t.create(&a, "b").unwrap();
        t.add_with(Shard(1), &b, anon, 3 * 4096, &mut ()).unwrap();
        t.add_with(Shard(3), &a, anon, 4096, &mut ()).unwrap();
        t.add_with(Shard(0), &b, pgfault, 7, &mut ()).unwrap();
        t.add_node_with(Shard(2), &b, lru, 1, 5, &mut ()).unwrap();
        t.flush_forced(&t.root()).unwrap();
        assert_eq!(t.read(&a, anon).unwrap(), 4 * 4096, "{p}");
        assert_eq!(t.read_local(&a, anon).unwrap(), 4096, "{p}");
        assert_eq!(t.read(&t.root(), pgfault).unwrap(), 7, "{p}");
        assert_eq!(t.read_node(&a, lru, Some(1)).unwrap(), 5, "{p}");
        assert_eq!(t.read_node(&a, lru, Some(0)).unwrap(), 0, "{p}");
        assert_eq!(t.read_node(&a, lru, None).unwrap(), 5, "{p}");
        t.verify().unwrap();
        t.verify_clean().unwrap();
    }
}

#[test]
fn subtree_flush_leaves_delta_in_parent_pending_and_others_queued() {
    let (t, Items { file, .. }) = tree(Preset::Linux6_8, 2);
    let a = t.create(&t.root(), "a").unwrap();
    let b = t.create(&t.root(), "b").unwrap();
    t.add_with(Shard(0), &a, file, 10, &mut ()).unwrap();
    t.add_with(Shard(1), &b, file, 20, &mut ()).unwrap();
    t.flush_forced(&a).unwrap();
    assert_eq!(t.read(&a, file).unwrap(), 10);
    assert_eq!(
        t.read(&b, file).unwrap(),
        0,
        "b was not in the flushed subtree"
    );
    assert_eq!(
        t.read(&t.root(), file).unwrap(),
        0,
        "a's delta waits in root's pending"
    );
    t.verify().unwrap();
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&t.root(), file).unwrap(), 30);
    t.verify_clean().unwrap();
}

#[test]
fn transient_negative_reads_as_zero() {
    let (t, Items { file, .. }) = tree(Preset::Hierstat, 2);
    let a = t.create(&t.root(), "a").unwrap();
    // +1 on shard 0 (then flushed), -1 on shard 1 flushed first: the
    // aggregate is transiently -1.
    t.add_with(Shard(1), &a, file, -1, &mut ()).unwrap();
    t.flush_forced(&a).unwrap();
    assert_eq!(t.read_signed(&a, file).unwrap(), -1);
    assert_eq!(t.read(&a, file).unwrap(), 0);
    t.add_with(Shard(0), &a, file, 1, &mut ()).unwrap();
    t.flush_forced(&a).unwrap();
    assert_eq!(t.read_signed(&a, file).unwrap(), 0);
}

#[test]
fn user_mistakes_are_errors() {
    let (t, Items { anon, lru, .. }) = tree(Preset::Hierstat, 2);
    let root = t.root();
    let a = t.create(&root, "a").unwrap();
    assert!(matches!(
        t.create(&root, "a"),
        Err(Error::DuplicateName { .. })
    ));
    assert!(matches!(t.create(&root, "x/y"), Err(Error::InvalidName(_))));
    assert!(matches!(t.create(&root, ""), Err(Error::InvalidName(_))));
    assert!(matches!(t.lookup("/nope"), Err(Error::UnknownGroup(_))));
    assert!(matches!(t.lookup("a"), Err(Error::InvalidName(_))));
    assert!(matches!(t.remove(root.clone()), Err(Error::RemoveRoot)));
    let _b = t.create(&a, "b").unwrap();
    assert!(matches!(t.remove(a.clone()), Err(Error::NotEmpty(_))));
    assert!(matches!(
        t.add_with(Shard(2), &a, anon, 1, &mut ()),
        Err(Error::ShardOutOfRange {
            shard: 2,
            shards: 2
        })
    ));
    assert!(matches!(
        t.add_node_with(Shard(0), &a, lru, 5, 1, &mut ()),
        Err(Error::NodeOutOfRange { node: 5, nodes: 2 })
    ));
    assert!(t.schema().item("lru").is_err());
    let pgfault = t.schema().item("pgfault").unwrap();
    assert!(matches!(
        t.add(&a, pgfault, -1),
        Err(Error::NegativeEvent(..))
    ));
    for shards in [0, MAX_SHARDS + 1] {
        let bad = HierStats::new(
            Schema::builder().build().unwrap(),
            Config::default().shards(shards),
        );
        assert!(
            matches!(bad, Err(Error::InvalidConfig(ConfigError::Shards(n))) if n == shards),
            "{shards} shards: {:?}",
            bad.err()
        );
    }
    // The most shards are accepted.
    assert!(HierStats::new(
        Schema::builder().build().unwrap(),
        Config::default().shards(MAX_SHARDS)
    )
    .is_ok());
}

#[test]
fn lookup_and_iteration() {
    let (t, _) = tree(Preset::Hierstat, 1);
    let s = t.create(&t.root(), "system.slice").unwrap();
    let n = t.create(&s, "nginx.service").unwrap();
    t.create(&s, "cron.service").unwrap();
    assert!(t.lookup("/system.slice/nginx.service").unwrap().same(&n));
    assert!(t.lookup("/").unwrap().same(&t.root()));
    assert_eq!(n.path(), "/system.slice/nginx.service");
    let paths: Vec<_> = t.groups().iter().map(|g| g.path().to_string()).collect();
    assert_eq!(
        paths,
        [
            "/",
            "/system.slice",
            "/system.slice/cron.service",
            "/system.slice/nginx.service"
        ]
    );
    assert_eq!(t.children(&s).unwrap().len(), 2);
    assert_eq!(t.len(), 4);
}

#[test]
fn removal_folds_deltas_into_ancestors_and_late_updates_still_count() {
    let (t, Items { file, .. }) = tree(Preset::Linux6_17, 3);
    let a = t.create(&t.root(), "a").unwrap();
    let b = t.create(&a, "b").unwrap();
    t.add_with(Shard(2), &b, file, 42, &mut ()).unwrap();
    let late = b.clone();
    t.remove(b).unwrap();
    assert!(late.is_removed());
    assert!(t.lookup("/a/b").is_err());
    // A late update through a surviving handle is not lost either.
    t.add_with(Shard(0), &late, file, 8, &mut ()).unwrap();
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&a, file).unwrap(), 50);
    assert_eq!(t.zombies(), 1, "a handle is alive: the row is not recycled");
    drop(late);
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.zombies(), 0);
    t.verify().unwrap();
    // The recycled row starts from zero.
    let c = t.create(&a, "c").unwrap();
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read(&c, file).unwrap(), 0);
    assert_eq!(t.read(&a, file).unwrap(), 50);
}

#[test]
fn thresholds_guard_read_flushes() {
    // 2 shards x batch 64: T = 128 pages.
    let (t, Items { file, .. }) = tree(Preset::Linux6_8, 2);
    let a = t.create(&t.root(), "a").unwrap();
    t.add_with(Shard(0), &a, file, 100, &mut ()).unwrap();
    assert_eq!(t.flush(&a).unwrap(), FlushOutcome::NotNeeded);
    let b = t.read_bounded(&a, file).unwrap();
    assert_eq!(b.value, 0);
    let bound = b.bound.unwrap();
    assert!(
        bound >= 100,
        "the bound {bound} must cover the unflushed 100 pages"
    );
    t.add_with(Shard(1), &a, file, 100, &mut ()).unwrap();
    assert!(t.needs_flush(&a).unwrap());
    assert_eq!(t.flush(&a).unwrap(), FlushOutcome::Flushed { root: false });
    assert_eq!(t.read(&a, file).unwrap(), 200);
    assert!(!t.needs_flush(&a).unwrap());
}

#[test]
fn global_threshold_flushes_root() {
    let (t, Items { file, .. }) = tree(Preset::Linux5_15, 2);
    let a = t.create(&t.root(), "a").unwrap();
    t.add_with(Shard(0), &a, file, 1000, &mut ()).unwrap();
    assert_eq!(t.flush(&a).unwrap(), FlushOutcome::Flushed { root: true });
    assert_eq!(t.read(&t.root(), file).unwrap(), 1000);
}

#[test]
fn ratelimited_flush_waits_two_periods() {
    let clock = ManualClock::new(0);
    let (s, Items { file, .. }) = crate::schema();
    let t = HierStats::new(
        s,
        Config::preset(Preset::Linux5_15Ratelimited)
            .shards(2)
            .clock(clock.clone()),
    )
    .unwrap();
    let a = t.create(&t.root(), "a").unwrap();
    t.add_with(Shard(0), &a, file, 10_000, &mut ()).unwrap();
    clock.set(4_000_000_000);
    assert_eq!(t.flush_hot_path(&a).unwrap(), FlushOutcome::Ratelimited);
    clock.set(4_000_000_001);
    assert_eq!(
        t.flush_hot_path(&a).unwrap(),
        FlushOutcome::Flushed { root: true }
    );
    assert_eq!(t.last_root_flush_ns(), 4_000_000_001);
    assert_eq!(t.flush_hot_path(&a).unwrap(), FlushOutcome::Ratelimited);
}

#[test]
fn hot_path_rules_follow_the_preset() {
    let (t, Items { file, .. }) = tree(Preset::Linux5_13, 1);
    let a = t.create(&t.root(), "a").unwrap();
    t.add(&a, file, 1).unwrap();
    assert_eq!(t.flush_hot_path(&a).unwrap(), FlushOutcome::NoFlush);
    // Async: nothing to do under the threshold; over it, with no
    // background flusher to serve a request, a synchronous flush.
    let (t, Items { file, .. }) = tree(Preset::Linux5_15Async, 1);
    let a = t.create(&t.root(), "a").unwrap();
    assert_eq!(t.flush_hot_path(&a).unwrap(), FlushOutcome::NotNeeded);
    t.add(&a, file, 10_000).unwrap();
    assert_eq!(
        t.flush_hot_path(&a).unwrap(),
        FlushOutcome::Flushed { root: true }
    );
    assert_eq!(t.flush_stats().async_requests, 0);
    // With a flusher running, a request it serves soon.
    let f = t
        .start_flusher(std::time::Duration::from_secs(3600))
        .unwrap();
    t.add(&a, file, 10_000).unwrap();
    assert_eq!(t.flush_hot_path(&a).unwrap(), FlushOutcome::AsyncRequested);
    assert_eq!(t.flush_stats().async_requests, 1);
    crate::wait_until("the requested flush", || f.stats().async_flushes > 0);
    assert_eq!(f.stop().async_flushes, 1);
    assert_eq!(t.read(&a, file), Ok(20_000));
    // Stopped: back to synchronous.
    t.add(&a, file, 10_000).unwrap();
    assert_eq!(
        t.flush_hot_path(&a).unwrap(),
        FlushOutcome::Flushed { root: true }
    );
}

#[test]
fn work_counters_report_flush_work() {
    let (t, Items { file, .. }) = tree(Preset::Hierstat, 4);
    let a = t.create(&t.root(), "a").unwrap();
    let mut w = WorkCounters::default();
    t.add_with(Shard(1), &a, file, 1, &mut w).unwrap();
    assert!(w.atomics >= 3, "counter add, header add, claim: {w:?}");
    let mut f = WorkCounters::default();
    t.flush_with(&t.root(), FlushKind::Forced, &mut f).unwrap();
    assert_eq!(f.shards_scanned, 4);
    assert_eq!(f.groups_visited, 2, "a and root on shard 1 only: {f:?}");
    assert_eq!(f.list_pops, 1);
    let slots = t.schema().slots() as u64;
    assert_eq!(f.counters_aggregated, 2 * slots);
}

#[test]
fn background_flusher_publishes_and_stops() {
    let (s, Items { file, .. }) = crate::schema();
    let t = HierStats::new(s, Config::preset(Preset::Hierstat).shards(2)).unwrap();
    let a = t.create(&t.root(), "a").unwrap();
    t.add(&a, file, 5).unwrap();
    let f = t
        .start_flusher(std::time::Duration::from_millis(10))
        .unwrap();
    crate::wait_until("a periodic flush", || t.read(&t.root(), file).unwrap() == 5);
    t.request_async_flush();
    let stats = f.stop();
    assert!(stats.periodic_flushes + stats.async_flushes >= 1);
    assert!(stats.max_lag_ns >= stats.last_lag_ns);
}

/// Rows exist only on the shards that write a group, are shared-path or
/// owner-path sized by what wrote them, and go back to their shards' arenas
/// when the group is reaped.
#[test]
fn rows_exist_on_first_touch_and_are_recycled() {
    let mut b = Schema::builder();
    let items: Vec<_> = (0..32)
        .map(|i| b.state(&format!("s{i}"), Unit::Pages))
        .collect();
    let t = HierStats::new(b.build().unwrap(), Config::default().shards(64)).unwrap();
    let root = t.root();
    let mut groups: Vec<_> = (0..1000)
        .map(|i| t.create(&root, &format!("g{i}")).unwrap())
        .collect();
    assert_eq!(t.counter_bytes(), 0, "no shard wrote anything");
    let per_group_idle = t.memory_bytes() / 1001;
    // Table and aggregates, no rows: well under one dense row set
    // (64 shards × 34 words).
    assert!(per_group_idle < 64 * 34 * 8 / 4, "{per_group_idle} B/group");
    // 100 groups written from shards 3 and 60, through the shared path.
    for g in &groups[..100] {
        for s in [3, 60] {
            t.add_with(Shard(s), g, items[0], 1, &mut ()).unwrap();
        }
    }
    t.flush_forced(&root).unwrap();
    let written = t.counter_bytes();
    // 200 rows: control words and cells, and shared cells; chunks of up
    // to 256 rows leave some slack.
    let row = (2 + 32 + 32) * 8;
    assert!(written >= 200 * row, "{written}");
    assert!(written <= 2 * 200 * row + 2 * 4096, "{written}");
    // Removed and reaped, their rows go back to the arenas: 100 other
    // groups written on the same shards take them, and nothing grows.
    for g in groups.drain(..100) {
        t.remove(g).unwrap();
    }
    assert_eq!(t.zombies(), 0, "no handle left: reaped at removal");
    for g in &groups[..100] {
        for s in [3, 60] {
            t.add_with(Shard(s), g, items[1], 1, &mut ()).unwrap();
        }
    }
    assert_eq!(t.counter_bytes(), written, "recycled rows are reused");
    t.flush_forced(&root).unwrap();
    t.verify().unwrap();
    t.verify_clean().unwrap();
}

/// A per-node event counts per node and in total, flushes up the tree as a
/// per-node state does, and refuses to go down.
#[test]
fn per_node_events_count_up_per_node_and_refuse_to_go_down() {
    let mut b = Schema::builder();
    let refault = b.node_event("workingset_refault_file", Unit::Count);
    b.nodes(2);
    let t = HierStats::new(b.build().unwrap(), Config::preset(Preset::Hierstat)).unwrap();
    let a = t.create(&t.root(), "a").unwrap();
    let leaf = t.create(&a, "leaf").unwrap();
    t.add_node(&leaf, refault, 0, 3).unwrap();
    t.add_node(&leaf, refault, 1, 4).unwrap();
    assert!(matches!(
        t.add_node(&leaf, refault, 1, -1),
        Err(Error::NegativeEvent(..))
    ));
    assert!(matches!(
        t.add_node_with(Shard(0), &leaf, refault, 0, -2, &mut ()),
        Err(Error::NegativeEvent(..))
    ));
    t.flush_forced(&t.root()).unwrap();
    assert_eq!(t.read_node(&a, refault, None).unwrap(), 7);
    assert_eq!(t.read_node(&a, refault, Some(0)).unwrap(), 3);
    assert_eq!(t.read_node(&a, refault, Some(1)).unwrap(), 4);
    let s = t.schema();
    assert_eq!(s.node_item("workingset_refault_file").unwrap(), refault);
    assert!(matches!(
        s.item("workingset_refault_file"),
        Err(Error::WrongItemKind { .. })
    ));
    let kind = s.node_info(refault).unwrap().kind;
    assert!(kind == ItemKind::NodeEvent && kind.is_event() && kind.is_per_node());
}
