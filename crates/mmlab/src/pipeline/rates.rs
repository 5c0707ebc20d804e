//! The host's speed for the pre-run estimates ([`lab::Rates`]):
//! simulated work units per CPU second of each work class, measured by
//! running each class's probe scenario on this host with the costs in use
//! (stated at the reference speed of [`lab::estimate::spin`]'s
//! loop), and the speed this process runs at now.
//!
//! * The rates are cached: beside the cost file (`COSTS.rates.toml`) when
//!   `--costs COSTS` is given and its folder can be written, else in the
//!   user's cache (`$XDG_CACHE_HOME/mmlab/rates.toml`, or
//!   `~/.cache/mmlab/rates.toml`). An entry holds for one build of mmlab
//!   (its version, commit and the binary itself), one host (CPU model and
//!   count) and one cost file; any other measures again (a fraction of a
//!   second in a release build) and keeps the newest entries.
//! * The speed now is measured at every command (a 200 ms spin of the same
//!   loop): a simulation on a host whose CPUs are all busy takes longer
//!   than its CPU seconds.
//! * Two processes measuring at once (tests in parallel) take turns
//!   through a lock file beside the cache; a process that cannot measure or
//!   cache uses the reference rates and says so.

use anyhow::{Context, Result};
use lab::estimate::spin;
use lab::Rates;
use serde::{Deserialize, Serialize};
use sim::cost::CostModel;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Entries a cache keeps (newest last).
const KEEP: usize = 8;

/// How long a process waits for another's measurement before measuring
/// itself.
const LOCK_WAIT: Duration = Duration::from_secs(120);

/// The cache file: its entries.
#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    #[serde(default)]
    entry: Vec<Entry>,
}

/// One measurement: for which build, host and costs, and the rates.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    fingerprint: String,
    /// Units per CPU second, by class name.
    rates: BTreeMap<String, f64>,
}

/// Where the rates of the costs at `costs_path` (`None`: the built-in
/// costs) are cached, in order of preference.
pub fn cache_paths(costs_path: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = costs_path {
        let mut s = p.as_os_str().to_owned();
        s.push(".rates.toml");
        out.push(PathBuf::from(s));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(b) = base {
        let name = if costs_path.is_some() {
            "rates-costs.toml"
        } else {
            "rates.toml"
        };
        out.push(b.join("mmlab").join(name));
    }
    out
}

/// What a measurement holds for: this build (version, commit, the binary's
/// size and time), this host (CPU model and count) and the costs (`text`
/// of the cost file, or the built-in costs).
pub fn fingerprint(costs: &CostModel) -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok())
        .map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{t}", m.len())
        })
        .unwrap_or_default();
    let host = super::host_facts();
    runstore::sweep::job_key(&[
        env!("CARGO_PKG_VERSION"),
        option_env!("MMLAB_GIT_COMMIT").unwrap_or(""),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        &exe,
        &host.cpu_model,
        &host.cpus.to_string(),
        &format!("{costs:?}"),
    ])
}

/// Every probed class's rate on this host with `costs`
/// ([`lab::estimate::measure_rates`]); with `MMLAB_RATES_DEBUG` set, each
/// probe's timing on stderr.
///
/// # Errors
/// A probe that does not parse or run (a bug: the probes are tested).
pub fn measure(costs: &CostModel) -> Result<BTreeMap<String, f64>> {
    let ctx = lab::Context::default().with(costs.clone());
    let debug = std::env::var_os("MMLAB_RATES_DEBUG").is_some();
    let rates = lab::estimate::measure_rates_observed(&super::input::catalog(), &ctx, &mut |t| {
        if debug {
            eprintln!(
                "probe {}: {:.3e} units in {:.3} CPU s, loop {:.3e} / {:.3e} per CPU s",
                t.class, t.units, t.cpu_seconds, t.loop_speed.0, t.loop_speed.1
            );
        }
    })
    .context("running the work-class probes")?;
    Ok(rates)
}

/// How much of the CPU share measured now carries into the estimate, as
/// an exponent: on a host whose load comes and goes (other people's
/// builds), a busy moment predicts a busy run only in part. With 0.75 a
/// share of 25% now counts as 35%; measured against the built-in
/// scenarios on the shared 2-vCPU host, whole-share estimates were off by
/// up to 3x either way when the load changed, this by up to 2x.
const SHARE_WEIGHT: f64 = 0.75;

/// `rates` with the speed this process runs at now: a 200 ms spin (long
/// enough to average over the scheduler's time slices on a busy host),
/// its share of a CPU weighed by [`SHARE_WEIGHT`].
fn with_speed_now(mut rates: Rates) -> Rates {
    let (per_wall, per_cpu) = spin(Duration::from_millis(200));
    let share = (per_wall / per_cpu).clamp(0.01, 1.0);
    rates.speed = per_cpu * share.powf(SHARE_WEIGHT);
    rates.cpu_share = share;
    rates
}

