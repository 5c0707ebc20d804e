//! Writing a run: one immediate transaction per run.

use super::{sql_err, time, HostFacts, RunId, Store, StoreError};
use lab::report::{Mode, RunReport};
use rusqlite::{params, Transaction, TransactionBehavior};
use std::collections::BTreeSet;
use std::time::SystemTime;

/// Stored text of a [`Mode`].
pub(crate) fn mode_str(m: Mode) -> &'static str {
    match m {
        Mode::Sim => "sim",
        Mode::Real => "real",
        Mode::Kernel => "kernel",
    }
}

/// NaN has no SQLite representation (it would become NULL anyway); store
/// it as NULL explicitly and read NULL back as NaN.
fn real(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

impl Store {
    /// Stores a run with its host facts and start/end times, in one
    /// transaction, and returns its id.
    pub fn save(
        &mut self,
        report: &RunReport,
        host: &HostFacts,
        started: SystemTime,
        ended: SystemTime,
    ) -> Result<RunId, StoreError> {
        self.save_with_hook(report, host, started, ended, &mut |_| Ok(()))
    }

    /// [`Store::save`] with a fault-injection hook, called after every
    /// metric and series row with the number of such rows written so far.
    /// An error from the hook aborts the save and rolls the transaction
    /// back; a hook that kills the process shows what a crash leaves
    /// (nothing). For tests.
    #[doc(hidden)]
    pub fn save_with_hook(
        &mut self,
        report: &RunReport,
        host: &HostFacts,
        started: SystemTime,
        ended: SystemTime,
        hook: &mut dyn FnMut(usize) -> Result<(), StoreError>,
    ) -> Result<RunId, StoreError> {
        let run = NewRun {
            report,
            host,
            started,
            ended,
        };
        self.save_and(&run, hook, |_, _| Ok(()))
    }

    /// Writes the run, then `more` (rows that belong with it), in one
    /// transaction: all of it is stored, or nothing.
    pub(crate) fn save_and(
        &mut self,
        run: &NewRun<'_>,
        hook: &mut dyn FnMut(usize) -> Result<(), StoreError>,
        more: impl FnOnce(&Transaction<'_>, RunId) -> rusqlite::Result<()>,
    ) -> Result<RunId, StoreError> {
        let path = self.path.clone();
        let e = |err| sql_err(&path, err);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(e)?;
        let id = write_run(&tx, run, hook).map_err(|err| match err {
            WriteError::Sql(s) => e(s),
            WriteError::Store(s) => s,
        })?;
        more(&tx, id).map_err(e)?;
        tx.commit().map_err(e)?;
        Ok(id)
    }
}

/// A run to store: its report, the host it ran on, and when it started and
/// ended (what [`Store::save`] and [`Store::save_sweep_point`] are given).
pub(crate) struct NewRun<'a> {
    pub(crate) report: &'a RunReport,
    pub(crate) host: &'a HostFacts,
    pub(crate) started: SystemTime,
    pub(crate) ended: SystemTime,
}

enum WriteError {
    /// An SQLite error.
    Sql(rusqlite::Error),
    /// A store error (from the hook).
    Store(StoreError),
}

impl From<rusqlite::Error> for WriteError {
    fn from(e: rusqlite::Error) -> Self {
        WriteError::Sql(e)
    }
}

fn write_run(
    tx: &Transaction<'_>,
    run: &NewRun<'_>,
    hook: &mut dyn FnMut(usize) -> Result<(), StoreError>,
) -> Result<RunId, WriteError> {
    let NewRun {
        report,
        host,
        started,
        ended,
    } = *run;
    tx.execute(
        "INSERT INTO runs (scenario, scenario_toml, mode, seed, runs, started_ms, ended_ms,
                           host_cpus, host_cpu_model, host_kernel, mmlab_version, git_commit)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            report.scenario,
            report.scenario_toml,
            mode_str(report.mode),
            report.seed.to_string(),
            report.runs,
            time::to_millis(started),
            time::to_millis(ended),
            host.cpus,
            host.cpu_model,
            host.kernel,
            host.mmlab_version,
            host.git_commit,
        ],
    )?;
    let run_id = tx.last_insert_rowid();
    // The dirty flag arrived with schema version 5; a store opened at an
    // older version (migration tests) stores the rest.
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version >= 5 {
        tx.execute(
            "UPDATE runs SET git_dirty = ?1 WHERE id = ?2",
            params![host.git_dirty, run_id],
        )?;
    }

    // Only kernel-mode runs have facts; a store opened at an older schema
    // version (migration tests) can still take the others.
    if !report.facts.is_empty() {
        let mut fact =
            tx.prepare("INSERT INTO run_facts (run_id, key, value) VALUES (?1, ?2, ?3)")?;
        for (k, v) in &report.facts {
            fact.execute(params![run_id, k, v])?;
        }
    }

    let mut names: BTreeSet<&str> = report.policies.keys().map(String::as_str).collect();
    names.extend(report.policy_order.iter().map(String::as_str));
    let mut pol = tx.prepare(
        "INSERT INTO policies (run_id, name, order_pos, has_result) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for name in names {
        let pos = report.policy_order.iter().position(|p| p == name);
        pol.execute(params![
            run_id,
            name,
            pos.map(|p| p as i64),
            report.policies.contains_key(name)
        ])?;
    }

    let mut metric = tx.prepare(
        "INSERT INTO metrics (run_id, policy, name, unit, higher_is_better, histogram_len)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut value =
        tx.prepare("INSERT INTO metric_values (metric_id, run_index, value) VALUES (?1, ?2, ?3)")?;
    let mut pct = tx.prepare(
        "INSERT INTO percentiles (metric_id, name, run_index, value) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut bucket =
        tx.prepare("INSERT INTO histogram_buckets (metric_id, bucket, count) VALUES (?1, ?2, ?3)")?;
    let mut series = tx.prepare(
        "INSERT INTO series (run_id, policy, name, x_label, y_label) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut point =
        tx.prepare("INSERT INTO series_points (series_id, idx, x, y) VALUES (?1, ?2, ?3, ?4)")?;
    let mut written = 0usize;
    for (policy, result) in &report.policies {
        for (name, m) in &result.metrics {
            metric.execute(params![
                run_id,
                policy,
                name,
                m.unit,
                m.higher_is_better,
                m.histogram.as_ref().map(|h| h.buckets.len() as i64),
            ])?;
            let mid = tx.last_insert_rowid();
            for (i, v) in m.values.iter().enumerate() {
                value.execute(params![mid, i as i64, real(*v)])?;
            }
            for (pname, vals) in &m.percentiles {
                for (i, v) in vals.iter().enumerate() {
                    pct.execute(params![mid, pname, i as i64, real(*v)])?;
                }
            }
            if let Some(h) = &m.histogram {
                for (b, &c) in h.buckets.iter().enumerate().filter(|(_, c)| **c > 0) {
                    // Counts are stored bit for bit in SQLite's signed integer.
                    bucket.execute(params![mid, b as i64, c as i64])?;
                }
            }
            written += 1;
            hook(written).map_err(WriteError::Store)?;
        }
        for (name, s) in &result.series {
            series.execute(params![run_id, policy, name, s.x_label, s.y_label])?;
            let sid = tx.last_insert_rowid();
            for (i, (x, y)) in s.points.iter().enumerate() {
                point.execute(params![sid, i as i64, real(*x), real(*y)])?;
            }
            written += 1;
            hook(written).map_err(WriteError::Store)?;
        }
    }
    Ok(RunId(run_id))
}
