//! Rendering a tree (or a subtree) as OpenMetrics or Prometheus text
//! exposition.
//!
//! # What a scrape shows
//!
//! One metric family per exposed schema item, every group of the exported
//! subtree a sample of it, labelled with its path:
//!
//! ```text
//! # TYPE memcg_anon_pages gauge
//! # UNIT memcg_anon_pages pages
//! # HELP memcg_anon_pages hierstat per-node state item `anon` (pages): the group and its descendants, summed over NUMA nodes.
//! memcg_anon_pages{path="/"} 4608
//! memcg_anon_pages{path="/system.slice"} 4096
//! ...
//! # TYPE memcg_pgfault counter
//! # HELP memcg_pgfault hierstat event item `pgfault` (count): the group and its descendants.
//! memcg_pgfault_total{path="/"} 123
//! ```
//!
//! By default a scrape has exactly one sample per item and group (what the
//! kernel's `memory.stat` shows); four builder switches change that:
//!
//! * [`ExporterBuilder::allow_items`] / [`ExporterBuilder::deny_items`]:
//!   which items (exact names or `prefix*` patterns; a pattern that matches
//!   no item is an error at build time);
//! * [`ExporterBuilder::per_node`]: per-NUMA-node items once per node with a
//!   `node` label (`memory.numa_stat`) instead of their total;
//! * [`ExporterBuilder::local`]: a `local_` copy of every family with the
//!   groups' own shares;
//! * [`ExporterBuilder::bounds`]: one more family, each group's error bound.
//!
//! In detail:
//!
//! * **names**: `prefix` + the item name (characters outside
//!   `[a-zA-Z0-9_]` become `_`) + the unit (`_bytes`, `_pages`; `count`
//!   items have none) as OpenMetrics requires of a family with a `# UNIT`;
//!   the type is the schema's: events and per-node events
//!   ([`ItemKind::Event`], [`ItemKind::NodeEvent`], monotonic, such as the
//!   `workingset_*` items of the lab's `memory.stat` schema) are counters,
//!   whose samples take the `_total` suffix; states and per-node states
//!   ([`ItemKind::State`], [`ItemKind::NodeState`], signed) are gauges. An
//!   item that only counts up but is declared as a state is a gauge:
//!   declare it as an event to get a counter.
//! * **values** are the hierarchical aggregates ([`HierStats::read`]); with
//!   [`ExporterBuilder::local`] each item also gets a `local_` family with
//!   the group's own share ([`HierStats::read_local`]), so that
//!   `parent = Σ children + local(parent)` can be checked from outside;
//! * **per-NUMA-node** items: one sample with the total over nodes, or with
//!   [`ExporterBuilder::per_node`] one sample per node with a `node` label
//!   (the total is then their sum: `sum without (node)`, which also works
//!   on the totals);
//! * **error bounds**: with [`ExporterBuilder::bounds`] (always under
//!   [`ScrapePolicy::Bounded`]) a gauge `prefix` + `error_bound_pages` holds
//!   each group's bound ([`HierStats::error_bound_pages`]) in pages of
//!   update magnitude, `+Inf` where the policy gives none (or it saturates);
//! * **each sample's bound**: with [`ExporterBuilder::sample_bounds`]
//!   (always under [`ScrapePolicy::Within`]) every hierarchical family
//!   `prefix` + item + unit gets a companion gauge `prefix` + item +
//!   `_bound` + unit (the unit stays last, as OpenMetrics asks) with the
//!   same labels: the sample's error bound in the item's unit (`+Inf`
//!   where there is none), so that `value − bound ≤ exact ≤ value + bound`
//!   for an update-free moment, and an alert can say "at least 90%" as
//!   `(memcg_anon_pages - memcg_anon_bound_pages) / limit > 0.9`;
//! * **formats**: OpenMetrics 1.0 (`# TYPE`, `# UNIT`, `# HELP`, family
//!   names without `_total`, `# EOF`) or the Prometheus text format 0.0.4
//!   (`# HELP`, `# TYPE` on the sample name, no units), chosen per scrape
//!   from the `Accept` header ([`Format::from_accept`]).
//!
//! # Sizing a scrape
//!
//! A scrape has `groups ×` [`Exporter::samples_per_group`] samples: one per
//! exposed item, the node count for each per-node item under
//! [`per_node`](ExporterBuilder::per_node), twice that with
//! [`local`](ExporterBuilder::local), plus one with
//! [`bounds`](ExporterBuilder::bounds). A sample line is the metric name,
//! the escaped group path and the value: its bytes are mostly the path's, so
//! deep trees with long names (systemd's) cost most; the family headers are
//! written once per scrape.
//!
//! Measured (`cargo test -p hierstat-exporter --test scrape_size`, which
//! fails when this table drifts) on the `serve_workload` example's tree with
//! 100 pods: 318 groups, the lab's `memory.stat` schema (`models::memcg`:
//! 58 items, 32 of them per node, 2 nodes), prefix `memcg_`, every item set
//! in every group; bytes are OpenMetrics (the Prometheus text format differs
//! by under 0.1%):
//!
//! | configuration | samples per group | samples | bytes per group | bytes per scrape |
//! |---|---:|---:|---:|---:|
//! | defaults | 58 | 18,444 | 7,573 | 2,408,169 |
//! | `per_node(true)` | 90 | 28,620 | 12,330 | 3,920,798 |
//! | `local(true)` | 116 | 36,888 | 15,483 | 4,923,618 |
//! | `bounds(true)` | 59 | 18,762 | 7,697 | 2,447,673 |
//! | `per_node(true).local(true).bounds(true)` | 181 | 57,558 | 25,297 | 8,044,508 |
//! | `allow_items` (the dashboard example) | 29 | 9,222 | 3,842 | 1,221,667 |
//!
//! The defaults keep every item and drop what the tree already implies:
//! the per-node split (its total is the sample; a NUMA dashboard turns
//! [`per_node`](ExporterBuilder::per_node) on) and the local copies
//! (`local = value − Σ children's values`); with the bounds, every family
//! on is over three times the defaults' samples and bytes. To size a larger tree, multiply the bytes per group
//! by the group count (10,000 such groups: ~75 MB per scrape with the
//! defaults, so choose the items a dashboard needs):
//!
//! ```
//! use hierstat::{Config, HierStats, Preset};
//! use hierstat_exporter::Exporter;
//!
//! let ms = models::memcg::MemcgSchema::new(2)?;
//! let stats = HierStats::new(ms.schema().clone(), Config::preset(Preset::Hierstat))?;
//! let exporter = Exporter::builder(stats)
//!     .prefix("memcg_")
//!     .allow_items([
//!         "anon", "file", "kernel", "shmem", "file_mapped", "file_dirty", "file_writeback",
//!         "active_*", "inactive_*", "unevictable", "slab_*", "workingset_*",
//!         "pgfault", "pgmajfault", "pgscan_*", "pgsteal_*",
//!     ])
//!     .build()?;
//! assert_eq!(exporter.samples_per_group(), 29);
//!
//! // A name the schema lacks is an error, not a family that silently vanishes.
//! let typo = Exporter::builder(exporter.stats().clone()).allow_items(["workingset_refaults"]);
//! assert!(matches!(typo.build(), Err(hierstat_exporter::Error::UnknownItem(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Consistency
//!
//! Each render reads every group's last flushed aggregates after the
//! [`ScrapePolicy`]'s flush. Flushes are the only writers of aggregates, so
//! a render that no other flush overlaps shows one consistent cut of the
//! tree, where every parent equals the sum of its children plus its own
//! share. A concurrent flush (a background flusher, another reader) can
//! land between two groups' reads: each value is then exact as of a slightly
//! different flush, and the identity holds again at the next scrape.

