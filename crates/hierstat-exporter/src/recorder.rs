//! A [`metrics`] recorder that rolls labelled metrics up a hierstat tree.
//!
//! Code written against `metrics::counter!` / `gauge!` keeps its calls;
//! installing a [`HierRecorder`] routes them into a [`HierStats`] tree:
//!
//! * the **metric name** selects the item (`requests` → the schema's
//!   `requests` item; [`RecorderBuilder::strip_prefix`] and
//!   [`RecorderBuilder::alias`] adapt names);
//! * one **label** selects the group ([`RecorderBuilder::group_label`]): its
//!   value is a path relative to the base group (`tenant="acme"` →
//!   `/acme`, `path="/system.slice/nginx.service"` → that group), created
//!   on first use if [`RecorderBuilder::create_groups`] is on; a metric
//!   without the label updates the base group;
//! * the `node` label selects the NUMA node of per-node items;
//! * every other label is ignored: the tree *is* the dimension, and the
//!   exposition ([`Exporter`](crate::Exporter)) adds the group path back.
//!
//! Registration resolves the key once and returns a handle bound to its
//! (group, item): `counter.increment(n)` is then one dynamic call plus
//! [`HierStats::add`], no lookup. (`counter!(...)` without keeping the
//! handle registers on every call: a read-locked map lookup first.)
//!
//! Kinds: counters map to event or state items, gauges to state items
//! (events only count up); values are integers in the item's unit, so
//! fractional gauge values round to the nearest integer. Histograms have no
//! hierstat counterpart: they, and every key that cannot be mapped, get a
//! no-op handle and are listed by [`HierRecorder::unmapped`].

use hierstat::{Error as EngineError, Group, HierStats, ItemId, NodeItemId};
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Configures a [`HierRecorder`]; start with [`HierRecorder::builder`].
#[derive(Debug, Clone)]
pub struct RecorderBuilder {
    stats: HierStats,
    base: Option<Group>,
    group_label: Option<String>,
    node_label: String,
    create_groups: bool,
    strip_prefix: String,
    aliases: HashMap<String, String>,
}

impl RecorderBuilder {
    /// The label whose value names the group (a path relative to the base
    /// group). Without one, every metric updates the base group.
    pub fn group_label(mut self, label: &str) -> Self {
        self.group_label = Some(label.to_string());
        self
    }

    /// The group that label values are relative to, and that metrics
    /// without the label update (default: the root).
    pub fn base(mut self, group: Group) -> Self {
        self.base = Some(group);
        self
    }

    /// The label holding the NUMA node of per-node items (default `node`).
    pub fn node_label(mut self, label: &str) -> Self {
        self.node_label = label.to_string();
        self
    }

    /// Creates groups named by label values that do not exist yet (default
    /// off: such metrics are unmapped).
    pub fn create_groups(mut self, on: bool) -> Self {
        self.create_groups = on;
        self
    }

    /// Removes this prefix from metric names before looking the item up
    /// (`app_requests` → `requests`).
    pub fn strip_prefix(mut self, prefix: &str) -> Self {
        self.strip_prefix = prefix.to_string();
        self
    }

    /// Maps the metric `metric` to the item `item`, whatever the prefix.
    pub fn alias(mut self, metric: &str, item: &str) -> Self {
        self.aliases.insert(metric.to_string(), item.to_string());
        self
    }

    /// Builds the recorder. Installing it globally
    /// (`metrics::set_global_recorder`) or locally is the caller's choice.
    pub fn build(self) -> HierRecorder {
        HierRecorder {
            inner: Arc::new(Inner {
                base: self.base.unwrap_or_else(|| self.stats.root()),
                stats: self.stats,
                group_label: self.group_label,
                node_label: self.node_label,
                create_groups: self.create_groups,
                strip_prefix: self.strip_prefix,
                aliases: self.aliases,
                counters: RwLock::new(HashMap::new()),
                gauges: RwLock::new(HashMap::new()),
                shared_gauges: Mutex::new(HashMap::new()),
                descriptions: Mutex::new(BTreeMap::new()),
                unmapped: Mutex::new(BTreeMap::new()),
            }),
        }
    }
}

