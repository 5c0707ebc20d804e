//! The command line of the `serve_workload` example, checked before
//! anything starts: every value in its range (the message names the
//! argument and the range), and the tree, its writers' rows and a
//! `/metrics` scrape within [`MEMORY_CAP_BYTES`] ([`estimated_bytes`]).
//! Bad usage exits with status 2, as command-line tools do.

/// The usage line.
pub const USAGE: &str = "usage: serve_workload [--listen ADDR] [--threads N] [--pods N] \
[--burst N] [--policy flush|bounded|cached] [--flusher-ms N] [--seconds N]";

/// Writer threads: at most this many (each its own shard).
pub const MAX_THREADS: usize = 256;
/// Kubernetes pods: at most this many (and fewer with many threads: the
/// memory cap).
pub const MAX_PODS: usize = 1_000_000;
/// The background flusher's period: at most an hour.
pub const MAX_FLUSHER_MS: u64 = 3_600_000;
/// The most memory the example may need ([`estimated_bytes`]): 2 GiB.
pub const MEMORY_CAP_BYTES: u64 = 2 << 30;

/// Memory besides the pods: the systemd part of the tree, the threads'
/// stacks, the server.
const BASE_BYTES: u64 = 16 << 20;
/// One pod (three groups, two of them written) as one writer fills it.
const TREE_PER_POD: u64 = 12 << 10;
/// Each further writer's rows in one pod's two containers (measured: 2.2
/// KiB).
const ROWS_PER_POD_PER_THREAD: u64 = 5 << 9;
/// One pod's lines in a scrape (three groups of about 15.5 KB each with
/// local values and bounds; see the crate's "Sizing a scrape"), counted
/// twice: a scrape rendered while the last one is kept.
const SCRAPE_PER_POD: u64 = 2 * (48 << 10);

/// The scrape policy (`--policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Flush before each scrape.
    Flush,
    /// Values with their error bounds, no flush.
    Bounded,
    /// The background flusher's values.
    Cached,
}

/// What to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The address to listen on.
    pub listen: String,
    /// Writer threads (0: a static tree).
    pub threads: usize,
    /// Kubernetes pods of two containers.
    pub pods: usize,
    /// Updates between 1 ms pauses per writer (0: none).
    pub burst: u64,
    /// The scrape policy.
    pub policy: Policy,
    /// The background flusher's period in ms (0: none).
    pub flusher_ms: u64,
    /// Run time in seconds (0: until killed).
    pub seconds: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            listen: "127.0.0.1:9464".into(),
            threads: 2,
            pods: 100,
            burst: 200,
            policy: Policy::Flush,
            flusher_ms: 0,
            seconds: 0,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Serve with these options.
    Serve(Options),
    /// Print the usage.
    Help,
}

/// The memory `pods` pods and `threads` writers need: the tree, the rows
/// each writer adds to every group it charges, and a scrape (measured on
/// this example's tree; an estimate, not a bound).
pub fn estimated_bytes(pods: usize, threads: usize) -> u64 {
    let per_pod =
        TREE_PER_POD + ROWS_PER_POD_PER_THREAD * threads.saturating_sub(1) as u64 + SCRAPE_PER_POD;
    BASE_BYTES.saturating_add(per_pod.saturating_mul(pods as u64))
}

/// The most pods that fit the memory cap with `threads` writers.
pub fn max_pods(threads: usize) -> usize {
    let per_pod =
        TREE_PER_POD + ROWS_PER_POD_PER_THREAD * threads.saturating_sub(1) as u64 + SCRAPE_PER_POD;
    let fit = (MEMORY_CAP_BYTES - BASE_BYTES) / per_pod;
    usize::try_from(fit).unwrap_or(MAX_PODS).min(MAX_PODS)
}

/// A whole number in `lo..=hi` for `arg`.
fn number(arg: &str, value: &str, lo: u64, hi: u64, what: &str) -> Result<u64, String> {
    let n: u64 = value
        .trim()
        .parse()
        .map_err(|_| format!("{arg} {value:?}: not a whole number ({what}: {lo} to {hi})"))?;
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{arg} {n}: out of range ({what}: {lo} to {hi})"))
    }
}