use crate::error::Error;
use crate::selection::{ItemSelection, Tolerances};
use hierstat::sim::{Simulator as _, WorkSink};
use hierstat::{
    FlushKind, FlushOutcome, Group, HierStats, ItemId, ItemKind, NodeItemId, OnBusy, ReadItem,
    Tolerance, Unit, Within, WithinFlush,
};
use std::collections::HashMap;

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenMetrics 1.0.0 text (`application/openmetrics-text`), with
    /// `# UNIT` lines and the closing `# EOF`.
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain`), what `promtool check
    /// metrics` and most tools read.
    Prometheus,
}

impl Format {
    /// The `Content-Type` of the format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// Chooses the format for a request's `Accept` header: OpenMetrics when
    /// the client lists `application/openmetrics-text` with a quality at
    /// least that of `text/plain` (Prometheus 2.x sends `1.0` vs `0.5`),
    /// else the Prometheus text format (also for no header, or `*/*` only,
    /// as `curl` sends).
    pub fn from_accept(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        let (mut om, mut text) = (0.0f32, 0.0f32);
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if media.eq_ignore_ascii_case("application/openmetrics-text") {
                om = om.max(q);
            } else if media.eq_ignore_ascii_case("text/plain") {
                text = text.max(q);
            }
        }
        if om > 0.0 && om >= text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }
}

/// What a render does before reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScrapePolicy {
    /// Force-flush the exported subtree ([`HierStats::flush_forced`]) and
    /// read: every value is exact as of the scrape. The flush costs what
    /// was updated since the last one (hierstat flushes visit only updated
    /// groups), so at a 15 s scrape interval it is cheap.
    #[default]
    Flush,
    /// Threshold-guarded flush ([`HierStats::flush`]: flushes only when the
    /// error could exceed the policy's threshold), then read; each group's
    /// error bound is exported so that dashboards can show `value ± bound`.
    Bounded,
    /// Read the last flushed values without flushing: for trees that a
    /// background flusher ([`HierStats::start_flusher`]) or the application
    /// keeps fresh.
    Cached,
    /// Read every group within each item's tolerance
    /// ([`ExporterBuilder::tolerance`], [`ExporterBuilder::item_tolerance`];
    /// [`Tolerance::EXACT`] unless set) with one partial flush of the
    /// exported subtree ([`HierStats::read_subtree_within`]): a scrape
    /// flushes only the subtrees where some group's bound does not fit its
    /// budget. Each sample's bound is exported beside it
    /// ([`ExporterBuilder::sample_bounds`]). A `memory.stat`-like schema
    /// has many items at 0, which a purely relative tolerance must read
    /// exactly: [`Tolerance::Either`] (1%, or a few pages) suits it.
    Within,
}

/// Where a family's values come from.
#[derive(Debug, Clone, Copy)]
enum Source {
    Item(ItemId),
    /// A per-node item, one sample per NUMA node.
    Node(NodeItemId),
    /// A per-node item's total over nodes, one sample.
    NodeTotal(NodeItemId),
    Bound,
    /// The bound of another family's samples (the same reads).
    SampleBound(Value),
}

/// What a value family reads, for its bound's companion family.
#[derive(Debug, Clone, Copy)]
enum Value {
    Item(ItemId),
    Node(NodeItemId),
    NodeTotal(NodeItemId),
}

/// One metric family, its headers rendered once at build time.
#[derive(Debug, Clone)]
struct Family {
    source: Source,
    local: bool,
    /// Under [`ScrapePolicy::Within`], where this family's values (or
    /// bounds) are in a group's tolerance reads (one per node for a
    /// per-node family).
    read_at: Option<usize>,
    /// Sample name (the family name plus `_total` for counters).
    sample: String,
    /// The sample name and `{`, what every sample line starts with.
    open: String,
    /// `# TYPE`, `# UNIT`, `# HELP` lines (OpenMetrics).
    om_header: String,
    /// `# HELP`, `# TYPE` lines (Prometheus text).
    prom_header: String,
}

/// What one render did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendered {
    /// Groups exported.
    pub groups: usize,
    /// Sample lines written.
    pub samples: usize,
    /// The scrape policy's flush, if it ran one (not under
    /// [`ScrapePolicy::Within`]: see `within`).
    pub flush: Option<FlushOutcome>,
    /// Under [`ScrapePolicy::Within`]: what the shared flush did.
    pub within: Option<WithinFlush>,
    /// Under [`ScrapePolicy::Within`]: samples whose bound does not fit
    /// their tolerance (saturated items only: the scrape waits for a
    /// running flush rather than return a bound over budget).
    pub unmet: usize,
}

/// Configures an [`Exporter`]; start with [`Exporter::builder`].
#[derive(Debug, Clone)]
pub struct ExporterBuilder {
    stats: HierStats,
    root: Option<Group>,
    prefix: String,
    path_label: String,
    node_label: String,
    bounds: bool,
    local: bool,
    per_node: bool,
    items: ItemSelection,
    policy: ScrapePolicy,
    help: HashMap<String, String>,
    renames: HashMap<String, String>,
    tolerances: Tolerances,
    sample_bounds: bool,
}

impl ExporterBuilder {
    /// Exports only the subtree of `group` (default: the whole tree).
    pub fn subtree(mut self, group: Group) -> Self {
        self.root = Some(group);
        self
    }

