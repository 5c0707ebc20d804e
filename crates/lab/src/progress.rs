//! What a run is given besides its scenario ([`RunOptions`]) and how it
//! reports back while it runs ([`Progress`], through [`Steps`]).
//!
//! A leaf module: the scenario kinds and the front ends both use it, and it
//! uses neither.

use crate::error::RunError;
use simcore::Cancel;
use std::any::Any;
use std::sync::Arc;

/// Options of a scenario run that do not come from the file.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// What the front end hands the kinds (the simulator's cost model).
    pub context: Context,
    /// Polled between steps: a cancelled run returns [`RunError::Cancelled`]
    /// (kernel runs clean up first).
    pub cancel: Cancel,
}

/// Values a front end hands the scenario kinds, one per type, that the
/// framework carries without knowing them: the simulator's per-unit costs
/// (`sim::cost::CostModel`, from `--costs`). A kind looks its own type up
/// and falls back to its defaults when the front end gave none.
#[derive(Clone, Default)]
pub struct Context {
    values: Vec<Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("values", &self.values.len())
            .finish()
    }
}

impl Context {
    /// This context with `value` set (replacing a value of its type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Context {
        self.values.retain(|v| !v.is::<T>());
        self.values.push(Arc::new(value));
        self
    }

    /// The value of type `T`, if the front end gave one.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.values.iter().find_map(|v| v.downcast_ref::<T>())
    }
}

/// Progress notifications for a front end (progress bars).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The number of steps of the whole scenario.
    Total(u64),
    /// One step is done; the label says which.
    Step(String),
}

/// A run's view of its options and its front end: the context, the
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

    /// What the front end handed the kinds.
    pub fn context(&self) -> &Context {
        &self.opts.context
    }

    /// Announces the number of steps.
    pub fn total(&mut self, n: u64) {
        (self.progress)(Progress::Total(n));
    }

    /// Reports a finished step, then checks the cancellation token.
    ///
    /// # Errors
    /// [`RunError::Cancelled`] once the token is cancelled.
    pub fn step(&mut self, label: String) -> Result<(), RunError> {
        self.notify(label);
        if self.opts.cancel.is_cancelled() {
            return Err(RunError::Cancelled);
        }
        Ok(())
    }

    /// Reports a finished step without checking the token (for steps
    /// reported from inside a runner that polls the token itself).
    pub fn notify(&mut self, label: String) {
        (self.progress)(Progress::Step(label));
    }
}
