//! The measuring loop: named cases, timed on the thread CPU clock in
//! interleaved repetitions, summarized as medians with their ranges, and
//! ratios taken within each repetition.

use crate::BenchError;
use std::collections::BTreeMap;

/// A case's timed loop: runs the given number of operations and returns
/// the nanoseconds they took on the measuring thread's CPU clock (for a
/// case on several threads, the per-thread time, as documented by the
/// case).
type Run<'a> = Box<dyn FnMut(u64) -> Result<f64, BenchError> + 'a>;

/// A benchmark case: a name, the operations one repetition runs, and its
/// timed loop. Everything a case needs (its tree, its handles, its worker
/// threads) is built when the case is, outside any timed region.
pub struct Case<'a> {
    name: String,
    iters: u64,
    run: Run<'a>,
}

impl std::fmt::Debug for Case<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("iters", &self.iters)
            .finish_non_exhaustive()
    }
}

impl<'a> Case<'a> {
    /// A case named `name` whose repetition runs `iters` operations of
    /// `run` (which returns the nanoseconds they took).
    pub fn new(
        name: impl Into<String>,
        iters: u64,
        run: impl FnMut(u64) -> Result<f64, BenchError> + 'a,
    ) -> Case<'a> {
        Case {
            name: name.into(),
            iters: iters.max(1),
            run: Box::new(run),
        }
    }

    /// The case's name (the key `mmlab bench` prints and writes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Operations per repetition.
    pub fn iters(&self) -> u64 {
        self.iters
    }

    /// Runs `iters` operations; the nanoseconds they took (what criterion's
    /// `iter_custom` wants).
    ///
    /// # Errors
    /// The case's own (a thread that cannot start, an engine error).
    pub fn run(&mut self, iters: u64) -> Result<f64, BenchError> {
        (self.run)(iters.max(1))
    }

    /// [`Case::run`] until it gives a figure, at most `attempts` times: a
    /// two-thread case gives NaN when its threads never ran side by side
    /// (a busy host), which criterion's `iter_custom` cannot take.
    ///
    /// # Errors
    /// As [`Case::run`]; [`BenchError::Setup`] when every attempt was NaN.
    pub fn run_finite(&mut self, iters: u64, attempts: usize) -> Result<f64, BenchError> {
        for _ in 0..attempts.max(1) {
            let ns = self.run(iters)?;
            if !ns.is_nan() {
                return Ok(ns);
            }
        }
        Err(BenchError::Setup {
            case: self.name.clone(),
            why: format!("no figure in {attempts} attempts (its threads never ran side by side)"),
        })
    }

    /// One repetition: nanoseconds per operation over [`Case::iters`].
    ///
    /// # Errors
    /// As [`Case::run`].
    pub fn sample(&mut self) -> Result<f64, BenchError> {
        let n = self.iters;
        Ok(self.run(n)? / n as f64)
    }
}

/// Median and range of a figure's repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
    /// The smallest repetition.
    pub min: f64,
    /// The largest repetition.
    pub max: f64,
}

impl Figure {
    /// The figure of `values`, NaNs left out (NaN everywhere when there
    /// are no others).
    pub fn of(values: &[f64]) -> Figure {
        let values: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        if values.is_empty() {
            return Figure {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let mut v = values;
        v.sort_by(f64::total_cmp);
        Figure {
            median: simcore::stats::median(&v),
            min: v[0],
            max: v[v.len() - 1],
        }
    }
}

/// Each case's ns per operation, one value per repetition, in the order
/// the repetitions ran.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    by_case: BTreeMap<String, Vec<f64>>,
}

impl Samples {
    /// Records one repetition of `name`.
    pub fn push(&mut self, name: &str, ns_per_op: f64) {
        self.by_case
            .entry(name.to_string())
            .or_default()
            .push(ns_per_op);
    }

    /// The repetitions of `name` (empty if it never ran).
    pub fn values(&self, name: &str) -> &[f64] {
        self.by_case.get(name).map_or(&[], Vec::as_slice)
    }

