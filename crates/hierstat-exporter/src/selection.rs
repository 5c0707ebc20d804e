//! Which schema items a scrape exposes: an allowlist and a denylist of
//! item-name patterns ([`ExporterBuilder::allow_items`],
//! [`ExporterBuilder::deny_items`]).
//!
//! A pattern is an item's exact schema name (`anon`) or a prefix ending in
//! `*` (`workingset_*`; `*` alone is every item). Patterns match the
//! schema's names, not the sanitized metric names. Every pattern must match
//! at least one item of the schema, so that a typo or an item renamed in the
//! schema is an error when the exporter is built rather than a family that
//! silently disappears from dashboards.
//!
//! [`ExporterBuilder::allow_items`]: crate::ExporterBuilder::allow_items
//! [`ExporterBuilder::deny_items`]: crate::ExporterBuilder::deny_items

use crate::error::Error;
use hierstat::{Schema, Tolerance};

/// One allow or deny pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// An item's exact name.
    Exact(String),
    /// Every item whose name starts with this (the pattern without its
    /// trailing `*`).
    Prefix(String),
}

impl Pattern {
    fn parse(text: String) -> Pattern {
        match text.strip_suffix('*') {
            Some(prefix) => Pattern::Prefix(prefix.to_string()),
            None => Pattern::Exact(text),
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Pattern::Exact(exact) => name == exact,
            Pattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
        }
    }

    /// [`Error::UnknownItem`] for an exact name the schema lacks,
    /// [`Error::UnmatchedPattern`] for a prefix that matches no item.
    fn check(&self, schema: &Schema) -> Result<(), Error> {
        if schema.items().iter().any(|info| self.matches(&info.name)) {
            return Ok(());
        }
        Err(match self {
            Pattern::Exact(name) => Error::UnknownItem(name.clone()),
            Pattern::Prefix(prefix) => Error::UnmatchedPattern(format!("{prefix}*")),
        })
    }
}

/// The items a scrape exposes: those the allowlist matches (every item
/// when there is none) that the denylist does not.
#[derive(Debug, Clone, Default)]
pub(crate) struct ItemSelection {
    allow: Option<Vec<Pattern>>,
    deny: Vec<Pattern>,
}

impl ItemSelection {
    /// Adds allowlist patterns (the first call turns the allowlist on, so
    /// that an empty list exposes no item).
    pub(crate) fn allow<I, S>(&mut self, patterns: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow
            .get_or_insert_with(Vec::new)
            .extend(patterns.into_iter().map(|p| Pattern::parse(p.into())));
    }

    /// Adds denylist patterns.
    pub(crate) fn deny<I, S>(&mut self, patterns: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.deny
            .extend(patterns.into_iter().map(|p| Pattern::parse(p.into())));
    }

    /// Checks that every pattern matches an item of `schema`.
    ///
    /// # Errors
    /// [`Error::UnknownItem`], [`Error::UnmatchedPattern`].
    pub(crate) fn check(&self, schema: &Schema) -> Result<(), Error> {
        self.allow
            .iter()
            .flatten()
            .chain(&self.deny)
            .try_for_each(|p| p.check(schema))
    }

    /// Whether the item named `name` is exposed.
    pub(crate) fn exposes(&self, name: &str) -> bool {
        let allowed = match &self.allow {
            None => true,
            Some(allow) => allow.iter().any(|p| p.matches(name)),
        };
        allowed && !self.deny.iter().any(|p| p.matches(name))
    }
}

/// Each item's tolerance under
/// [`ScrapePolicy::Within`](crate::ScrapePolicy::Within): a default, and
/// patterns (as the allow and deny lists') whose last match wins
/// ([`ExporterBuilder::tolerance`](crate::ExporterBuilder::tolerance),
/// [`ExporterBuilder::item_tolerance`](crate::ExporterBuilder::item_tolerance)).
#[derive(Debug, Clone)]
pub(crate) struct Tolerances {
    default: Tolerance,
    items: Vec<(Pattern, Tolerance)>,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            default: Tolerance::EXACT,
            items: Vec::new(),
        }
    }
}

impl Tolerances {
    /// Sets the default.
    pub(crate) fn set_default(&mut self, t: Tolerance) {
        self.default = t;
    }

    /// Adds a pattern's tolerance (it overrides earlier ones where both
    /// match).
    pub(crate) fn set(&mut self, pattern: String, t: Tolerance) {
        self.items.push((Pattern::parse(pattern), t));
    }

