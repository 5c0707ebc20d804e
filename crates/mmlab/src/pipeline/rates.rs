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
//!   through an advisory lock (`flock`) on a file beside the cache
//!   (`rates.toml.lock`), which the kernel releases when its holder exits
//!   however it exits (`kill -9` included): a waiting process says so and
//!   waits at most 30 s, then measures for itself.
//! * A cache or lock path that is not a regular file (a FIFO, a device, a
//!   directory) or that cannot be locked is not used (the cache is opened
//!   without blocking and read at most 64 KiB): the rates are then
//!   measured for this command only, saying so. A process that cannot
//!   measure uses the reference rates and says so.

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
/// for itself without the cache: several times the probes' time in a
/// debug build on a busy 2-CPU host.
const LOCK_WAIT: Duration = Duration::from_secs(30);

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

/// The most bytes a cache file may have: eight entries take about 2 KiB.
const MAX_CACHE_BYTES: u64 = 64 << 10;

/// Opens `path` for reading without blocking on a FIFO (`O_NONBLOCK`)
/// and checks, on the open file, that it is a regular file: `Ok(None)`
/// when there is no file, `Err(why)` when it is something else.
fn open_regular(path: &Path) -> std::result::Result<Option<std::fs::File>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nonblock())
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if meta.is_dir() {
        return Err("is a directory".into());
    }
    if !meta.is_file() {
        return Err(format!(
            "is {}, not a regular file",
            super::input::special_file_kind(&meta)
        ));
    }
    Ok(Some(f))
}

fn nonblock() -> i32 {
    rustix::fs::OFlags::NONBLOCK.bits() as i32
}