/// A [`metrics::Recorder`] backed by a [`HierStats`] tree (see the module
/// docs). Cheap to clone; clones share their handles.
#[derive(Debug, Clone)]
pub struct HierRecorder {
    inner: Arc<Inner>,
}

/// Where a handle writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    Item(ItemId),
    Node(NodeItemId, usize),
}

#[derive(Debug)]
struct Inner {
    stats: HierStats,
    base: Group,
    group_label: Option<String>,
    node_label: String,
    create_groups: bool,
    strip_prefix: String,
    aliases: HashMap<String, String>,
    /// Registered counters by key, with the group they write (a handle of
    /// a removed group is re-resolved).
    counters: RwLock<HashMap<Key, (Counter, Group)>>,
    gauges: RwLock<HashMap<Key, (Gauge, Group)>>,
    /// One gauge handle per (group path, target), whatever the key's other
    /// labels: `set` computes its delta from the handle's own value, so
    /// two handles of one target must be one.
    shared_gauges: Mutex<HashMap<(String, Target), Arc<TreeGauge>>>,
    descriptions: Mutex<BTreeMap<String, String>>,
    unmapped: Mutex<BTreeMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HierRecorder {
    /// Starts configuring a recorder writing into `stats`.
    pub fn builder(stats: HierStats) -> RecorderBuilder {
        RecorderBuilder {
            stats,
            base: None,
            group_label: None,
            node_label: "node".to_string(),
            create_groups: false,
            strip_prefix: String::new(),
            aliases: HashMap::new(),
        }
    }

    /// The tree the recorder writes.
    pub fn stats(&self) -> &HierStats {
        &self.inner.stats
    }

    /// Keys that got a no-op handle (`"counter name{label=\"value\"}"`),
    /// with the reason; one entry per kind and key.
    pub fn unmapped(&self) -> Vec<(String, String)> {
        lock(&self.inner.unmapped)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Descriptions given through `describe_counter!` / `describe_gauge!`,
    /// by item name: feed them to
    /// [`ExporterBuilder::helps`](crate::ExporterBuilder::helps).
    pub fn descriptions(&self) -> Vec<(String, String)> {
        lock(&self.inner.descriptions)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl Inner {
    fn item_name<'a>(&'a self, metric: &'a str) -> &'a str {
        match self.aliases.get(metric) {
            Some(item) => item,
            None => metric.strip_prefix(&self.strip_prefix).unwrap_or(metric),
        }
    }

    fn note_unmapped(&self, kind: &str, key: &Key, reason: String) {
        lock(&self.unmapped).insert(format!("{kind} {}", key_string(key)), reason);
    }

    /// The group and target of a key, or why there is none.
    fn resolve(&self, key: &Key, gauge: bool) -> Result<(Group, Target), String> {
        let schema = self.stats.schema();
        let name = self.item_name(key.name());
        let mut group_value = None;
        let mut node_value = None;
        for l in key.labels() {
            if self.group_label.as_deref() == Some(l.key()) {
                group_value = Some(l.value());
            } else if l.key() == self.node_label {
                node_value = Some(l.value());
            }
        }
        let target = if let Ok(item) = schema.item(name) {
            if gauge && schema.info(item).is_ok_and(|i| i.kind.is_event()) {
                return Err(format!(
                    "gauge mapped to the event item `{name}` (events only count up)"
                ));
            }
            Target::Item(item)
        } else if let Ok(item) = schema.node_item(name) {
            if gauge && schema.node_info(item).is_ok_and(|i| i.kind.is_event()) {
                return Err(format!(
                    "gauge mapped to the per-node event item `{name}` (events only count up)"
                ));
            }
            let node = match node_value {
                Some(v) => v
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n < schema.nodes())
                    .ok_or_else(|| {
                        format!("node label {v:?} is not a node below {}", schema.nodes())
                    })?,
                None if schema.nodes() == 1 => 0,
                None => {
                    return Err(format!(
                        "per-node item `{name}` without a `{}` label",
                        self.node_label
                    ))
                }
            };
            Target::Node(item, node)
        } else {
            return Err(format!("no item `{name}` in the schema"));
        };
        let group = match group_value {
            None => self.base.clone(),
            Some(v) => self.group(v).map_err(|e| format!("group {v:?}: {e}"))?,
        };
        Ok((group, target))
    }

    /// The group at `value`, a path relative to the base group, created
    /// if allowed.
    fn group(&self, value: &str) -> Result<Group, EngineError> {
        let mut path = if self.base.depth() == 0 {
            String::new()
        } else {
            self.base.path().to_string()
        };
        let comps: Vec<&str> = value.split('/').filter(|c| !c.is_empty()).collect();
        if comps.is_empty() {
            return Ok(self.base.clone());
        }
        for c in &comps {
            path.push('/');
            path.push_str(c);
        }
        match self.stats.lookup(&path) {
            Err(EngineError::UnknownGroup(_)) if self.create_groups => {}
            other => return other,
        }
        let mut cur = self.base.clone();
        for c in comps {
            let child = format!("{}/{c}", if cur.depth() == 0 { "" } else { cur.path() });
            cur = match self.stats.lookup(&child) {
                Ok(g) => g,
                Err(EngineError::UnknownGroup(_)) => match self.stats.create(&cur, c) {
                    Ok(g) => g,
                    // Another thread created it first.
                    Err(EngineError::DuplicateName { .. }) => self.stats.lookup(&child)?,
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            };
        }
        Ok(cur)
    }
}

fn key_string(key: &Key) -> String {
    let mut s = key.name().to_string();
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={:?}", l.key(), l.value()))
        .collect();
    if !labels.is_empty() {
        s.push('{');
        s.push_str(&labels.join(","));
        s.push('}');
    }
    s
}

/// A counter handle: `increment` is a pre-bound [`hierstat::Counter`]'s
/// `add` (checked once, when the handle was registered), or
/// [`HierStats::add_node`] for a per-node item.
#[derive(Debug)]
struct TreeCounter {
    stats: HierStats,
    group: Group,
    target: Target,
    /// The engine's bound counter for a plain item.
    bound: Option<hierstat::Counter>,
    /// Highest value passed to `absolute`. ORDERING: Relaxed; `fetch_max`
    /// makes concurrent `absolute` calls add disjoint increments, and the
    /// value publishes nothing else.
    absolute: AtomicU64,
}

/// `u64` → `i64`, saturating.
#[inline]
fn delta_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl TreeCounter {
    #[inline]
    fn add(&self, delta: i64) {
        // Cannot fail: the item comes from this tree's schema, the node was
        // checked against it, and counter deltas are never negative.
        let _ = match (&self.bound, self.target) {
            (Some(c), _) => c.add(delta),
            (None, Target::Item(item)) => self.stats.add(&self.group, item, delta),
            (None, Target::Node(item, node)) => self.stats.add_node(&self.group, item, node, delta),
        };
    }
}

impl CounterFn for TreeCounter {
    #[inline]
    fn increment(&self, value: u64) {
        self.add(delta_of(value));
    }

    fn absolute(&self, value: u64) {
        let prev = self.absolute.fetch_max(value, Ordering::Relaxed);
        if value > prev {
            self.add(delta_of(value - prev));
        }
    }
}

/// A gauge handle on a state item.
#[derive(Debug)]
struct TreeGauge {
    stats: HierStats,
    group: Group,
    target: Target,
    /// What this handle has added in total: `set(v)` adds `v − value`.
    /// ORDERING: Relaxed; `swap` / `fetch_add` chain concurrent updates so
    /// that the deltas added sum to the final value, and nothing else is
    /// published through it.
    value: AtomicI64,
}

/// `f64` → `i64`, rounded to nearest (saturating; NaN → 0).
#[inline]
fn round(v: f64) -> i64 {
    v.round() as i64
}

impl TreeGauge {
    #[inline]
    fn add(&self, delta: i64) {
        if delta == 0 {
            return;
        }
        // Cannot fail: a state or per-node state item of this tree's
        // schema (gauges on event items are never bound).
        let _ = match self.target {
            Target::Item(item) => self.stats.add(&self.group, item, delta),
            Target::Node(item, node) => self.stats.add_node(&self.group, item, node, delta),
        };
    }
}

impl GaugeFn for TreeGauge {
    fn increment(&self, value: f64) {
        let d = round(value);
        self.value.fetch_add(d, Ordering::Relaxed);
        self.add(d);
    }

    fn decrement(&self, value: f64) {
        let d = round(value).saturating_neg();
        self.value.fetch_add(d, Ordering::Relaxed);
        self.add(d);
    }

    fn set(&self, value: f64) {
        let v = round(value);
        let prev = self.value.swap(v, Ordering::Relaxed);
        self.add(v.wrapping_sub(prev));
    }
}

impl Recorder for HierRecorder {
    fn describe_counter(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn describe_gauge(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.describe(key, description);
    }

    fn describe_histogram(&self, _key: KeyName, _unit: Option<Unit>, _description: SharedString) {}

    fn register_counter(&self, key: &Key, _metadata: &Metadata<'_>) -> Counter {
        let inner = &self.inner;
        if let Some((c, g)) = inner
            .counters
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            if !g.is_removed() {
                return c.clone();
            }
        }
        match inner.resolve(key, false) {
            Ok((group, target)) => {
                let bound = match target {
                    Target::Item(item) => inner.stats.counter(&group, item).ok(),
                    Target::Node(..) => None,
                };
                let c = Counter::from_arc(Arc::new(TreeCounter {
                    stats: inner.stats.clone(),
                    group: group.clone(),
                    target,
                    bound,
                    absolute: AtomicU64::new(0),
                }));
                inner
                    .counters
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), (c.clone(), group));
                c
            }
            Err(reason) => {
                inner.note_unmapped("counter", key, reason);
                Counter::noop()
            }
        }
    }

    fn register_gauge(&self, key: &Key, _metadata: &Metadata<'_>) -> Gauge {
        let inner = &self.inner;
        if let Some((g, group)) = inner
            .gauges
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            if !group.is_removed() {
                return g.clone();
            }
        }
        match inner.resolve(key, true) {
            Ok((group, target)) => {
                let handle = {
                    let mut shared = lock(&inner.shared_gauges);
                    let slot = shared
                        .entry((group.path().to_string(), target))
                        .or_insert_with(|| {
                            Arc::new(TreeGauge {
                                stats: inner.stats.clone(),
                                group: group.clone(),
                                target,
                                value: AtomicI64::new(0),
                            })
                        });
                    if !slot.group.same(&group) {
                        // The path names a new group since: start afresh.
                        *slot = Arc::new(TreeGauge {
                            stats: inner.stats.clone(),
                            group: group.clone(),
                            target,
                            value: AtomicI64::new(0),
                        });
                    }
                    slot.clone()
                };
                let g = Gauge::from_arc(handle);
                inner
                    .gauges
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), (g.clone(), group));
                g
            }
            Err(reason) => {
                inner.note_unmapped("gauge", key, reason);
                Gauge::noop()
            }
        }
    }

    fn register_histogram(&self, key: &Key, _metadata: &Metadata<'_>) -> Histogram {
        self.inner.note_unmapped(
            "histogram",
            key,
            "histograms have no hierstat item kind".to_string(),
        );
        Histogram::noop()
    }
}