    /// Checks that every pattern matches an item of `schema` and every
    /// tolerance is valid.
    ///
    /// # Errors
    /// [`Error::UnknownItem`], [`Error::UnmatchedPattern`],
    /// [`Error::Hierstat`] with [`hierstat::Error::InvalidTolerance`].
    pub(crate) fn check(&self, schema: &Schema) -> Result<(), Error> {
        self.default.check()?;
        for (p, t) in &self.items {
            p.check(schema)?;
            t.check()?;
        }
        Ok(())
    }

    /// The tolerance of the item named `name`.
    pub(crate) fn of(&self, name: &str) -> Tolerance {
        self.items
            .iter()
            .rev()
            .find(|(p, _)| p.matches(name))
            .map_or(self.default, |&(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hierstat::Unit;

    fn schema() -> Schema {
        let mut b = Schema::builder();
        b.state("anon", Unit::Pages);
        b.state("anon_thp", Unit::Pages);
        b.node_event("workingset_refault_anon", Unit::Count);
        b.node_event("workingset_nodereclaim", Unit::Count);
        b.event("pgfault", Unit::Count);
        b.build().unwrap()
    }

    fn exposed(sel: &ItemSelection) -> Vec<String> {
        schema()
            .items()
            .iter()
            .filter(|i| sel.exposes(&i.name))
            .map(|i| i.name.clone())
            .collect()
    }

    #[test]
    fn no_lists_expose_every_item() {
        let sel = ItemSelection::default();
        sel.check(&schema()).unwrap();
        assert_eq!(exposed(&sel).len(), 5);
    }

    #[test]
    fn exact_names_are_exact_and_prefixes_end_in_a_star() {
        let mut sel = ItemSelection::default();
        sel.allow(["anon", "workingset_*"]);
        sel.check(&schema()).unwrap();
        assert_eq!(
            exposed(&sel),
            ["anon", "workingset_refault_anon", "workingset_nodereclaim"]
        );
        let mut sel = ItemSelection::default();
        sel.allow(["anon*"]);
        assert_eq!(exposed(&sel), ["anon", "anon_thp"]);
    }

    #[test]
    fn deny_applies_after_allow() {
        let mut sel = ItemSelection::default();
        sel.allow(["*"]);
        sel.deny(["workingset_nodereclaim", "anon_*"]);
        sel.check(&schema()).unwrap();
        assert_eq!(
            exposed(&sel),
            ["anon", "workingset_refault_anon", "pgfault"]
        );
    }

    #[test]
    fn an_empty_allowlist_exposes_nothing() {
        let mut sel = ItemSelection::default();
        sel.allow(Vec::<String>::new());
        sel.check(&schema()).unwrap();
        assert!(exposed(&sel).is_empty());
    }

    #[test]
    fn the_last_matching_tolerance_wins() {
        let mut t = Tolerances::default();
        t.set_default(Tolerance::Relative(0.01));
        t.set("workingset_*".into(), Tolerance::Absolute(5));
        t.set("workingset_nodereclaim".into(), Tolerance::EXACT);
        t.check(&schema()).unwrap();
        assert_eq!(t.of("anon"), Tolerance::Relative(0.01));
        assert_eq!(t.of("workingset_refault_anon"), Tolerance::Absolute(5));
        assert_eq!(t.of("workingset_nodereclaim"), Tolerance::EXACT);
        t.set("pgscan".into(), Tolerance::EXACT);
        assert!(matches!(t.check(&schema()), Err(Error::UnknownItem(_))));
        let mut t = Tolerances::default();
        t.set_default(Tolerance::Relative(-1.0));
        assert!(matches!(
            t.check(&schema()),
            Err(Error::Hierstat(hierstat::Error::InvalidTolerance(_)))
        ));
    }

    #[test]
    fn patterns_that_match_nothing_are_errors() {
        let mut sel = ItemSelection::default();
        sel.allow(["anon", "workingset_refault"]);
        assert!(
            matches!(sel.check(&schema()), Err(Error::UnknownItem(n)) if n == "workingset_refault")
        );
        let mut sel = ItemSelection::default();
        sel.deny(["pgscan_*"]);
        assert!(matches!(sel.check(&schema()), Err(Error::UnmatchedPattern(p)) if p == "pgscan_*"));
    }
}