    /// The cases measured, by name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_case.keys().map(String::as_str)
    }

    /// Median and range of `name`.
    pub fn figure(&self, name: &str) -> Figure {
        Figure::of(self.values(name))
    }

    /// `num / den` within each repetition (the two ran in the same
    /// round, so a change of the host's load or clock between rounds
    /// cancels), summarized over the repetitions.
    pub fn ratio(&self, num: &str, den: &str) -> Figure {
        Figure::of(&self.paired(num, den, |a, b| a / b))
    }

    /// `a − b` within each repetition, summarized over the repetitions.
    pub fn difference(&self, a: &str, b: &str) -> Figure {
        Figure::of(&self.paired(a, b, |a, b| a - b))
    }

    fn paired(&self, a: &str, b: &str, f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
        self.values(a)
            .iter()
            .zip(self.values(b))
            .map(|(&x, &y)| f(x, y))
            .collect()
    }
}

/// Runs `reps` rounds; in each, every case takes one sample, in turn, so
/// that a burst of load from other processes (or a change of the host's
/// clock) between rounds hits every case alike. Each case first runs one
/// unrecorded repetition (the warm-up: its first touches of memory, a
/// lazily allocated row or snapshot). `progress(round)` is called after
/// each round (1-based).
///
/// # Errors
/// The first error a case returns.
pub fn run_rounds(
    cases: &mut [Case<'_>],
    reps: usize,
    progress: &mut dyn FnMut(usize),
) -> Result<Samples, BenchError> {
    for c in cases.iter_mut() {
        c.sample()?;
    }
    let mut s = Samples::default();
    for round in 1..=reps.max(1) {
        for c in cases.iter_mut() {
            let v = c.sample()?;
            s.push(&c.name, v);
        }
        progress(round);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_medians_and_ranges() {
        let f = Figure::of(&[3.0, 1.0, 2.0]);
        assert_eq!((f.median, f.min, f.max), (2.0, 1.0, 3.0));
        let f = Figure::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!((f.median, f.min, f.max), (2.5, 1.0, 4.0));
        assert!(Figure::of(&[]).median.is_nan());
        let f = Figure::of(&[f64::NAN, 1.0, 3.0]);
        assert_eq!((f.median, f.min, f.max), (2.0, 1.0, 3.0));
    }

    #[test]
    fn ratios_and_differences_pair_repetitions() {
        let mut s = Samples::default();
        for (a, b) in [(2.0, 1.0), (6.0, 2.0), (8.0, 2.0)] {
            s.push("a", a);
            s.push("b", b);
        }
        // Paired: 2, 3, 4 (the ratio of the medians would be 6 / 2 = 3 too,
        // but its range would not exist).
        let r = s.ratio("a", "b");
        assert_eq!((r.median, r.min, r.max), (3.0, 2.0, 4.0));
        let d = s.difference("a", "b");
        assert_eq!((d.median, d.min, d.max), (4.0, 1.0, 6.0));
        assert!(s.ratio("a", "missing").median.is_nan());
    }

    #[test]
    fn rounds_interleave_every_case_after_a_warm_up() {
        let log = std::cell::RefCell::new(Vec::new());
        let mut cases = vec![
            Case::new("x", 10, |n| {
                log.borrow_mut().push('x');
                Ok(n as f64 * 2.0)
            }),
            Case::new("y", 5, |n| {
                log.borrow_mut().push('y');
                Ok(n as f64 * 3.0)
            }),
        ];
        let mut rounds = 0;
        let s = run_rounds(&mut cases, 3, &mut |r| rounds = r).unwrap();
        drop(cases);
        assert_eq!(log.into_inner().iter().collect::<String>(), "xyxyxyxy");
        assert_eq!(rounds, 3);
        assert_eq!(s.values("x"), &[2.0, 2.0, 2.0]);
        assert_eq!(s.values("y"), &[3.0, 3.0, 3.0]);
    }
}
