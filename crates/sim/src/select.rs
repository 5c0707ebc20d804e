//! The backend a resolved flush policy ([`lab::policy::FlushPolicy`])
//! runs on: the hierstat engine under a preset or a user policy, or the
//! pre-rstat eager-atomic baseline ([`AnyBackend`]).

use crate::backend::StatsBackend;
use crate::baselines::EagerTree;
use crate::engine::EngineBackend;
use crate::error::SimError;
use crate::workload::TreeShape;
use lab::policy::{Engine, FlushPolicy};

/// A backend of either kind, dispatched without dynamic calls on hot loops.
#[derive(Debug)]
pub enum AnyBackend {
    /// hierstat under a preset.
    Engine(Box<EngineBackend>),
    /// The eager-atomic baseline.
    Eager(EagerTree),
}

impl AnyBackend {
    /// Builds `choice` over `shape`.
    ///
    /// # Errors
    /// The engine refuses the tree or the policy.
    pub fn build(
        choice: FlushPolicy,
        shape: &TreeShape,
        items: usize,
        shards: usize,
    ) -> Result<Self, SimError> {
        Ok(match choice.engine {
            Engine::Preset(p) => {
                AnyBackend::Engine(Box::new(EngineBackend::new(p, shape, items, shards)?))
            }
            Engine::Kernel(k) => AnyBackend::Engine(Box::new(EngineBackend::with_policy(
                k.name(),
                k.knobs(),
                shape,
                items,
                shards,
            )?)),
            Engine::User(p) => AnyBackend::Engine(Box::new(EngineBackend::with_policy(
                "user", p, shape, items, shards,
            )?)),
            Engine::PreRstat => AnyBackend::Eager(EagerTree::new(shape, items)),
        })
    }

    /// The backend as a trait object, for code off the hot path.
    pub fn as_dyn(&self) -> &dyn StatsBackend {
        match self {
            AnyBackend::Engine(e) => e.as_ref(),
            AnyBackend::Eager(e) => e,
        }
    }
}

/// Calls `$body` with `$b` bound to the concrete backend inside `$any`
/// (`&AnyBackend`), or, with `mut $b`, to a `&mut` of it (`$any`: `&mut
/// AnyBackend`; the simulated runner's).
#[macro_export]
macro_rules! with_backend {
    ($any:expr, mut $b:ident => $body:expr) => {
        match $any {
            $crate::select::AnyBackend::Engine(e) => {
                let $b: &mut $crate::engine::EngineBackend = e;
                $body
            }
            $crate::select::AnyBackend::Eager(e) => {
                let $b: &mut $crate::baselines::EagerTree = e;
                $body
            }
        }
    };
    ($any:expr, $b:ident => $body:expr) => {
        match $any {
            $crate::select::AnyBackend::Engine(e) => {
                let $b: &$crate::engine::EngineBackend = e;
                $body
            }
            $crate::select::AnyBackend::Eager(e) => {
                let $b: &$crate::baselines::EagerTree = e;
                $body
            }
        }
    };
}
