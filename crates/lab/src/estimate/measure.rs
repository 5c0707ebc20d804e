//! The host's rates measured beside what they measure: each work class's
//! probe run on this host ([`measure_rates`]). The front end caches the
//! result (`mmlab`'s `pipeline::rates`); this module does no I/O.

use super::{spin, REFERENCE_SPEED};
use crate::catalog::Catalog;
use crate::error::RunError;
use crate::progress::{Context, RunOptions};
use simcore::clock::CpuTimer;
use std::collections::BTreeMap;
use std::time::Duration;

/// One probe's measurement, for a front end that shows how the rates came
/// about ([`measure_rates_observed`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeTiming {
    /// The work class.
    pub class: &'static str,
    /// The probe's estimated work units.
    pub units: f64,
    /// Its run's CPU seconds (the calling thread's clock).
    pub cpu_seconds: f64,
    /// [`spin`]'s iterations per CPU second before and after it.
    pub loop_speed: (f64, f64),
}

/// Every probed class's units per CPU second at [`REFERENCE_SPEED`] on
/// this host with the context `ctx` (the simulator's costs among it): its
/// probe ([`super::WorkClass::probe`]) parsed by `catalog`, run once (twice
/// when that took under 0.2 s, keeping the faster), timed on the thread's
/// CPU clock and scaled by the spin loop's speed per CPU second measured
/// around it (so a probe beside a busy hyperthread sibling counts at full
/// speed). Classes without a probe are left out.
///
/// # Errors
/// A probe that does not parse or run (a bug: the probes are tested), or
/// [`RunError::Cancelled`].
pub fn measure_rates(catalog: &Catalog, ctx: &Context) -> Result<BTreeMap<String, f64>, RunError> {
    measure_rates_observed(catalog, ctx, &mut |_| {})
}

/// [`measure_rates`], handing each probe run's timing to `observe`.
///
/// # Errors
/// As [`measure_rates`].
pub fn measure_rates_observed(
    catalog: &Catalog,
    ctx: &Context,
    observe: &mut dyn FnMut(ProbeTiming),
) -> Result<BTreeMap<String, f64>, RunError> {
    let opts = RunOptions {
        context: ctx.clone(),
        cancel: simcore::Cancel::new(),
    };
    let mut out = BTreeMap::new();
    for class in catalog.work_classes() {
        let Some(probe) = class.probe else {
            continue;
        };
        let sc = catalog.parse(&format!("<probe {}>", class.name), probe)?;
        let units = sc.estimate(ctx).work;
        let mut best: f64 = 0.0;
        for rep in 0..2 {
            let (_, before) = spin(Duration::from_millis(20));
            let t = CpuTimer::start();
            sc.run(&opts, &mut |_| {})?;
            let s = (t.elapsed_ns() / 1e9).max(1e-6);
            let (_, after) = spin(Duration::from_millis(20));
            observe(ProbeTiming {
                class: class.name,
                units,
                cpu_seconds: s,
                loop_speed: (before, after),
            });
            let speed = (before + after) / 2.0;
            best = best.max(units / s * REFERENCE_SPEED / speed);
            if rep == 0 && s > 0.2 {
                break;
            }
        }
        out.insert(class.name.to_string(), best);
    }
    Ok(out)
}