    /// Prefix of every metric name (default `hierstat_`; may be empty).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    /// Name of the label holding the group path (default `path`).
    pub fn path_label(mut self, name: &str) -> Self {
        self.path_label = name.to_string();
        self
    }

    /// Name of the label holding the NUMA node of per-node items (default
    /// `node`).
    pub fn node_label(mut self, name: &str) -> Self {
        self.node_label = name.to_string();
        self
    }

    /// Also exports each group's error bound as a gauge (always on under
    /// [`ScrapePolicy::Bounded`]).
    pub fn bounds(mut self, on: bool) -> Self {
        self.bounds = on;
        self
    }

    /// Also exports each item's local values (the group's own updates, not
    /// its descendants') as `prefix` + `local_` + item families (default
    /// off). Doubles the samples of a scrape; what it adds is derivable from
    /// the hierarchical values (`parent − Σ children`), so it is for
    /// checking that identity from outside and for trees whose inner groups
    /// do their own work.
    pub fn local(mut self, on: bool) -> Self {
        self.local = on;
        self
    }

    /// Exports per-NUMA-node items once per node, with the node label
    /// (default off: one sample per group with the item's total over nodes,
    /// as the kernel's `memory.stat` shows it beside `memory.numa_stat`).
    /// Multiplies those items' samples by the schema's node count; the
    /// family names are the same either way, so `sum without (node)` queries
    /// keep working when it is turned off.
    pub fn per_node(mut self, on: bool) -> Self {
        self.per_node = on;
        self
    }