impl HierRecorder {
    fn describe(&self, key: KeyName, description: SharedString) {
        let item = self.inner.item_name(key.as_str()).to_string();
        lock(&self.inner.descriptions).insert(item, description.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::{Config, Preset, Schema};

    fn setup() -> (HierStats, ItemId, ItemId, NodeItemId) {
        let mut b = Schema::builder();
        let req = b.event("requests", hierstat::Unit::Count);
        let inflight = b.state("inflight", hierstat::Unit::Count);
        let mem = b.node_state("mem", hierstat::Unit::Bytes);
        b.nodes(2);
        let stats = HierStats::new(
            b.build().unwrap(),
            Config::preset(Preset::Hierstat).shards(2),
        )
        .unwrap();
        (stats, req, inflight, mem)
    }

    #[test]
    fn labels_select_groups_and_roll_up() {
        let (stats, req, inflight, mem) = setup();
        let rec = HierRecorder::builder(stats.clone())
            .group_label("tenant")
            .create_groups(true)
            .strip_prefix("app_")
            .build();
        metrics::with_local_recorder(&rec, || {
            metrics::counter!("app_requests", "tenant" => "acme/web", "route" => "/a").increment(3);
            metrics::counter!("app_requests", "tenant" => "acme/api").increment(4);
            metrics::counter!("app_requests").increment(1);
            metrics::gauge!("app_inflight", "tenant" => "/acme/web").set(5.0);
            metrics::gauge!("app_inflight", "tenant" => "acme/web", "x" => "y").set(2.0);
            metrics::gauge!("app_inflight", "tenant" => "acme/api").increment(7.4);
            metrics::gauge!("app_inflight", "tenant" => "acme/api").decrement(1.0);
            metrics::gauge!("app_mem", "tenant" => "acme/api", "node" => "1").set(4096.0);
        });
        stats.flush_forced(&stats.root()).unwrap();
        let acme = stats.lookup("/acme").unwrap();
        let web = stats.lookup("/acme/web").unwrap();
        assert_eq!(stats.read(&web, req).unwrap(), 3);
        assert_eq!(stats.read(&acme, req).unwrap(), 7);
        assert_eq!(stats.read(&stats.root(), req).unwrap(), 8);
        // Two keys of one (group, item) share the gauge: the last set wins.
        assert_eq!(stats.read(&web, inflight).unwrap(), 2);
        assert_eq!(stats.read(&acme, inflight).unwrap(), 2 + 6);
        assert_eq!(stats.read_node(&acme, mem, Some(1)).unwrap(), 4096);
        assert_eq!(stats.read_node(&acme, mem, Some(0)).unwrap(), 0);
        assert!(rec.unmapped().is_empty(), "{:?}", rec.unmapped());
    }

    #[test]
    fn unmappable_keys_get_noops_and_are_listed() {
        let (stats, req, ..) = setup();
        let rec = HierRecorder::builder(stats.clone())
            .group_label("tenant")
            .build();
        metrics::with_local_recorder(&rec, || {
            metrics::counter!("nope").increment(1);
            metrics::counter!("requests", "tenant" => "missing").increment(1);
            metrics::gauge!("requests").set(1.0);
            metrics::gauge!("mem").set(1.0);
            metrics::gauge!("mem", "node" => "2").set(1.0);
            metrics::histogram!("requests").record(1.0);
            metrics::counter!("requests", "tenant" => "..").increment(1);
        });
        stats.flush_forced(&stats.root()).unwrap();
        assert_eq!(stats.read(&stats.root(), req).unwrap(), 0);
        let u = rec.unmapped();
        assert_eq!(u.len(), 7, "{u:?}");
        assert!(u
            .iter()
            .any(|(k, r)| k == "counter nope" && r.contains("no item")));
        assert!(u.iter().any(|(k, _)| k == "histogram requests"));
        assert!(u
            .iter()
            .any(|(k, r)| k == "gauge requests" && r.contains("event")));
    }

    #[test]
    fn absolute_adds_only_increases_and_handles_are_bound() {
        let (stats, req, ..) = setup();
        let rec = HierRecorder::builder(stats.clone())
            .alias("http_total", "requests")
            .build();
        let key = Key::from_name("http_total");
        let meta = Metadata::new("t", metrics::Level::INFO, None);
        let c = rec.register_counter(&key, &meta);
        c.absolute(10);
        c.absolute(4);
        c.absolute(12);
        c.increment(1);
        stats.flush_forced(&stats.root()).unwrap();
        assert_eq!(stats.read(&stats.root(), req).unwrap(), 13);
        metrics::with_local_recorder(&rec, || {
            metrics::describe_counter!("http_total", "HTTP requests served");
        });
        assert_eq!(
            rec.descriptions(),
            vec![("requests".to_string(), "HTTP requests served".to_string())]
        );
    }

    #[test]
    fn concurrent_sets_and_increments_sum_exactly() {
        let (stats, _, inflight, _) = setup();
        let rec = HierRecorder::builder(stats.clone()).build();
        let key = Key::from_name("inflight");
        let meta = Metadata::new("t", metrics::Level::INFO, None);
        let g = rec.register_gauge(&key, &meta);
        std::thread::scope(|s| {
            for t in 0..2 {
                let g = g.clone();
                s.spawn(move || {
                    for i in 0..10_000 {
                        if i % 3 == 0 {
                            g.set((i + t) as f64);
                        } else {
                            g.increment(1.0);
                        }
                    }
                });
            }
        });
        g.set(42.0);
        stats.flush_forced(&stats.root()).unwrap();
        assert_eq!(stats.read_signed(&stats.root(), inflight).unwrap(), 42);
    }
}
