//! What a run is given besides its scenario ([`RunOptions`]) and how it
//! reports back while it runs ([`Progress`], through [`Steps`]).
//!
//! A leaf module: the scenario kinds and the front ends both use it, and it
//! uses neither.

use crate::cost::CostModel;
use crate::error::SimError;
use simcore::Cancel;

/// Options of a scenario run that do not come from the file.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Per-unit costs for simulated mode.
    pub costs: CostModel,
    /// Polled between steps: a cancelled run returns [`SimError::Cancelled`]
    /// (kernel runs clean up first).
    pub cancel: Cancel,
}

/// Progress notifications for a front end (progress bars).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The number of steps of the whole scenario.
    Total(u64),
    /// One step is done; the label says which.
    Step(String),
}

/// A run's view of its options and its front end: the costs, the
/// cancellation token, and the progress callback.
pub struct Steps<'a> {
    opts: &'a RunOptions,
    progress: &'a mut dyn FnMut(Progress),
}

impl std::fmt::Debug for Steps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps").field("opts", self.opts).finish()
    }
}

impl<'a> Steps<'a> {
    /// Steps reported to `progress`, under `opts`.
    pub fn new(opts: &'a RunOptions, progress: &'a mut dyn FnMut(Progress)) -> Steps<'a> {
        Steps { opts, progress }
    }

    /// The run's options.
    pub fn opts(&self) -> &RunOptions {
        self.opts
    }

    /// The per-unit costs of simulated mode.
    pub fn costs(&self) -> &CostModel {
        &self.opts.costs
    }

    /// Announces the number of steps.
    pub fn total(&mut self, n: u64) {
        (self.progress)(Progress::Total(n));
    }

    /// Reports a finished step, then checks the cancellation token.
    ///
    /// # Errors
    /// [`SimError::Cancelled`] once the token is cancelled.
    pub fn step(&mut self, label: String) -> Result<(), SimError> {
        self.notify(label);
        if self.opts.cancel.is_cancelled() {
            return Err(SimError::Cancelled);
        }
        Ok(())
    }

    /// Reports a finished step without checking the token (for steps
    /// reported from inside a runner that polls the token itself).
    pub fn notify(&mut self, label: String) {
        (self.progress)(Progress::Step(label));
    }
}