    /// Exposes only the items that one of `patterns` matches (default: every
    /// item of the schema). A pattern is an item's exact schema name
    /// (`"anon"`) or a prefix ending in `*` (`"workingset_*"`; `"*"` is every
    /// item); they match the schema's names, not the metric names. Calls
    /// accumulate; an empty list exposes no item (only the error bounds, if
    /// on). [`deny_items`](Self::deny_items) applies after it.
    ///
    /// Every pattern must match an item: [`build`](Self::build) fails with
    /// [`Error::UnknownItem`] for an exact name the schema lacks and
    /// [`Error::UnmatchedPattern`] for a prefix that matches nothing.
    pub fn allow_items<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.items.allow(patterns);
        self
    }

    /// Hides the items that one of `patterns` matches (patterns as in
    /// [`allow_items`](Self::allow_items), checked the same way); calls
    /// accumulate.
    pub fn deny_items<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.items.deny(patterns);
        self
    }

    /// The scrape policy (default [`ScrapePolicy::Flush`]).
    pub fn policy(mut self, policy: ScrapePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The tolerance of every item under [`ScrapePolicy::Within`]
    /// (default [`Tolerance::EXACT`]), in the item's unit or relative to
    /// each sample's value; [`item_tolerance`](Self::item_tolerance)
    /// overrides it per item.
    pub fn tolerance(mut self, tolerance: Tolerance) -> Self {
        self.tolerances.set_default(tolerance);
        self
    }

    /// The tolerance of the items `pattern` matches (an exact schema name
    /// or a `prefix*`, as [`allow_items`](Self::allow_items)'); the last
    /// matching call wins. A per-node item's tolerance applies to its total
    /// and to each node's value alike. [`build`](Self::build) checks the
    /// pattern and the tolerance.
    pub fn item_tolerance(mut self, pattern: &str, tolerance: Tolerance) -> Self {
        self.tolerances.set(pattern.to_string(), tolerance);
        self
    }

    /// Also exports each hierarchical sample's error bound, in the item's
    /// unit, as a companion family `…_bound` (see the [module
    /// docs](self)); always on under [`ScrapePolicy::Within`]. Under the
    /// other policies the bound is [`HierStats::read_bounded`]'s.
    pub fn sample_bounds(mut self, on: bool) -> Self {
        self.sample_bounds = on;
        self
    }

    /// Exposes `item` under `name` instead of its schema name: its families
    /// become `prefix` + `name` (sanitized as item names are) + the unit
    /// suffix. For names that read badly as metric names, e.g. the
    /// `memory.stat` item `sec_pagetables`, whose `memcg_sec_pagetables_pages`
    /// `promtool check metrics` reports as an abbreviated unit (`sec`).
    /// Allow and deny patterns and help texts still use the schema name.
    pub fn rename(mut self, item: &str, name: &str) -> Self {
        self.renames.insert(item.to_string(), name.to_string());
        self
    }

    /// Sets the `# HELP` text of an item (default: its kind, unit and
    /// scope).
    pub fn help(mut self, item: &str, text: &str) -> Self {
        self.help.insert(item.to_string(), text.to_string());
        self
    }

    /// Sets the `# HELP` texts of several items, e.g. the descriptions a
    /// [`HierRecorder`](crate::HierRecorder) collected.
    pub fn helps<I, K, V>(mut self, texts: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.help
            .extend(texts.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Validates the names and renders the families' headers.
    ///
    /// # Errors
    /// [`Error::InvalidPrefix`], [`Error::InvalidLabel`] (also for a path
    /// label equal to the node label), [`Error::NameCollision`] when two
    /// exposed items sanitize to the same metric name, [`Error::UnknownItem`]
    /// for a help text, a rename or an exact allow/deny name of an item the
    /// schema lacks, [`Error::UnmatchedPattern`] for an allow/deny prefix that
    /// matches no item, [`Error::Hierstat`] for an invalid tolerance
    /// ([`hierstat::Error::InvalidTolerance`]).
    pub fn build(self) -> Result<Exporter, Error> {
        if !valid_prefix(&self.prefix) {
            return Err(Error::InvalidPrefix(self.prefix));
        }
        for l in [&self.path_label, &self.node_label] {
            if !valid_label_name(l) {
                return Err(Error::InvalidLabel(l.clone()));
            }
        }
        if self.path_label == self.node_label {
            return Err(Error::InvalidLabel(self.node_label));
        }
        let schema = self.stats.schema();
        if let Some(item) = self
            .help
            .keys()
            .find(|k| schema.item(k).is_err() && schema.node_item(k).is_err())
        {
            return Err(Error::UnknownItem(item.clone()));
        }
        self.items.check(schema)?;
        self.tolerances.check(schema)?;
        if let Some(item) = self
            .renames
            .keys()
            .find(|k| !schema.items().iter().any(|i| &i.name == *k))
        {
            return Err(Error::UnknownItem(item.clone()));
        }
        let mut names: HashMap<String, String> = HashMap::new();
        let mut claim = |name: &str, owner: &str| -> Result<(), Error> {
            match names.insert(name.to_string(), owner.to_string()) {
                Some(first) if first != owner => Err(Error::NameCollision {
                    name: name.to_string(),
                    first,
                    second: owner.to_string(),
                }),
                _ => Ok(()),
            }
        };
        let mut families = Vec::new();
        let within = self.policy == ScrapePolicy::Within;
        let sample_bounds = self.sample_bounds || within;
        // Under `Within`, every hierarchical value is a tolerance read.
        let mut reads: Vec<(ReadItem, Tolerance)> = Vec::new();
        let scopes: &[bool] = if self.local { &[false, true] } else { &[false] };
        for &local in scopes {
            for info in schema
                .items()
                .iter()
                .filter(|i| self.items.exposes(&i.name))
            {
                // Exhaustive: a new kind of item must decide its type here.
                let (source, value, counter) = match info.kind {
                    ItemKind::NodeState | ItemKind::NodeEvent => {
                        let item = schema.node_item(&info.name)?;
                        let (source, value) = if self.per_node {
                            (Source::Node(item), Value::Node(item))
                        } else {
                            (Source::NodeTotal(item), Value::NodeTotal(item))
                        };
                        (source, value, info.kind == ItemKind::NodeEvent)
                    }
                    ItemKind::State | ItemKind::Event => {
                        let item = schema.item(&info.name)?;
                        (
                            Source::Item(item),
                            Value::Item(item),
                            info.kind == ItemKind::Event,
                        )
                    }
                };
                let mut base = self.prefix.clone();
                if local {
                    base.push_str("local_");
                }
                let name = self.renames.get(&info.name).unwrap_or(&info.name);
                base.push_str(&sanitize(name));
                if counter {
                    // The `_total` suffix is the sample's, not the family's.
                    if let Some(stripped) = base.strip_suffix("_total") {
                        base.truncate(stripped.len());
                    }
                }
                let unit = unit_suffix(info.unit);
                // The bound family's name: the item's, `_bound`, the unit.
                let mut bound_base = base.clone();
                if let Some(u) = unit {
                    if let Some(stripped) = bound_base.strip_suffix(&format!("_{u}")) {
                        bound_base.truncate(stripped.len());
                    }
                }
                bound_base.push_str("_bound");
                if let Some(u) = unit {
                    if !base.ends_with(&format!("_{u}")) {
                        base.push('_');
                        base.push_str(u);
                    }
                    bound_base.push('_');
                    bound_base.push_str(u);
                }
                let base = leading_digit_safe(base);
                let bound_base = leading_digit_safe(bound_base);
                let owner = if local {
                    format!("local {}", info.name)
                } else {
                    info.name.clone()
                };
                let sample = if counter {
                    format!("{base}_total")
                } else {
                    base.clone()
                };
                claim(&base, &owner)?;
                claim(&sample, &owner)?;
                let help = self
                    .help
                    .get(&info.name)
                    .map(|h| {
                        if local {
                            format!("{h} (this group only, descendants excluded)")
                        } else {
                            h.clone()
                        }
                    })
                    .unwrap_or_else(|| {
                        default_help(info.kind, &info.name, info.unit, local, self.per_node)
                    });
                let read_at = (within && !local).then(|| {
                    let at = reads.len();
                    let t = self.tolerances.of(&info.name);
                    match value {
                        Value::Item(i) => reads.push((ReadItem::Item(i), t)),
                        Value::NodeTotal(i) => reads.push((ReadItem::Node(i, None), t)),
                        Value::Node(i) => reads
                            .extend((0..schema.nodes()).map(|n| (ReadItem::Node(i, Some(n)), t))),
                    }
                    at
                });
                let mut family = Family::new(source, local, base, sample, counter, unit, &help);
                family.read_at = read_at;
                families.push(family);
                if sample_bounds && !local {
                    claim(&bound_base, &format!("bound of {}", info.name))?;
                    let mut bound = Family::new(
                        Source::SampleBound(value),
                        false,
                        bound_base.clone(),
                        bound_base,
                        false,
                        unit,
                        &format!(
                            "hierstat error bound of `{}` ({}): the largest distance of each sample from the exact value (+Inf where none is known).",
                            info.name,
                            info.unit.name()
                        ),
                    );
                    bound.read_at = read_at;
                    families.push(bound);
                }
            }
        }
        let bounds = self.bounds || self.policy == ScrapePolicy::Bounded;
        if bounds {
            let name = leading_digit_safe(format!("{}error_bound_pages", self.prefix));
            claim(&name, "error bound")?;
            families.push(Family::new(
                Source::Bound,
                false,
                name.clone(),
                name,
                false,
                Some("pages"),
                "hierstat error bound of each group's hierarchical values, in pages of unflushed update magnitude (multiply by 4096 for byte items); +Inf where the policy gives no bound without a flush.",
            ));
        }
        Ok(Exporter {
            root: self.root.unwrap_or_else(|| self.stats.root()),
            stats: self.stats,
            path_label: self.path_label,
            node_label: self.node_label,
            policy: self.policy,
            families,
            reads,
        })
    }
}

impl Family {
    /// Samples per group: one per NUMA node for a per-node family, else one.
    fn width(&self, nodes: usize) -> usize {
        match self.source {
            Source::Node(_) | Source::SampleBound(Value::Node(_)) => nodes,
            Source::Item(_) | Source::NodeTotal(_) | Source::Bound | Source::SampleBound(_) => 1,
        }
    }

    /// Whether a sample of this family can be `+Inf` (`UNBOUNDED`).
    fn is_bound(&self) -> bool {
        matches!(self.source, Source::Bound | Source::SampleBound(_))
    }

    /// Whether each sample of this family has a `node` label.
    fn per_node(&self) -> bool {
        matches!(
            self.source,
            Source::Node(_) | Source::SampleBound(Value::Node(_))
        )
    }

    fn new(
        source: Source,
        local: bool,
        family: String,
        sample: String,
        counter: bool,
        unit: Option<&str>,
        help: &str,
    ) -> Family {
        let kind = if counter { "counter" } else { "gauge" };
        let mut om_header = format!("# TYPE {family} {kind}\n");
        if let Some(u) = unit {
            om_header.push_str(&format!("# UNIT {family} {u}\n"));
        }
        om_header.push_str(&format!("# HELP {family} {}\n", escape_help(help, true)));
        let prom_header = format!(
            "# HELP {sample} {}\n# TYPE {sample} {kind}\n",
            escape_help(help, false)
        );
        Family {
            open: format!("{sample}{{"),
            source,
            local,
            read_at: None,
            sample,
            om_header,
            prom_header,
        }
    }
}

/// Renders a [`HierStats`] tree (or one subtree) as text exposition.
/// Cheap to share: [`render`](Self::render) takes `&self` and keeps no
/// state between scrapes.
#[derive(Debug, Clone)]
pub struct Exporter {
    stats: HierStats,
    root: Group,
    path_label: String,
    node_label: String,
    policy: ScrapePolicy,
    families: Vec<Family>,
    /// Under [`ScrapePolicy::Within`], each group's tolerance reads.
    reads: Vec<(ReadItem, Tolerance)>,
}

impl Exporter {
    /// Starts configuring an exporter of `stats`.
    pub fn builder(stats: HierStats) -> ExporterBuilder {
        ExporterBuilder {
            stats,
            root: None,
            prefix: "hierstat_".to_string(),
            path_label: "path".to_string(),
            node_label: "node".to_string(),
            bounds: false,
            local: false,
            per_node: false,
            items: ItemSelection::default(),
            policy: ScrapePolicy::Flush,
            help: HashMap::new(),
            renames: HashMap::new(),
            tolerances: Tolerances::default(),
            sample_bounds: false,
        }
    }

    /// The exported tree.
    pub fn stats(&self) -> &HierStats {
        &self.stats
    }

    /// The root of the exported subtree.
    pub fn root(&self) -> &Group {
        &self.root
    }

    /// The scrape policy.
    pub fn policy(&self) -> ScrapePolicy {
        self.policy
    }

    /// Sample names of the families, in render order (for tests and
    /// dashboards).
    pub fn sample_names(&self) -> impl Iterator<Item = &str> {
        self.families.iter().map(|f| f.sample.as_str())
    }

    /// Samples (series) each group adds to a scrape: one per exposed
    /// family, times the node count for per-node families. A scrape has
    /// this many times the exported groups ([`Rendered::samples`]).
    pub fn samples_per_group(&self) -> usize {
        let nodes = self.stats.schema().nodes();
        self.families.iter().map(|f| f.width(nodes)).sum()
    }

    /// Applies the scrape policy and appends the exposition to `out`.
    ///
    /// # Errors
    /// An engine error from a read (none is expected: every group and item
    /// comes from this tree).
    pub fn render(&self, format: Format, out: &mut Vec<u8>) -> Result<Rendered, Error> {
        self.render_with(format, out, &mut ())
    }

    /// [`render`](Self::render), reporting the engine work of the scrape
    /// policy's flush and reads to `work` (see [`hierstat::sim`]): what
    /// the lab prices, and what compares scrape policies.
    ///
    /// # Errors
    /// As [`render`](Self::render).
    pub fn render_with<W: WorkSink>(
        &self,
        format: Format,
        out: &mut Vec<u8>,
        work: &mut W,
    ) -> Result<Rendered, Error> {
        // Under `Within`: each group with its tolerance reads, in the
        // engine's order (parents first, children by name: `subtree`'s).
        let mut within_reads: Vec<Within> = Vec::new();
        let mut within = None;
        let mut unmet = 0;
        let (flush, groups) = match self.policy {
            ScrapePolicy::Flush => (
                Some(self.stats.flush_with(&self.root, FlushKind::Forced, work)?),
                self.subtree(),
            ),
            ScrapePolicy::Bounded => (
                Some(self.stats.flush_with(&self.root, FlushKind::Read, work)?),
                self.subtree(),
            ),
            ScrapePolicy::Cached => (None, self.subtree()),
            ScrapePolicy::Within => {
                let mut groups = Vec::new();
                within = Some(self.stats.read_subtree_within_with(
                    &self.root,
                    &self.reads,
                    OnBusy::Wait,
                    |g, w| {
                        groups.push(g.clone());
                        unmet += w.iter().filter(|w| !w.met).count();
                        within_reads.extend_from_slice(w);
                    },
                    work,
                )?);
                (None, groups)
            }
        };
        let per_group = self.reads.len();
        // Each group's `path="..."` label, escaped once per render into one
        // arena rather than once per sample (in the gather loop below).
        let mut arena = String::with_capacity(groups.len() * (self.path_label.len() + 40));
        let mut spans = Vec::with_capacity(groups.len());
        let nodes = self.stats.schema().nodes();
        // Gather, group-major: one visit per group escapes its path and
        // reads all its values while its node and aggregate arrays are in
        // cache (rendering is bound by those misses at 10k groups and more;
        // family-major reads fetched every node once per family).
        // `values[column × groups + group]`, a column per family and node;
        // a bound of `UNBOUNDED` renders as `+Inf`.
        const UNBOUNDED: u64 = u64::MAX;
        let width = |f: &Family| f.width(nodes);
        let columns: usize = self.families.iter().map(width).sum();
        let n = groups.len();
        let mut values = vec![0u64; columns * n];
        // Consuming the handles here releases each while its node is in
        // cache, instead of a separate pass over every node at the end.
        for (gi, g) in groups.into_iter().enumerate() {
            let g = &g;
            let reads = &within_reads[(gi * per_group).min(within_reads.len())..];
            let start = arena.len();
            arena.push_str(&self.path_label);
            arena.push_str("=\"");
            escape_label_value(g.path(), &mut arena);
            arena.push('"');
            spans.push(start..arena.len());
            let mut col = 0;
            for f in &self.families {
                if let Some(at) = f.read_at {
                    // A tolerance read's value or bound.
                    for i in 0..width(f) {
                        let r = reads[at + i].read;
                        values[(col + i) * n + gi] = if f.is_bound() {
                            r.bound.unwrap_or(UNBOUNDED)
                        } else {
                            r.value
                        };
                    }
                    col += width(f);
                    continue;
                }
                match f.source {
                    Source::SampleBound(v) => {
                        for i in 0..width(f) {
                            values[(col + i) * n + gi] = self.sample_bound(g, v)?;
                        }
                    }
                    Source::Item(item) => {
                        values[col * n + gi] = if f.local {
                            self.stats.read_local(g, item)?
                        } else {
                            self.stats.read(g, item)?
                        };
                    }
                    Source::NodeTotal(item) => {
                        values[col * n + gi] = if f.local {
                            self.stats.read_node_local(g, item, None)?
                        } else {
                            self.stats.read_node(g, item, None)?
                        };
                    }
                    Source::Node(item) => {
                        for node in 0..nodes {
                            values[(col + node) * n + gi] = if f.local {
                                self.stats.read_node_local(g, item, Some(node))?
                            } else {
                                self.stats.read_node(g, item, Some(node))?
                            };
                        }
                    }
                    Source::Bound => {
                        values[col * n + gi] =
                            self.stats.error_bound_pages(g)?.unwrap_or(UNBOUNDED);
                    }
                }
                col += width(f);
            }
        }
        // What closes a sample's labels: `,node="i"} ` for each node, or `} `.
        let node_labels: Vec<String> = (0..nodes)
            .map(|i| format!(",{}=\"{i}\"}} ", self.node_label))
            .collect();
        out.reserve(columns * (arena.len() + n * 40));
        let mut num = itoa::Buffer::new();
        let mut samples = 0;
        let mut col = 0;
        for f in &self.families {
            out.extend_from_slice(match format {
                Format::OpenMetrics => f.om_header.as_bytes(),
                Format::Prometheus => f.prom_header.as_bytes(),
            });
            for (gi, span) in spans.iter().enumerate() {
                let labels = &arena.as_bytes()[span.clone()];
                for (node, node_label) in node_labels.iter().enumerate().take(width(f)) {
                    let v = values[(col + node) * n + gi];
                    let v = if f.is_bound() && v == UNBOUNDED {
                        &b"+Inf"[..]
                    } else {
                        num.format(v).as_bytes()
                    };
                    let close = if f.per_node() {
                        node_label.as_bytes()
                    } else {
                        b"} "
                    };
                    sample_line(out, &f.open, labels, close, v);
                    samples += 1;
                }
            }
            col += width(f);
        }
        if format == Format::OpenMetrics {
            out.extend_from_slice(b"# EOF\n");
        }
        Ok(Rendered {
            groups: n,
            samples,
            flush,
            within,
            unmet,
        })
    }

    /// A sample's bound in its item's unit outside [`ScrapePolicy::Within`]
    /// (`u64::MAX` for none): [`HierStats::read_bounded`]'s, or for a
    /// per-node item the group's bound in the item's unit.
    fn sample_bound(&self, g: &Group, v: Value) -> Result<u64, Error> {
        const UNBOUNDED: u64 = u64::MAX;
        Ok(match v {
            Value::Item(item) => self.stats.read_bounded(g, item)?.bound.unwrap_or(UNBOUNDED),
            Value::Node(item) | Value::NodeTotal(item) => {
                let unit = self.stats.schema().node_info(item)?.unit;
                self.stats
                    .error_bound_pages(g)?
                    .map_or(UNBOUNDED, |p| unit.from_pages(p))
            }
        })
    }

    /// Applies the scrape policy and returns the exposition as a string.
    ///
    /// # Errors
    /// As [`render`](Self::render).
    pub fn render_to_string(&self, format: Format) -> Result<String, Error> {
        let mut out = Vec::new();
        self.render(format, &mut out)?;
        // The output is built from `str`s and ASCII only.
        Ok(String::from_utf8(out).expect("exposition is UTF-8"))
    }

    /// The exported subtree's live groups, parents before children.
    fn subtree(&self) -> Vec<Group> {
        let all = self.stats.groups();
        if self.root.depth() == 0 {
            return all;
        }
        let p = self.root.path();
        all.into_iter()
            .filter(|g| {
                let q = g.path();
                q.starts_with(p) && (q.len() == p.len() || q.as_bytes()[p.len()] == b'/')
            })
            .collect()
    }
}

/// Appends `name{` + labels + `close` (`} ` or `,node="i"} `) + value +
/// line feed: five copies per sample.
#[inline]
fn sample_line(out: &mut Vec<u8>, open: &str, labels: &[u8], close: &[u8], value: &[u8]) {
    out.extend_from_slice(open.as_bytes());
    out.extend_from_slice(labels);
    out.extend_from_slice(close);
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// Escapes a label value as both formats require: `\` → `\\`, `"` → `\"`,
/// line feed → `\n`.
pub fn escape_label_value(value: &str, out: &mut String) {
    if !value.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(value);
        return;
    }
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Escapes a `# HELP` text: `\` and line feeds in both formats, `"` too in
/// OpenMetrics.
fn escape_help(text: &str, openmetrics: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if openmetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

fn default_help(kind: ItemKind, name: &str, unit: Unit, local: bool, per_node: bool) -> String {
    let (kind, nodes) = match kind {
        ItemKind::State => ("state", ""),
        ItemKind::Event => ("event", ""),
        ItemKind::NodeState if per_node => ("per-node state", ", per NUMA node"),
        ItemKind::NodeState => ("per-node state", ", summed over NUMA nodes"),
        ItemKind::NodeEvent if per_node => ("per-node event", ", per NUMA node"),
        ItemKind::NodeEvent => ("per-node event", ", summed over NUMA nodes"),
    };
    let scope = if local {
        "the group itself, descendants excluded"
    } else {
        "the group and its descendants"
    };
    format!(
        "hierstat {kind} item `{name}` ({}): {scope}{nodes}.",
        unit.name()
    )
}

fn unit_suffix(unit: Unit) -> Option<&'static str> {
    match unit {
        Unit::Bytes => Some("bytes"),
        Unit::Pages => Some("pages"),
        Unit::Count => None,
    }
}

/// Replaces every character outside `[a-zA-Z0-9_]` by `_` (colons are
/// reserved for recording rules).
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "_".to_string()
    } else {
        s
    }
}

fn leading_digit_safe(name: String) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{name}")
    } else {
        name
    }
}