fn read_cache(path: &Path) -> CacheFile {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| toml::from_str(&t).ok())
        .unwrap_or_default()
}

fn lookup(path: &Path, fp: &str) -> Option<BTreeMap<String, f64>> {
    let e = read_cache(path)
        .entry
        .into_iter()
        .rev()
        .find(|e| e.fingerprint == fp)?;
    let probed: Vec<&str> = super::input::catalog()
        .work_classes()
        .into_iter()
        .filter(|c| c.probe.is_some())
        .map(|c| c.name)
        .collect();
    let rates: BTreeMap<String, f64> = e
        .rates
        .into_iter()
        .filter(|(k, v)| probed.contains(&k.as_str()) && v.is_finite() && *v > 0.0)
        .collect();
    (rates.len() == probed.len()).then_some(rates)
}

fn store(path: &Path, fp: &str, rates: &BTreeMap<String, f64>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = read_cache(path);
    file.entry.retain(|e| e.fingerprint != fp);
    file.entry.push(Entry {
        fingerprint: fp.to_string(),
        rates: rates.iter().map(|(c, v)| (c.clone(), *v)).collect(),
    });
    let skip = file.entry.len().saturating_sub(KEEP);
    file.entry.drain(..skip);
    let text = format!(
        "# The simulator's speed on this host, measured by mmlab for its pre-run estimates:\n\
         # work units per CPU second of each class, one entry per build, host and cost file.\n\
         # Delete the file to measure again.\n{}",
        toml::to_string(&file)?
    );
    crate::render::write_atomic(path, text.as_bytes())
}

/// Holds `lock` (a file created exclusively) while alive.
struct Lock(PathBuf);

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn lock_file(cache: &Path) -> PathBuf {
    let mut s = cache.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Takes the lock beside `cache`, waiting while another process holds it
/// (a lock older than [`LOCK_WAIT`] is stale and taken over); `None` when
/// no lock can be made there.
fn take_lock(cache: &Path) -> Option<Lock> {
    let lock = lock_file(cache);
    if let Some(dir) = cache.parent() {
        std::fs::create_dir_all(dir).ok()?;
    }
    let start = Instant::now();
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(_) => return Some(Lock(lock)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let stale = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > LOCK_WAIT);
                if stale || start.elapsed() > LOCK_WAIT {
                    let _ = std::fs::remove_file(&lock);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => return None,
        }
    }
}

/// The rates of this host for `costs` (read from `costs_path`, or the
/// built-in costs): from the cache when it holds them, else measured and
/// cached (saying so on stderr), with the CPU share measured now.
pub fn host_rates(costs_path: Option<&Path>, costs: &CostModel) -> Rates {
    let fp = fingerprint(costs);
    let mut rates = with_speed_now(Rates::default());
    let paths = cache_paths(costs_path);
    for path in &paths {
        if let Some(r) = lookup(path, &fp) {
            rates.per_class = r;
            rates.source = format!("measured on this host ({})", path.display());
            return rates;
        }
    }
    // Measure, holding the first cache's lock that can be taken (another
    // process may be measuring the same: then its result is read).
    for path in &paths {
        let Some(_lock) = take_lock(path) else {
            continue;
        };
        if let Some(r) = lookup(path, &fp) {
            rates.per_class = r;
            rates.source = format!("measured on this host ({})", path.display());
            return rates;
        }
        let measured = match measure(costs) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("mmlab: warning: measuring this host's speed failed ({e:#}); estimates use reference rates");
                return rates;
            }
        };
        if store(path, &fp, &measured).is_ok() {
            eprintln!(
                "mmlab: measured this host's simulation speed for the pre-run estimates (cached in {})",
                path.display()
            );
            rates.per_class = measured;
            rates.source = format!("measured on this host ({})", path.display());
            return rates;
        }
    }
    // No cache can be written: measure for this command only.
    match measure(costs) {
        Ok(m) => {
            rates.per_class = m;
            rates.source = "measured on this host (not cached)".into();
        }
        Err(e) => eprintln!(
            "mmlab: warning: measuring this host's speed failed ({e:#}); estimates use reference rates"
        ),
    }
    rates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_round_trip_keeps_the_newest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        let rates: BTreeMap<String, f64> = crate::pipeline::input::catalog()
            .work_classes()
            .into_iter()
            .filter(|c| c.probe.is_some())
            .map(|c| (c.name.to_string(), 1e6))
            .collect();
        for i in 0..KEEP + 3 {
            store(&p, &format!("fp{i}"), &rates).unwrap();
        }
        assert!(lookup(&p, "fp0").is_none(), "the oldest is dropped");
        assert_eq!(lookup(&p, &format!("fp{}", KEEP + 2)), Some(rates));
        assert!(lookup(&p, "other").is_none());
        let r = with_speed_now(Rates::default());
        assert!(
            r.speed > 0.0 && (0.01..=1.0).contains(&r.cpu_share),
            "{r:?}"
        );
    }
}
