//! The scenario kinds a program knows, and the one way a scenario file is
//! read: [`Catalog::parse`] picks the kind from the file's `kind` key.
//!
//! | `kind` | scenario kind | runs on |
//! |---|---|---|
//! | `stats` | [`crate::kinds::stats`] | the hierstat engine (simulated or real threads) |
//! | `numab` | [`crate::kinds::numab`] | the `numab` crate's scanner model |
//! | `refault` | [`crate::kinds::refault`] | the `models` crate's workingset model |
//! | `kernel` | the `kernelmode` crate | the host's own kernel |
//!
//! The built-in scenarios are the kinds' own lists, in registration order
//! ([`Catalog::builtins`]): the one list `mmlab list` shows.

use crate::error::ScenarioError;
use crate::kinds;
use crate::scenario::{Kind, Scenario, Source};
use serde::Deserialize;

/// The scenario kinds a program knows, in the order their built-in
/// scenarios are listed.
#[derive(Clone)]
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
    /// The kinds of this crate: `stats`, `numab`, `refault`.
    pub fn simulated() -> Catalog {
        Catalog {
            kinds: vec![
                &kinds::stats::KIND,
                &kinds::numab::KIND,
                &kinds::refault::KIND,
            ],
        }
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
                    crate::scenario::source::escape(&kind),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ranges;

    #[test]
    fn every_builtin_parses_to_its_kind_and_every_number_has_a_range() {
        let c = Catalog::simulated();
        for k in c.kinds() {
            for (name, text) in k.builtins {
                let s = c
                    .builtin(name)
                    .expect("listed")
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!((s.name(), s.kind()), (*name, k.name));
                let src = Source::new(name, text);
                let tables: [&[ranges::Range]; 3] = [k.ranges, &ranges::HEADER, &ranges::POLICY];
                for f in numeric_fields(src.doc().unwrap()) {
                    assert!(
                        ranges::find(&tables, &f).is_some(),
                        "{name}: {f} has no range"
                    );
                }
            }
        }
        let names: Vec<&str> = c.builtin_names().collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "a built-in name is listed twice");
    }

    /// Every numeric leaf of `t`, as dotted fields.
    pub(crate) fn numeric_fields(t: &toml_edit::Table) -> Vec<String> {
        let v: toml::Table = t.to_string().parse().unwrap();
        let mut out = Vec::new();
        walk("", &v, &mut out);
        out
    }

    fn walk(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
        for (k, v) in t {
            let f = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(t) => walk(&f, t, out),
                toml::Value::Integer(_) | toml::Value::Float(_) => out.push(f),
                toml::Value::Array(a) if a.iter().any(|x| x.is_integer() || x.is_float()) => {
                    out.push(f)
                }
                toml::Value::Array(a) => {
                    for x in a {
                        if let toml::Value::Table(t) = x {
                            walk(&f, t, out);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn bad_kind_and_numab_errors_name_line_and_field() {
        let c = Catalog::simulated();
        let e = c
            .parse("k.toml", "name = \"x\"\nkind = \"nope\"\n")
            .unwrap_err();
        assert_eq!((e.field.as_str(), e.line), ("kind", Some(2)));
        assert!(e.message.contains("known: stats, numab, refault"), "{e}");
        let (_, numa02) = ::numab::BUILTIN[3];
        let bad = numa02.replacen("policies = [", "policies = [\"v9\", ", 1);
        let e = c.parse("n.toml", &bad).unwrap_err();
        assert_eq!(e.field, "policies");
        assert!(e.line.is_some());
        assert!(e.message.contains("v9"), "{}", e.message);
    }

    #[test]
    fn added_policies_are_in_the_stored_text() {
        let c = Catalog::simulated();
        let p = crate::scenario::PolicySpec {
            threshold_size: Some("sqrt".into()),
            ..crate::scenario::PolicySpec::new("sq", hierstat::Preset::Linux6_8)
        };
        for name in ["refault-storm", "stale-read"] {
            let mut s = c.builtin(name).unwrap().unwrap();
            s.add_policies(std::slice::from_ref(&p)).unwrap();
            s.add_policies(std::slice::from_ref(&p)).unwrap();
            let again = c.parse("stored", &s.source()).unwrap();
            assert_eq!(again.user_policies(), std::slice::from_ref(&p), "{name}");
            let other = crate::scenario::PolicySpec::new("sq", hierstat::Preset::Hierstat);
            assert!(s.add_policies(&[other]).is_err());
        }
        let mut n = c.builtin("numa02").unwrap().unwrap();
        assert!(n.add_policies(&[p]).is_err());
    }

    #[test]
    fn overrides_apply_to_every_kind() {
        let c = Catalog::simulated();
        for name in ["stale-read", "numa02", "refault-storm"] {
            let mut s = c.builtin(name).unwrap().unwrap();
            s.apply(&crate::scenario::Overrides {
                policies: vec!["p".into()],
                runs: Some(3),
                seed: Some(9),
                duration_ms: Some(5),
            });
            assert_eq!(
                (s.policies(), s.runs(), s.seed()),
                (&["p".to_string()][..], 3, 9)
            );
        }
    }
}
