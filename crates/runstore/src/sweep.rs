//! Sweep points: each job of `mmlab sweep` (one policy point under one
//! seed) is a stored run plus one `sweep_points` row naming its sweep,
//! point, knob values and seed, and the job's key (a hash of the sweep's
//! name, the point, the seed and the scenario text run), by which a sweep
//! that was interrupted, sharded or merged knows which jobs are done.

use super::{HostFacts, RunId, Store, StoreError};
use crate::write::NewRun;
use lab::report::RunReport;
use rusqlite::{params, OptionalExtension};
use std::time::SystemTime;

/// What a sweep point row says about its run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointMeta {
    /// The sweep's name.
    pub sweep: String,
    /// The policy's name in the run (`pages_per_shard=16`, or a preset).
    pub point: String,
    /// `(knob, value)` pairs; empty for a preset.
    pub knobs: Vec<(String, String)>,
    /// Whether the point is a built-in preset run beside the grid.
    pub preset: bool,
    /// The seed.
    pub seed: u64,
    /// The job's key (see the module documentation).
    pub job_key: String,
}

/// A stored sweep point: its metadata and run id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPoint {
    /// The run.
    pub run: RunId,
    /// The point.
    pub meta: PointMeta,
}

/// A job key: FNV-1a (64 bit, twice with different offsets) over the
/// parts, each followed by a 0 byte. Stable across builds and hosts.
pub fn job_key(parts: &[&str]) -> String {
    let mut out = String::new();
    for basis in [0xcbf2_9ce4_8422_2325u64, 0x84222325_cbf29ce4] {
        let mut h = basis;
        for p in parts {
            for b in p.bytes().chain(std::iter::once(0)) {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

impl Store {
    /// Stores one sweep job's run and its point row in one transaction.
    ///
    /// # Errors
    /// SQLite errors; a job key already stored for this sweep.
    pub fn save_sweep_point(
        &mut self,
        report: &RunReport,
        host: &HostFacts,
        started: SystemTime,
        ended: SystemTime,
        meta: &PointMeta,
    ) -> Result<RunId, StoreError> {
        let knobs = serde_json::to_string(&meta.knobs).unwrap_or_else(|_| "[]".into());
        let run = NewRun {
            report,
            host,
            started,
            ended,
        };
        self.save_and(&run, &mut |_| Ok(()), |tx, id| {
            tx.execute(
                "INSERT INTO sweep_points (run_id, sweep, point, knobs, preset, seed, job_key)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    id.0,
                    meta.sweep,
                    meta.point,
                    knobs,
                    meta.preset,
                    meta.seed.to_string(),
                    meta.job_key
                ],
            )
            .map(drop)
        })
    }

    /// The run of a sweep job, if it is stored.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn sweep_job(&self, sweep: &str, job_key: &str) -> Result<Option<RunId>, StoreError> {
        self.conn
            .query_row(
                "SELECT run_id FROM sweep_points WHERE sweep = ?1 AND job_key = ?2",
                params![sweep, job_key],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map(|o| o.map(RunId))
            .map_err(|e| self.sql(e))
    }

    /// Every stored point of `sweep`, by run id.
    ///
    /// # Errors
    /// SQLite errors; an unreadable knob list.
    pub fn sweep_points(&self, sweep: &str) -> Result<Vec<StoredPoint>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT run_id, point, knobs, preset, seed, job_key FROM sweep_points
                 WHERE sweep = ?1 ORDER BY run_id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map(params![sweep], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, bool>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (run, point, knobs, preset, seed, job_key) = row.map_err(|e| self.sql(e))?;
            let corrupt = |detail: String| StoreError::Corrupt {
                path: self.path.clone(),
                what: "sweep point",
                detail,
            };
            out.push(StoredPoint {
                run: RunId(run),
                meta: PointMeta {
                    sweep: sweep.to_string(),
                    point,
                    knobs: serde_json::from_str(&knobs).map_err(|e| corrupt(e.to_string()))?,
                    preset,
                    seed: seed.parse().map_err(|_| corrupt(format!("seed {seed}")))?,
                    job_key,
                },
            });
        }
        Ok(out)
    }

    /// The identity of a run, kept by `store merge`.
    ///
    /// # Errors
    /// SQLite errors, an unknown run.
    pub fn run_uid(&self, id: RunId) -> Result<String, StoreError> {
        self.conn
            .query_row("SELECT uid FROM runs WHERE id = ?1", params![id.0], |r| {
                r.get(0)
            })
            .map_err(|e| self.sql(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_keys_separate_parts() {
        assert_ne!(job_key(&["ab", "c"]), job_key(&["a", "bc"]));
        assert_eq!(job_key(&["x"]), job_key(&["x"]));
        assert_eq!(job_key(&["x"]).len(), 32);
    }
}
