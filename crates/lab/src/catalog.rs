//! The scenario kinds a program knows, and the one way a scenario file is
//! read: [`Catalog::parse`] picks the kind from the file's `kind` key.
//!
//! | `kind` | scenario kind | runs on |
//! |---|---|---|
//! | `stats` | `sim::kinds::stats` | the hierstat engine (simulated or real threads) |
//! | `numab` | `sim::kinds::numab` | the `numab` crate's scanner model |
//! | `refault` | `sim::kinds::refault` | the `models` crate's workingset model |
//! | `kernel` | the `kernelmode` crate | the host's own kernel |
//!
//! The front end assembles its catalog from the kind crates
//! (`Catalog::new().with(&KIND)` per kind; `mmlab` does it once).
//!
//! The built-in scenarios are the kinds' own lists, in registration order
//! ([`Catalog::builtins`]): the one list `mmlab list` shows.

use crate::error::ScenarioError;
use crate::estimate::WorkClass;
use crate::scenario::{Kind, Scenario};
use crate::source::Source;
use serde::Deserialize;

/// The scenario kinds a program knows, in the order their built-in
/// scenarios are listed.
#[derive(Clone, Default)]
pub struct Catalog {
    kinds: Vec<&'static Kind>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.kinds.iter().map(|k| k.name))
            .finish()
    }
}

impl Catalog {
    /// A catalog that knows no kind yet.
    pub fn new() -> Catalog {
        Catalog { kinds: Vec::new() }
    }

    /// This catalog with `kind` added (its built-ins listed last).
    pub fn with(mut self, kind: &'static Kind) -> Catalog {
        self.kinds.push(kind);
        self
    }

    /// The kinds, in order.
    pub fn kinds(&self) -> impl Iterator<Item = &'static Kind> + '_ {
        self.kinds.iter().copied()
    }

    /// Parses and validates `text`, named `file` in errors; its `kind` key
    /// picks the kind.
    ///
    /// # Errors
    /// A [`ScenarioError`] with the file, line and field of the first
    /// problem (an unknown kind included).
    pub fn parse(&self, file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        /// Only the key that picks the kind; the kind reads the rest.
        #[derive(Deserialize)]
        struct KindKey {
            kind: String,
        }
        let src = Source::new(file, text);
        let KindKey { kind } = src.deserialize()?;
        let Some(k) = self.kinds.iter().find(|k| k.name == kind) else {
            let known: Vec<&str> = self.kinds.iter().map(|k| k.name).collect();
            return Err(src.error(
                "kind",
                format!(
                    "unknown kind `{}` (known: {})",
                    crate::source::escape(&kind),
                    known.join(", ")
                ),
            ));
        };
        Scenario::parse_as(k, &src)
    }

    /// Every built-in scenario, `(name, TOML)`, in list order.
    pub fn builtins(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.kinds.iter().flat_map(|k| k.builtins.iter().copied())
    }

    /// Every kind's classes of work, in order (each once).
    pub fn work_classes(&self) -> Vec<&'static WorkClass> {
        let mut out: Vec<&'static WorkClass> = Vec::new();
        for c in self
            .kinds
            .iter()
            .flat_map(|k| k.work_classes.iter().copied())
        {
            if !out.iter().any(|o| o.name == c.name) {
                out.push(c);
            }
        }
        out
    }

    /// The class named `name`, if a kind declares it.
    pub fn work_class(&self, name: &str) -> Option<&'static WorkClass> {
        self.work_classes().into_iter().find(|c| c.name == name)
    }

    /// The names of the built-in scenarios, in order.
    pub fn builtin_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.builtins().map(|(n, _)| n)
    }

    /// Looks up a built-in scenario by name and parses it.
    pub fn builtin(&self, name: &str) -> Option<Result<Scenario, ScenarioError>> {
        self.builtins()
            .find(|(n, _)| *n == name)
            .map(|(n, text)| self.parse(&format!("<builtin {n}>"), text))
    }
}
