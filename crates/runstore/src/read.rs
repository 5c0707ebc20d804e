//! Reading runs back: summaries for `history`, whole reports for
//! `show`, `compare` and `report`.

use super::{time, HostFacts, RunId, Store, StoreError};
use lab::report::{Log2Histogram, MetricSamples, Mode, PolicyResult, RunReport, Series};
use rusqlite::{OptionalExtension, Row, Statement};
use std::collections::BTreeMap;
use std::time::SystemTime;

/// One stored run as `mmlab history` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The run's id.
    pub id: RunId,
    /// Scenario name.
    pub scenario: String,
    /// Execution mode.
    pub mode: Mode,
    /// Base seed.
    pub seed: u64,
    /// Runs per policy.
    pub runs: u32,
    /// Policy names in display order (`policy_order`, then the others).
    pub policies: Vec<String>,
    /// When the run started.
    pub started: SystemTime,
    /// When the run ended.
    pub ended: SystemTime,
    /// Machine and build facts.
    pub host: HostFacts,
    /// Tags naming this run, sorted.
    pub tags: Vec<String>,
}

impl RunSummary {
    /// A short label for table headers: the first tag, else `#id`.
    pub fn label(&self) -> String {
        match self.tags.first() {
            Some(t) => format!("#{} {t}", self.id),
            None => format!("#{}", self.id),
        }
    }
}

/// A stored run: its summary and the full report.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// Metadata (id, times, host, tags).
    pub summary: RunSummary,
    /// The report as it was saved.
    pub report: RunReport,
}

const SUMMARY_COLS: &str = "id, scenario, mode, seed, runs, started_ms, ended_ms, host_cpus, \
                            host_cpu_model, host_kernel, mmlab_version, git_commit";

/// The most buckets a stored histogram may have (a log2 histogram of
/// 64-bit values has 65).
const MAX_HISTOGRAM_BUCKETS: usize = 4096;

/// The schema version that added `runs.git_dirty`.
const GIT_DIRTY_SINCE: i64 = 5;

