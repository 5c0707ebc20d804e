//! Versioned schema migrations.
//!
//! The schema version lives in `PRAGMA user_version`; the file is marked
//! as mmlab's by `PRAGMA application_id` ([`APPLICATION_ID`]), so a
//! foreign SQLite file is recognised before anything is written to it.
//! Migration `i` (1-based) brings a database from version `i - 1` to `i`;
//! each runs in its own `BEGIN IMMEDIATE` transaction that re-reads the
//! version first, so two processes opening a new file at once migrate it
//! exactly once.

/// `PRAGMA application_id` of an mmlab results database ("mmlb").
pub const APPLICATION_ID: i64 = 0x6d6d_6c62;

/// One schema step.
#[derive(Debug)]
pub struct Migration {
    /// What the step adds, for humans.
    pub description: &'static str,
    /// The SQL, run in one transaction.
    pub sql: &'static str,
}

/// All migrations, in order; the schema version is their count.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        description: "runs, policies, metrics with per-run values, percentiles, \
                      histograms, and plot series",
        sql: "
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    scenario       TEXT    NOT NULL,
    scenario_toml  TEXT    NOT NULL,
    mode           TEXT    NOT NULL,
    seed           TEXT    NOT NULL,  -- u64 as decimal text
    runs           INTEGER NOT NULL,
    started_ms     INTEGER NOT NULL,  -- unix time, milliseconds
    ended_ms       INTEGER NOT NULL,
    host_cpus      INTEGER NOT NULL,
    host_cpu_model TEXT    NOT NULL,
    host_kernel    TEXT    NOT NULL,
    mmlab_version  TEXT    NOT NULL,
    git_commit     TEXT
);
CREATE TABLE policies (
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    order_pos  INTEGER,            -- position in policy_order, NULL if unlisted
    has_result INTEGER NOT NULL,   -- 0: listed in policy_order only
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE TABLE metrics (
    id               INTEGER PRIMARY KEY,
    run_id           INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    policy           TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    unit             TEXT    NOT NULL,
    higher_is_better INTEGER NOT NULL,
    histogram_len    INTEGER,      -- NULL: the metric has no histogram
    UNIQUE (run_id, policy, name)
);
CREATE TABLE metric_values (
    metric_id INTEGER NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
    run_index INTEGER NOT NULL,
    value     REAL,                -- NULL stands for NaN
    PRIMARY KEY (metric_id, run_index)
) WITHOUT ROWID;
CREATE TABLE percentiles (
    metric_id INTEGER NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
    name      TEXT    NOT NULL,
    run_index INTEGER NOT NULL,
    value     REAL,
    PRIMARY KEY (metric_id, name, run_index)
) WITHOUT ROWID;
CREATE TABLE histogram_buckets (
    metric_id INTEGER NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
    bucket    INTEGER NOT NULL,
    count     INTEGER NOT NULL,    -- only non-zero buckets are stored
    PRIMARY KEY (metric_id, bucket)
) WITHOUT ROWID;
CREATE TABLE series (
    id      INTEGER PRIMARY KEY,
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    policy  TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    x_label TEXT    NOT NULL,
    y_label TEXT    NOT NULL,
    UNIQUE (run_id, policy, name)
);
CREATE TABLE series_points (
    series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    x         REAL,
    y         REAL,
    PRIMARY KEY (series_id, idx)
) WITHOUT ROWID;
",
    },
    Migration {
        description: "run tags and the per-scenario history index",
        sql: "
CREATE TABLE tags (
    name       TEXT    PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    created_ms INTEGER NOT NULL
);
CREATE INDEX tags_run ON tags(run_id);
CREATE INDEX runs_scenario ON runs(scenario, id);
",
    },
    Migration {
        description: "run facts beyond the host's (kernel mode: kernel release, cgroup \
                      version, online CPUs, flush threshold)",
        sql: "
CREATE TABLE run_facts (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key    TEXT    NOT NULL,
    value  TEXT    NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
",
    },
    Migration {
        description: "run identities that survive `store merge`, and sweep points",
        sql: "
ALTER TABLE runs ADD COLUMN uid TEXT;
UPDATE runs SET uid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX runs_uid ON runs(uid);
-- A run stored without a uid (every save; `store merge` copies the
-- source's) gets 128 random bits.
CREATE TRIGGER runs_uid_default AFTER INSERT ON runs WHEN NEW.uid IS NULL
BEGIN
    UPDATE runs SET uid = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
CREATE TABLE sweep_points (
    run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    sweep   TEXT    NOT NULL,
    point   TEXT    NOT NULL,  -- the policy's name in the run
    knobs   TEXT    NOT NULL,  -- JSON [[knob, value], ...]; [] for a preset
    preset  INTEGER NOT NULL,  -- 1: a built-in preset run beside the grid
    seed    TEXT    NOT NULL,  -- u64 as decimal text
    job_key TEXT    NOT NULL,  -- hash of sweep, point, seed and scenario text
    UNIQUE (sweep, job_key)
);
CREATE INDEX sweep_points_sweep ON sweep_points(sweep, point);
",
    },
    Migration {
        description: "whether the build's sources differed from its git commit",
        sql: "
ALTER TABLE runs ADD COLUMN git_dirty INTEGER;  -- 1 dirty, 0 clean, NULL unknown
",
    },
];

/// The tables of the current schema: a database at [`SCHEMA_VERSION`]
/// that lacks one was changed outside mmlab.
pub const TABLES: &[&str] = &[
    "runs",
    "policies",
    "metrics",
    "metric_values",
    "percentiles",
    "histogram_buckets",
    "series",
    "series_points",
    "tags",
    "run_facts",
    "sweep_points",
];

/// The schema version this build writes: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;