fn valid_prefix(p: &str) -> bool {
    let mut chars = p.chars();
    match chars.next() {
        None => true,
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
            chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        }
        Some(_) => false,
    }
}

fn valid_label_name(l: &str) -> bool {
    let mut chars = l.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            !l.starts_with("__") && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::{Config, Preset, Schema};

    fn tree() -> (HierStats, ItemId, NodeItemId, ItemId) {
        let mut b = Schema::builder();
        let anon = b.state("anon", Unit::Bytes);
        let file = b.node_state("file", Unit::Pages);
        let faults = b.event("pgfault", Unit::Count);
        b.nodes(2);
        let stats = HierStats::new(
            b.build().unwrap(),
            Config::preset(Preset::Hierstat).shards(2),
        )
        .unwrap();
        (stats, anon, file, faults)
    }

    #[test]
    fn accept_header_negotiation() {
        let prom2 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::from_accept(Some(prom2)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(None), Format::Prometheus);
        assert_eq!(Format::from_accept(Some("*/*")), Format::Prometheus);
        assert_eq!(
            Format::from_accept(Some("text/plain;q=1, application/openmetrics-text;q=0.5")),
            Format::Prometheus
        );
        assert_eq!(
            Format::from_accept(Some("application/openmetrics-text;q=0")),
            Format::Prometheus
        );
    }

    #[test]
    fn names_types_units_and_labels() {
        let (stats, anon, file, faults) = tree();
        let g = stats.create(&stats.root(), "a\"b\\c\nd").unwrap();
        stats.add(&g, anon, 4096).unwrap();
        stats.add_node(&g, file, 1, 3).unwrap();
        stats.add(&g, faults, 7).unwrap();
        let e = Exporter::builder(stats.clone())
            .prefix("t_")
            .bounds(true)
            .build()
            .unwrap();
        assert_eq!(
            e.sample_names().collect::<Vec<_>>(),
            [
                "t_anon_bytes",
                "t_file_pages",
                "t_pgfault_total",
                "t_error_bound_pages"
            ]
        );
        assert_eq!(e.samples_per_group(), 4);
        let om = e.render_to_string(Format::OpenMetrics).unwrap();
        assert!(om.contains("# TYPE t_anon_bytes gauge\n# UNIT t_anon_bytes bytes\n"));
        assert!(om.contains("# TYPE t_pgfault counter\n# HELP t_pgfault "));
        assert!(!om.contains("# UNIT t_pgfault"));
        assert!(om.contains("t_pgfault_total{path=\"/a\\\"b\\\\c\\nd\"} 7\n"));
        // Per-node items: their total by default, one sample per node with
        // `per_node`.
        assert!(om.contains("t_file_pages{path=\"/\"} 3\n"), "{om}");
        assert!(om.contains("summed over NUMA nodes"));
        assert!(!om.contains("node=\""));
        assert!(om.contains("t_anon_bytes{path=\"/\"} 4096\n"));
        assert!(om.contains("# TYPE t_error_bound_pages gauge\n"));
        assert!(om.ends_with("# EOF\n"));
        let prom = e.render_to_string(Format::Prometheus).unwrap();
        assert!(prom.contains("# HELP t_pgfault_total "));
        assert!(prom.contains("# TYPE t_pgfault_total counter\n"));
        assert!(!prom.contains("# UNIT") && !prom.contains("# EOF"));

        let e = Exporter::builder(stats.clone())
            .prefix("t_")
            .per_node(true)
            .build()
            .unwrap();
        assert_eq!(e.samples_per_group(), 4);
        let om = e.render_to_string(Format::OpenMetrics).unwrap();
        assert!(om.contains("t_file_pages{path=\"/\",node=\"1\"} 3\n"));
        assert!(om.contains("t_file_pages{path=\"/\",node=\"0\"} 0\n"));
        assert!(om.contains(", per NUMA node."));
    }

    #[test]
    fn switches_and_item_lists_choose_the_families() {
        let (stats, _, file, _) = tree();
        let g = stats.create(&stats.root(), "g").unwrap();
        stats.add_node(&g, file, 0, 2).unwrap();
        stats.add_node(&g, file, 1, 5).unwrap();
        let names = |b: ExporterBuilder| {
            let e = b.prefix("t_").build().unwrap();
            let r = e.render(Format::Prometheus, &mut Vec::new()).unwrap();
            assert_eq!(r.samples, r.groups * e.samples_per_group());
            (
                e.sample_names().map(str::to_string).collect::<Vec<_>>(),
                e.samples_per_group(),
            )
        };
        let b = || Exporter::builder(stats.clone());
        assert_eq!(
            names(b()),
            (
                vec![
                    "t_anon_bytes".into(),
                    "t_file_pages".into(),
                    "t_pgfault_total".into()
                ],
                3
            )
        );
        assert_eq!(names(b().per_node(true)).1, 4);
        assert_eq!(names(b().local(true)).1, 6);
        assert_eq!(names(b().local(true).per_node(true)).1, 8);
        assert_eq!(
            names(b().allow_items(["file", "pg*"]).local(true)),
            (
                vec![
                    "t_file_pages".into(),
                    "t_pgfault_total".into(),
                    "t_local_file_pages".into(),
                    "t_local_pgfault_total".into()
                ],
                4
            )
        );
        assert_eq!(
            names(b().deny_items(["anon"]).bounds(true)).0,
            ["t_file_pages", "t_pgfault_total", "t_error_bound_pages"]
        );
        assert_eq!(names(b().allow_items([""; 0]).bounds(true)).1, 1);
        // The total of a per-node item, local and hierarchical.
        let e = b().local(true).build().unwrap();
        let text = e.render_to_string(Format::Prometheus).unwrap();
        assert!(
            text.contains("hierstat_file_pages{path=\"/\"} 7\n"),
            "{text}"
        );
        assert!(text.contains("hierstat_local_file_pages{path=\"/g\"} 7\n"));
        assert!(text.contains("hierstat_local_file_pages{path=\"/\"} 0\n"));
    }

    #[test]
    fn renamed_items_keep_their_schema_name_in_patterns_and_help() {
        let (stats, _, _, faults) = tree();
        stats.add(&stats.root(), faults, 2).unwrap();
        let e = Exporter::builder(stats)
            .rename("pgfault", "page_faults")
            .allow_items(["pgfault"])
            .local(true)
            .build()
            .unwrap();
        assert_eq!(
            e.sample_names().collect::<Vec<_>>(),
            [
                "hierstat_page_faults_total",
                "hierstat_local_page_faults_total"
            ]
        );
        let text = e.render_to_string(Format::Prometheus).unwrap();
        assert!(text.contains("hierstat_page_faults_total{path=\"/\"} 2\n"));
        assert!(text.contains("event item `pgfault`"));
    }

    #[test]
    fn subtree_exports_only_its_groups() {
        let (stats, anon, _, _) = tree();
        let a = stats.create(&stats.root(), "a").unwrap();
        let ab = stats.create(&a, "b").unwrap();
        let _ab2 = stats.create(&stats.root(), "ab").unwrap();
        stats.add(&ab, anon, 1).unwrap();
        let e = Exporter::builder(stats.clone()).subtree(a).build().unwrap();
        let mut out = Vec::new();
        let r = e.render(Format::Prometheus, &mut out).unwrap();
        assert_eq!(r.groups, 2);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("hierstat_anon_bytes{path=\"/a/b\"} 1\n"));
        assert!(!text.contains("path=\"/ab\""));
        assert!(!text.contains("path=\"/\""));
    }

    #[test]
    fn invalid_names_and_collisions_are_rejected() {
        let (stats, ..) = tree();
        assert!(matches!(
            Exporter::builder(stats.clone()).prefix("1x").build(),
            Err(Error::InvalidPrefix(_))
        ));
        assert!(matches!(
            Exporter::builder(stats.clone()).path_label("__p").build(),
            Err(Error::InvalidLabel(_))
        ));
        assert!(matches!(
            Exporter::builder(stats.clone()).path_label("node").build(),
            Err(Error::InvalidLabel(_))
        ));
        assert!(matches!(
            Exporter::builder(stats.clone()).help("nope", "x").build(),
            Err(Error::UnknownItem(_))
        ));
        assert!(matches!(
            Exporter::builder(stats.clone()).allow_items(["anon", "nope"]).build(),
            Err(Error::UnknownItem(n)) if n == "nope"
        ));
        assert!(matches!(
            Exporter::builder(stats).deny_items(["workingset_*"]).build(),
            Err(Error::UnmatchedPattern(p)) if p == "workingset_*"
        ));
        let mut b = Schema::builder();
        b.state("a.b", Unit::Count);
        b.state("a-b", Unit::Count);
        let s = HierStats::new(b.build().unwrap(), Config::preset(Preset::Hierstat)).unwrap();
        assert!(matches!(
            Exporter::builder(s.clone()).build(),
            Err(Error::NameCollision { .. })
        ));
        assert!(matches!(
            Exporter::builder(s.clone()).rename("a-c", "x").build(),
            Err(Error::UnknownItem(n)) if n == "a-c"
        ));
        assert!(Exporter::builder(s.clone())
            .rename("a-b", "a.c")
            .build()
            .is_ok());
        assert!(matches!(
            Exporter::builder(s.clone())
                .rename("a-b", "c")
                .rename("a.b", "c")
                .build(),
            Err(Error::NameCollision { .. })
        ));
        // Only exposed items can collide.
        assert!(Exporter::builder(s).deny_items(["a-b"]).build().is_ok());
    }

    #[test]
    fn within_policy_exports_each_sample_with_its_bound() {
        let (stats, anon, file, faults) = tree();
        let g = stats.create(&stats.root(), "g").unwrap();
        stats.add(&g, anon, 1 << 30).unwrap();
        stats.add_node(&g, file, 1, 1000).unwrap();
        stats.add(&g, faults, 1000).unwrap();
        let e = Exporter::builder(stats.clone())
            .prefix("t_")
            .per_node(true)
            .policy(ScrapePolicy::Within)
            .tolerance(Tolerance::Relative(0.5))
            .item_tolerance("pgfault", Tolerance::EXACT)
            .build()
            .unwrap();
        assert_eq!(
            e.sample_names().collect::<Vec<_>>(),
            [
                "t_anon_bytes",
                "t_anon_bound_bytes",
                "t_file_pages",
                "t_file_bound_pages",
                "t_pgfault_total",
                "t_pgfault_bound"
            ]
        );
        // Two nodes of file, twice.
        assert_eq!(e.samples_per_group(), 8);
        let mut out = Vec::new();
        let r = e.render(Format::OpenMetrics, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!((r.groups, r.samples, r.unmet), (2, 16, 0));
        assert!(r.within.is_some() && r.flush.is_none());
        // pgfault must be exact: the whole tree was flushed, every bound 0.
        assert!(
            text.contains("t_anon_bytes{path=\"/g\"} 1073741824\n"),
            "{text}"
        );
        assert!(
            text.contains("t_anon_bound_bytes{path=\"/g\"} 0\n"),
            "{text}"
        );
        assert!(text.contains("t_file_bound_pages{path=\"/\",node=\"1\"} 0\n"));
        assert!(text.contains("t_pgfault_bound{path=\"/g\"} 0\n"));
        assert!(text.contains("# TYPE t_anon_bound_bytes gauge\n# UNIT t_anon_bound_bytes bytes\n"));
        // Half of each value: a few more pages need no flush.
        stats.add(&g, faults, 1).unwrap();
        let e = Exporter::builder(stats.clone())
            .policy(ScrapePolicy::Within)
            .tolerance(Tolerance::Relative(0.5))
            .build()
            .unwrap();
        let r = e.render(Format::Prometheus, &mut Vec::new()).unwrap();
        assert_eq!((r.within, r.unmet), (Some(hierstat::WithinFlush::None), 0));
        // Bad tolerances and patterns are build errors.
        assert!(matches!(
            Exporter::builder(stats.clone())
                .tolerance(Tolerance::Relative(f64::NAN))
                .build(),
            Err(Error::Hierstat(hierstat::Error::InvalidTolerance(_)))
        ));
        assert!(matches!(
            Exporter::builder(stats.clone())
                .item_tolerance("nope", Tolerance::EXACT)
                .build(),
            Err(Error::UnknownItem(_))
        ));
        // Under another policy, the bounds are the plain reads'.
        let e = Exporter::builder(stats)
            .policy(ScrapePolicy::Cached)
            .sample_bounds(true)
            .build()
            .unwrap();
        let text = e.render_to_string(Format::Prometheus).unwrap();
        assert!(
            text.contains("hierstat_pgfault_bound{path=\"/g\"} "),
            "{text}"
        );
    }

    #[test]
    fn bounded_policy_exports_bounds_and_infinity_above_threshold() {
        let (stats, anon, _, _) = tree();
        let g = stats.create(&stats.root(), "g").unwrap();
        let e = Exporter::builder(stats.clone())
            .policy(ScrapePolicy::Cached)
            .bounds(true)
            .build()
            .unwrap();
        // Far above any threshold, unflushed: no bound.
        stats.add(&g, anon, 1 << 40).unwrap();
        let text = e.render_to_string(Format::Prometheus).unwrap();
        assert!(
            text.contains("hierstat_error_bound_pages{path=\"/g\"} +Inf\n"),
            "{text}"
        );
        assert!(text.contains("hierstat_anon_bytes{path=\"/g\"} 0\n"));
        let e = Exporter::builder(stats.clone())
            .policy(ScrapePolicy::Bounded)
            .build()
            .unwrap();
        let text = e.render_to_string(Format::Prometheus).unwrap();
        assert!(text.contains(&format!(
            "hierstat_anon_bytes{{path=\"/g\"}} {}\n",
            1u64 << 40
        )));
        assert!(!text.contains("} +Inf"), "{text}");
    }
}