/// Reads the arguments (without the program name).
///
/// # Errors
/// A usage error: an unknown argument, a missing value, a value that is
/// not a number or out of its range (the message names the argument and
/// the range), or sizes over the memory cap.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let mut o = Options::default();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            return Ok(Parsed::Help);
        }
        let Some(value) = (match a.as_str() {
            "--listen" | "--threads" | "--pods" | "--burst" | "--flusher-ms" | "--seconds"
            | "--policy" => Some(args.next().ok_or(format!("{a} needs a value"))?),
            _ => None,
        }) else {
            return Err(format!("unknown argument {a:?}"));
        };
        match a.as_str() {
            "--listen" => o.listen = value,
            "--threads" => {
                o.threads = number(&a, &value, 0, MAX_THREADS as u64, "writer threads")? as usize
            }
            "--pods" => o.pods = number(&a, &value, 0, MAX_PODS as u64, "pods")? as usize,
            "--burst" => o.burst = number(&a, &value, 0, u64::MAX, "updates per burst")?,
            "--flusher-ms" => o.flusher_ms = number(&a, &value, 0, MAX_FLUSHER_MS, "milliseconds")?,
            "--seconds" => o.seconds = number(&a, &value, 0, u64::MAX, "seconds")?,
            _ => {
                o.policy = match value.as_str() {
                    "flush" => Policy::Flush,
                    "bounded" => Policy::Bounded,
                    "cached" => Policy::Cached,
                    p => return Err(format!("--policy {p:?}: one of flush, bounded, cached")),
                }
            }
        }
    }
    if o.pods > max_pods(o.threads) {
        return Err(format!(
            "--pods {} with --threads {}: about {:.1} GiB (the tree, its writers' rows and a \
             /metrics scrape), over this example's cap of {} GiB; at most {} pods with {} \
             threads",
            o.pods,
            o.threads,
            estimated_bytes(o.pods, o.threads) as f64 / f64::from(1u32 << 30),
            MEMORY_CAP_BYTES >> 30,
            max_pods(o.threads),
            o.threads
        ));
    }
    Ok(Parsed::Serve(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<Parsed, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_a_full_command_line() {
        assert_eq!(parsed(&[]), Ok(Parsed::Serve(Options::default())));
        assert_eq!(parsed(&["--help"]), Ok(Parsed::Help));
        let o = parsed(&[
            "--listen",
            "0.0.0.0:1",
            "--threads",
            "8",
            "--pods",
            "1000",
            "--burst",
            "0",
            "--policy",
            "cached",
            "--flusher-ms",
            "100",
            "--seconds",
            "5",
        ]);
        let Ok(Parsed::Serve(o)) = o else {
            panic!("{o:?}")
        };
        assert_eq!((o.threads, o.pods, o.policy), (8, 1000, Policy::Cached));
    }

    #[test]
    fn bad_values_name_the_argument_and_its_range() {
        for (args, want) in [
            (
                &["--threads", "100000"][..],
                "--threads 100000: out of range",
            ),
            (&["--threads", "x"], "--threads \"x\": not a whole number"),
            (&["--pods", "-1"], "--pods \"-1\": not a whole number"),
            (&["--pods", "10000000"], "--pods 10000000: out of range"),
            (&["--flusher-ms", "1e9"], "--flusher-ms \"1e9\""),
            (&["--seconds"], "--seconds needs a value"),
            (&["--policy", "fast"], "one of flush, bounded, cached"),
            (&["--bogus"], "unknown argument"),
        ] {
            let e = parsed(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        let e = parsed(&["--threads", "100000"]).unwrap_err();
        assert!(e.contains(&format!("0 to {MAX_THREADS}")), "{e}");
    }

    #[test]
    fn sizes_over_the_memory_cap_are_refused() {
        let most = max_pods(2);
        assert!(most > 10_000, "{most}");
        assert!(estimated_bytes(most, 2) <= MEMORY_CAP_BYTES);
        assert!(estimated_bytes(most + 1, 2) > MEMORY_CAP_BYTES);
        assert!(parsed(&["--pods", &most.to_string()]).is_ok());
        let e = parsed(&["--pods", &(most + 1).to_string()]).unwrap_err();
        assert!(
            e.contains("cap of 2 GiB") && e.contains(&most.to_string()),
            "{e}"
        );
        // More writers, fewer pods.
        assert!(max_pods(MAX_THREADS) < most);
        assert!(parsed(&["--threads", "256", "--pods", &most.to_string()]).is_err());
    }
}
