//! The backend a flush-policy name selects: the hierstat engine under a
//! preset or a user policy, or the pre-rstat eager-atomic baseline
//! ([`PolicyChoice`], [`AnyBackend`]).

use crate::backend::StatsBackend;
use crate::baselines::EagerTree;
use crate::engine::EngineBackend;
use crate::error::SimError;
use crate::workload::TreeShape;
use hierstat::{Policy, Preset};
use lab::policy::{self, PolicySpec};

/// A flush policy a stats scenario can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyChoice {
    /// The hierstat engine under a preset.
    Engine(Preset),
    /// The hierstat engine under a user policy (`[[policy]]`).
    User(Policy),
    /// The pre-rstat eager-atomic baseline.
    PreRstat,
}

impl PolicyChoice {
    /// Parses a built-in policy name.
    pub fn parse(name: &str) -> Option<Self> {
        if name == EagerTree::NAME {
            return Some(PolicyChoice::PreRstat);
        }
        name.parse::<Preset>().ok().map(PolicyChoice::Engine)
    }

    /// Resolves a policy name: a built-in name, or one of `user`
    /// (`[[policy]]` tables).
    pub fn of(user: &[PolicySpec], name: &str) -> Option<Self> {
        PolicyChoice::parse(name).or_else(|| {
            policy::find(user, name)
                .and_then(|s| s.resolve().ok())
                .map(PolicyChoice::User)
        })
    }

    /// The built-in names: every preset and `pre-rstat`.
    pub fn builtin_names() -> Vec<String> {
        Preset::ALL
            .iter()
            .map(|p| p.name().to_string())
            .chain(std::iter::once(EagerTree::NAME.to_string()))
            .collect()
    }
}

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
        choice: PolicyChoice,
        shape: &TreeShape,
        items: usize,
        shards: usize,
    ) -> Result<Self, SimError> {
        Ok(match choice {
            PolicyChoice::Engine(p) => {
                AnyBackend::Engine(Box::new(EngineBackend::new(p, shape, items, shards)?))
            }
            PolicyChoice::User(p) => AnyBackend::Engine(Box::new(EngineBackend::with_policy(
                "user", p, shape, items, shards,
            )?)),
            PolicyChoice::PreRstat => AnyBackend::Eager(EagerTree::new(shape, items)),
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

/// Calls `$body` with `$b` bound to the concrete backend inside `$any`.
#[macro_export]
macro_rules! with_backend {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_parse() {
        assert_eq!(
            PolicyChoice::parse("pre-rstat"),
            Some(PolicyChoice::PreRstat)
        );
        assert_eq!(
            PolicyChoice::parse("linux-6.8"),
            Some(PolicyChoice::Engine(Preset::Linux6_8))
        );
        assert_eq!(PolicyChoice::parse("linux-9"), None);
    }
}