impl Store {
    fn corrupt(&self, what: &'static str, detail: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            what,
            detail,
        }
    }

    /// An error met reading run `id`: a stored value of the wrong type or
    /// range names the run and the column; any other is the database's.
    fn run_err(&self, id: i64, e: rusqlite::Error) -> StoreError {
        use rusqlite::types::Type;
        let kind = |t: &Type| match t {
            Type::Null => "NULL",
            Type::Integer => "an integer",
            Type::Real => "a real number",
            Type::Text => "text",
            Type::Blob => "a blob",
        };
        match e {
            rusqlite::Error::InvalidColumnType(_, name, t) => self.corrupt(
                "run",
                format!(
                    "run {id}: column `{name}` holds {}, not what mmlab stores there",
                    kind(&t)
                ),
            ),
            rusqlite::Error::FromSqlConversionFailure(i, t, err) => self.corrupt(
                "run",
                format!(
                    "run {id}: column {i} holds {} that does not convert: {err}",
                    kind(&t)
                ),
            ),
            rusqlite::Error::IntegralValueOutOfRange(i, v) => self.corrupt(
                "run",
                format!("run {id}: column {i} holds {v}, out of range"),
            ),
            rusqlite::Error::Utf8Error(err) => self.corrupt(
                "run",
                format!("run {id}: a text column is not UTF-8 ({err})"),
            ),
            other => self.sql(other),
        }
    }

    /// What `row` reads from each row `sql` selects about run `id` (its one
    /// parameter, `?1`, is the run's id). Errors as [`Store::run_err`]
    /// (a statement that does not prepare: the database's).
    fn rows_of<T>(
        &self,
        id: RunId,
        sql: &str,
        row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| self.sql(e))?;
        self.rows_for(id, &mut stmt, id.0, row)
    }

    /// `sql`, a statement that selects the rows of one parent row of run
    /// `id` (its one parameter, `?1`, the parent's id), for [`Store::rows_for`].
    /// Errors as [`Store::run_err`].
    fn prepare_for(&self, id: RunId, sql: &str) -> Result<Statement<'_>, StoreError> {
        self.conn.prepare(sql).map_err(|e| self.run_err(id.0, e))
    }

    /// What `row` reads from each row `stmt` selects for the parent row
    /// `parent` of run `id`. Errors as [`Store::run_err`].
    fn rows_for<T>(
        &self,
        id: RunId,
        stmt: &mut Statement<'_>,
        parent: i64,
        row: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        stmt.query_map([parent], row)
            .and_then(|rows| rows.collect())
            .map_err(|e| self.run_err(id.0, e))
    }

    /// The summary columns, `git_dirty` last (NULL before the schema
    /// version that added it).
    fn summary_cols(&self) -> Result<String, StoreError> {
        let dirty = if self.user_version()? >= GIT_DIRTY_SINCE {
            "git_dirty"
        } else {
            "NULL"
        };
        Ok(format!("{SUMMARY_COLS}, {dirty}"))
    }

    /// Stored runs, oldest first; only those of `scenario` when given.
    pub fn history(&self, scenario: Option<&str>) -> Result<Vec<RunSummary>, StoreError> {
        let sql = format!(
            "SELECT {} FROM runs WHERE ?1 IS NULL OR scenario = ?1 ORDER BY id",
            self.summary_cols()?
        );
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.sql(e))?;
        // Each row's id first, so that a bad value names its run.
        let raw: Vec<(i64, rusqlite::Result<RawSummary>)> = stmt
            .query_map([scenario], |r| Ok((r.get(0)?, RawSummary::from_row(r))))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.sql(e))?;
        raw.into_iter()
            .map(|(id, r)| self.finish_summary(r.map_err(|e| self.run_err(id, e))?))
            .collect()
    }

    /// The summary of one run.
    pub fn summary(&self, id: RunId) -> Result<RunSummary, StoreError> {
        let sql = format!("SELECT {} FROM runs WHERE id = ?1", self.summary_cols()?);
        let raw = self
            .conn
            .query_row(&sql, [id.0], RawSummary::from_row)
            .optional()
            .map_err(|e| self.run_err(id.0, e))?
            .ok_or_else(|| StoreError::UnknownRun {
                spec: id.to_string(),
                reason: format!("no run with id {id}"),
            })?;
        self.finish_summary(raw)
    }

    fn finish_summary(&self, r: RawSummary) -> Result<RunSummary, StoreError> {
        let mode = match r.mode.as_str() {
            "sim" => Mode::Sim,
            "real" => Mode::Real,
            "kernel" => Mode::Kernel,
            m => return Err(self.corrupt("run mode", format!("'{m}' in run {}", r.id))),
        };
        let seed = r
            .seed
            .parse()
            .map_err(|_| self.corrupt("seed", format!("'{}' in run {}", r.seed, r.id)))?;
        let (order, _) = self.policies(RunId(r.id))?;
        let tags = self.tags_of(RunId(r.id))?;
        Ok(RunSummary {
            id: RunId(r.id),
            scenario: r.scenario,
            mode,
            seed,
            runs: u32::try_from(r.runs)
                .map_err(|_| self.corrupt("run count", format!("{} in run {}", r.runs, r.id)))?,
            policies: order,
            started: time::from_millis(r.started_ms),
            ended: time::from_millis(r.ended_ms),
            host: HostFacts {
                cpus: u32::try_from(r.cpus).unwrap_or(0),
                cpu_model: r.cpu_model,
                kernel: r.kernel,
                mmlab_version: r.version,
                git_commit: r.commit,
                git_dirty: r.dirty,
            },
            tags,
        })
    }

    /// (`policy_order` as saved, every policy that has a result) of a run.
    fn policies(&self, id: RunId) -> Result<(Vec<String>, Vec<String>), StoreError> {
        let rows: Vec<(String, Option<i64>, bool)> = self.rows_of(
            id,
            "SELECT name, order_pos, has_result FROM policies WHERE run_id = ?1
             ORDER BY order_pos IS NULL, order_pos, name",
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let order = rows
            .iter()
            .filter(|(_, pos, _)| pos.is_some())
            .map(|(n, _, _)| n.clone())
            .collect();
        let with_result = rows
            .iter()
            .filter(|(_, _, has)| *has)
            .map(|(n, _, _)| n.clone())
            .collect();
        Ok((order, with_result))
    }

    fn tags_of(&self, id: RunId) -> Result<Vec<String>, StoreError> {
        self.rows_of(
            id,
            "SELECT name FROM tags WHERE run_id = ?1 ORDER BY name",
            |r| r.get(0),
        )
    }

    /// Loads a whole run: the report exactly as saved (NaN values come back
    /// as NaN) and its summary.
    pub fn load(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let summary = self.summary(id)?;
        let (scenario_toml, runs): (String, i64) = self
            .conn
            .query_row(
                "SELECT scenario_toml, runs FROM runs WHERE id = ?1",
                [id.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.run_err(id.0, e))?;
        let (order, with_result) = self.policies(id)?;
        let mut policies: BTreeMap<String, PolicyResult> = with_result
            .into_iter()
            .map(|p| (p, PolicyResult::default()))
            .collect();
        self.load_metrics(id, &mut policies)?;
        self.load_series(id, &mut policies)?;
        let facts = self.facts_of(id)?;
        let report = RunReport {
            scenario: summary.scenario.clone(),
            mode: summary.mode,
            runs: u32::try_from(runs).unwrap_or(0),
            seed: summary.seed,
            scenario_toml,
            policy_order: order,
            policies,
            facts,
        };
        Ok(StoredRun { summary, report })
    }

    /// The run facts stored with a run (kernel mode's host kernel release,
    /// cgroup version ...), by name.
    pub fn facts_of(&self, id: RunId) -> Result<BTreeMap<String, String>, StoreError> {
        // The table arrived with schema version 3.
        if self.user_version()? < 3 {
            return Ok(BTreeMap::new());
        }
        let rows: Vec<(String, String)> = self.rows_of(
            id,
            "SELECT key, value FROM run_facts WHERE run_id = ?1 ORDER BY key",
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(rows.into_iter().collect())
    }

    fn load_metrics(
        &self,
        id: RunId,
        policies: &mut BTreeMap<String, PolicyResult>,
    ) -> Result<(), StoreError> {
        type MetricRow = (i64, String, String, String, bool, Option<i64>);
        let rows: Vec<MetricRow> = self.rows_of(
            id,
            "SELECT id, policy, name, unit, higher_is_better, histogram_len
             FROM metrics WHERE run_id = ?1",
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )?;
        let mut values = self.prepare_for(
            id,
            "SELECT run_index, value FROM metric_values WHERE metric_id = ?1 ORDER BY run_index",
        )?;
        let mut pcts = self.prepare_for(
            id,
            "SELECT name, run_index, value FROM percentiles WHERE metric_id = ?1 ORDER BY name, run_index",
        )?;
        let mut buckets = self.prepare_for(
            id,
            "SELECT bucket, count FROM histogram_buckets WHERE metric_id = ?1",
        )?;
        for (mid, policy, name, unit, hib, hlen) in rows {
            let vals: Vec<(i64, Option<f64>)> =
                self.rows_for(id, &mut values, mid, |r| Ok((r.get(0)?, r.get(1)?)))?;
            let mut percentiles: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            let prow: Vec<(String, i64, Option<f64>)> = self.rows_for(id, &mut pcts, mid, |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            for (pname, _, v) in prow {
                percentiles
                    .entry(pname)
                    .or_default()
                    .push(v.unwrap_or(f64::NAN));
            }
            let histogram = match hlen {
                None => None,
                Some(len) => {
                    // A log2 histogram of 64-bit values has at most 65
                    // buckets; a larger length is a damaged row, not an
                    // allocation to attempt.
                    let len = usize::try_from(len)
                        .ok()
                        .filter(|l| *l <= MAX_HISTOGRAM_BUCKETS)
                        .ok_or_else(|| {
                            self.corrupt(
                                "histogram",
                                format!("{len} buckets in {name} of run {id}"),
                            )
                        })?;
                    let mut h = Log2Histogram {
                        buckets: vec![0; len],
                    };
                    let brows: Vec<(i64, i64)> =
                        self.rows_for(id, &mut buckets, mid, |r| Ok((r.get(0)?, r.get(1)?)))?;
                    for (b, c) in brows {
                        let slot = usize::try_from(b)
                            .ok()
                            .and_then(|b| h.buckets.get_mut(b))
                            .ok_or_else(|| {
                                self.corrupt(
                                    "histogram",
                                    format!("bucket {b} of {len} in {name} of run {id}"),
                                )
                            })?;
                        *slot = c as u64;
                    }
                    Some(h)
                }
            };
            let m = MetricSamples {
                unit,
                values: vals
                    .into_iter()
                    .map(|(_, v)| v.unwrap_or(f64::NAN))
                    .collect(),
                percentiles,
                histogram,
                higher_is_better: hib,
            };
            policies.entry(policy).or_default().metrics.insert(name, m);
        }
        Ok(())
    }

    fn load_series(
        &self,
        id: RunId,
        policies: &mut BTreeMap<String, PolicyResult>,
    ) -> Result<(), StoreError> {
        let rows: Vec<(i64, String, String, String, String)> = self.rows_of(
            id,
            "SELECT id, policy, name, x_label, y_label FROM series WHERE run_id = ?1",
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?;
        let mut points = self.prepare_for(
            id,
            "SELECT x, y FROM series_points WHERE series_id = ?1 ORDER BY idx",
        )?;
        for (sid, policy, name, x_label, y_label) in rows {
            let pts: Vec<(f64, f64)> = self.rows_for(id, &mut points, sid, |r| {
                let x: Option<f64> = r.get(0)?;
                let y: Option<f64> = r.get(1)?;
                Ok((x.unwrap_or(f64::NAN), y.unwrap_or(f64::NAN)))
            })?;
            policies.entry(policy).or_default().series.insert(
                name,
                Series {
                    x_label,
                    y_label,
                    points: pts,
                },
            );
        }
        Ok(())
    }
}

struct RawSummary {
    id: i64,
    scenario: String,
    mode: String,
    seed: String,
    runs: i64,
    started_ms: i64,
    ended_ms: i64,
    cpus: i64,
    cpu_model: String,
    kernel: String,
    version: String,
    commit: Option<String>,
    dirty: Option<bool>,
}

impl RawSummary {
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawSummary> {
        Ok(RawSummary {
            id: r.get(0)?,
            scenario: r.get(1)?,
            mode: r.get(2)?,
            seed: r.get(3)?,
            runs: r.get(4)?,
            started_ms: r.get(5)?,
            ended_ms: r.get(6)?,
            cpus: r.get(7)?,
            cpu_model: r.get(8)?,
            kernel: r.get(9)?,
            version: r.get(10)?,
            commit: r.get(11)?,
            dirty: r.get(12)?,
        })
    }
}