/// The cache at `path`: its entries (none when there is no file or its
/// text is not a cache's, which the next store replaces), or why it cannot
/// be used (not a regular file, or larger than [`MAX_CACHE_BYTES`]: read
/// no further and never replaced).
fn read_cache(path: &Path) -> std::result::Result<CacheFile, String> {
    use std::io::Read;
    let Some(f) = open_regular(path)? else {
        return Ok(CacheFile::default());
    };
    let mut bytes = Vec::new();
    f.take(MAX_CACHE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_CACHE_BYTES {
        return Err(format!(
            "is larger than {} KiB, not a rates cache",
            MAX_CACHE_BYTES >> 10
        ));
    }
    Ok(String::from_utf8(bytes)
        .ok()
        .and_then(|t| toml::from_str(&t).ok())
        .unwrap_or_default())
}

/// The rates of fingerprint `fp` in `file`, if it holds every probed
/// class's.
fn lookup(file: CacheFile, fp: &str) -> Option<BTreeMap<String, f64>> {
    let e = file.entry.into_iter().rev().find(|e| e.fingerprint == fp)?;
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
    let mut file = read_cache(path).map_err(|why| anyhow::anyhow!("{} {why}", path.display()))?;
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
    crate::render::write_file(path, text.as_bytes())
}

fn lock_file(cache: &Path) -> PathBuf {
    let mut s = cache.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// What became of taking the lock beside a cache.
#[derive(Debug)]
enum Lock {
    /// Held until the file is dropped (closing it releases the lock; the
    /// kernel releases it too when the process dies, however it dies).
    Held(#[allow(dead_code)] std::fs::File),
    /// Another process held it for the whole wait.
    Busy,
    /// No lock can be taken there (the lock path is a directory or not a
    /// regular file, or cannot be opened or locked): why.
    Unusable(String),
}

/// Takes the advisory lock (`flock`) on the lock file beside `cache`,
/// creating the file if needed (it stays: removing a lock file races
/// with a process that just opened it), waiting at most `wait` while
/// another process holds it; `waiting` is called once when the wait
/// begins.
fn take_lock(cache: &Path, wait: Duration, waiting: &mut dyn FnMut(&Path)) -> Lock {
    use rustix::fs::{flock, FlockOperation};
    use std::os::unix::fs::OpenOptionsExt;
    let lock = lock_file(cache);
    if let Some(dir) = cache.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Lock::Unusable(format!("{}: {e}", dir.display()));
        }
    }
    // Write access is not needed to lock: a lock file another user made
    // is opened for reading.
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .create(write)
            .custom_flags(nonblock())
            .open(&lock)
    };
    let f = match open(true).or_else(|_| open(false)) {
        Ok(f) => f,
        Err(e) => return Lock::Unusable(format!("{}: {e}", lock.display())),
    };
    match f.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.is_dir() => return Lock::Unusable(format!("{} is a directory", lock.display())),
        Ok(m) => {
            return Lock::Unusable(format!(
                "{} is {}, not a regular file",
                lock.display(),
                super::input::special_file_kind(&m)
            ))
        }
        Err(e) => return Lock::Unusable(format!("{}: {e}", lock.display())),
    }
    let start = Instant::now();
    let mut told = false;
    loop {
        match flock(&f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Lock::Held(f),
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {
                if start.elapsed() >= wait {
                    return Lock::Busy;
                }
                if !told {
                    told = true;
                    waiting(&lock);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Lock::Unusable(format!("locking {}: {e}", lock.display())),
        }
    }
}

/// The rates of this host for `costs` (read from `costs_path`, or the
/// built-in costs): from the cache when it holds them, else measured and
/// cached (saying so on stderr), with the CPU share measured now.
///
/// A cache that is not a regular file (or is too large) is neither read
/// nor written; a lock another process holds is waited for at most
/// 30 s (`LOCK_WAIT`), saying so; with no usable cache or lock the rates are
/// measured for this command only. Each case is said on stderr.
pub fn host_rates(costs_path: Option<&Path>, costs: &CostModel) -> Rates {
    let fp = fingerprint(costs);
    let mut rates = with_speed_now(Rates::default());
    let found = |rates: &mut Rates, r: BTreeMap<String, f64>, path: &Path| {
        rates.per_class = r;
        rates.source = format!("measured on this host ({})", path.display());
    };
    let mut usable = Vec::new();
    for path in cache_paths(costs_path) {
        match read_cache(&path) {
            Ok(file) => {
                if let Some(r) = lookup(file, &fp) {
                    found(&mut rates, r, &path);
                    return rates;
                }
                usable.push(path);
            }
            Err(why) => eprintln!(
                "mmlab: warning: the speed cache {} {why}: not used (remove it to cache there again)",
                path.display()
            ),
        }
    }
    // Measure, holding the first cache's lock that can be taken (another
    // process may be measuring the same: then its result is read).
    for path in &usable {
        let _lock = match take_lock(path, LOCK_WAIT, &mut |lock| {
            eprintln!(
                "mmlab: waiting for another mmlab measuring this host's speed (it holds {}; at most {} s)",
                lock.display(),
                LOCK_WAIT.as_secs()
            );
        }) {
            Lock::Held(f) => f,
            Lock::Busy => {
                eprintln!(
                    "mmlab: the other mmlab is still measuring after {} s: measuring for this command only",
                    LOCK_WAIT.as_secs()
                );
                break;
            }
            Lock::Unusable(why) => {
                eprintln!("mmlab: warning: cannot lock the speed cache ({why}): not using it");
                continue;
            }
        };
        if let Some(r) = read_cache(path).ok().and_then(|f| lookup(f, &fp)) {
            found(&mut rates, r, path);
            return rates;
        }
        let measured = match measure(costs) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("mmlab: warning: measuring this host's speed failed ({e:#}); estimates use reference rates");
                return rates;
            }
        };
        match store(path, &fp, &measured) {
            Ok(()) => {
                eprintln!(
                    "mmlab: measured this host's simulation speed for the pre-run estimates (cached in {})",
                    path.display()
                );
                found(&mut rates, measured, path);
            }
            Err(e) => {
                eprintln!(
                    "mmlab: measured this host's simulation speed for the pre-run estimates (not cached: {e:#})"
                );
                rates.per_class = measured;
                rates.source = "measured on this host (not cached)".into();
            }
        }
        return rates;
    }
    // No cache can be used: measure for this command only.
    match measure(costs) {
        Ok(m) => {
            eprintln!(
                "mmlab: measured this host's simulation speed for the pre-run estimates (not cached)"
            );
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
        let read = || read_cache(&p).unwrap();
        assert!(lookup(read(), "fp0").is_none(), "the oldest is dropped");
        assert_eq!(lookup(read(), &format!("fp{}", KEEP + 2)), Some(rates));
        assert!(lookup(read(), "other").is_none());
        let r = with_speed_now(Rates::default());
        assert!(
            r.speed > 0.0 && (0.01..=1.0).contains(&r.cpu_share),
            "{r:?}"
        );
    }
}
