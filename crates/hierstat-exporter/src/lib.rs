//! hierstat-exporter: a [`hierstat`] tree in a service, seen by Prometheus.
//!
//! Three bridges, each usable alone:
//!
//! * [`Exporter`]: renders a tree (or a subtree) as OpenMetrics or
//!   Prometheus text exposition — one metric family per exposed schema
//!   item (events as counters, states as gauges), the group path as a
//!   label, optionally per-NUMA-node items per node with a `node` label,
//!   each group's own (`local_`) values and its error bound — after the
//!   [`ScrapePolicy`]'s flush (see [`exposition`] for the exact format);
//!   under [`ScrapePolicy::Within`] each item is read within its tolerance
//!   ([`ExporterBuilder::tolerance`], [`ExporterBuilder::item_tolerance`]:
//!   relative, absolute, or the larger of the two) with one partial flush
//!   that leaves whatever already fits, and each sample's bound is a
//!   companion `…_bound` series, so that an alert can say "at least";
//! * [`HierRecorder`]: a [`metrics`] recorder mapping one label (`tenant`,
//!   a path, ...) to a group and the metric name to an item, so that code
//!   written against `metrics::counter!` / `gauge!` gets hierarchical
//!   roll-ups unchanged; registered handles are bound to their (group,
//!   item) and skip every lookup (see [`recorder`]);
//! * [`MetricsServer`]: `/metrics` over HTTP from a background thread (see
//!   [`server`]).
//!
//! Each process exports its own tree; Prometheus (federation, remote write)
//! aggregates a fleet.
//!
//! # What a scrape contains, and its size
//!
//! By default one sample per schema item and group: per-NUMA-node items as
//! their total, no `local_` copies, no error bounds. A scrape then has
//! `groups × items` samples ([`Exporter::samples_per_group`]); the builder
//! chooses more or less: [`ExporterBuilder::allow_items`] and
//! [`ExporterBuilder::deny_items`] (exact item names or `prefix*`; a name
//! the schema lacks is an error when the exporter is built),
//! [`ExporterBuilder::per_node`], [`ExporterBuilder::local`],
//! [`ExporterBuilder::bounds`]. On a systemd-like tree of 318 memory
//! cgroups with the lab's `memory.stat` schema (58 items, 32 per NUMA node,
//! 2 nodes) the defaults write 18,444 samples, 7.6 kB per group, 2.4 MB per
//! scrape; every family on (per node, local, bounds) writes 57,558 samples,
//! 25.3 kB per group, 8.0 MB per scrape. The bytes are mostly the group
//! paths; the [`exposition`] docs have the table for each switch and how to
//! size a larger tree.
//!
//! # Expose your tree to Prometheus
//!
//! (This example is also in the crate's README; a test keeps the two
//! identical.)
//!
//! ```
//! use hierstat::{Config, HierStats, Preset, Schema, Unit};
//! use hierstat_exporter::{Exporter, HierRecorder, MetricsServer};
//!
//! let mut b = Schema::builder();
//! b.event("requests", Unit::Count);
//! let stats = HierStats::new(b.build()?, Config::preset(Preset::Hierstat))?;
//!
//! // Existing `metrics` calls now roll up the tree: tenant="acme/web" is /acme/web.
//! let recorder = HierRecorder::builder(stats.clone()).group_label("tenant").create_groups(true).build();
//! metrics::set_global_recorder(recorder)?;
//! metrics::counter!("requests", "tenant" => "acme/web").increment(1);
//!
//! // Serve /metrics (the tree is flushed at each scrape) until `server` is dropped.
//! let server = MetricsServer::bind("127.0.0.1:0", Exporter::builder(stats).build()?)?;
//! println!("scrape http://{}/metrics", server.local_addr());
//! # use std::io::{Read, Write};
//! # let mut s = std::net::TcpStream::connect(server.local_addr())?;
//! # s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")?;
//! # let mut body = String::new();
//! # s.read_to_string(&mut body)?;
//! # assert!(body.contains("hierstat_requests_total{path=\"/acme/web\"} 1\n"), "{body}");
//! # assert!(body.contains("hierstat_requests_total{path=\"/acme\"} 1\n"), "{body}");
//! # assert!(body.contains("hierstat_requests_total{path=\"/\"} 1\n"), "{body}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod error;
pub mod exposition;
pub mod recorder;
mod selection;
pub mod server;

pub use error::Error;
pub use exposition::{Exporter, ExporterBuilder, Format, Rendered, ScrapePolicy};
pub use metrics;
pub use recorder::{HierRecorder, RecorderBuilder};
pub use server::{MetricsServer, ServerStats};
