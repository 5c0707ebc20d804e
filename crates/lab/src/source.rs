//! A TOML input file (scenario, policy, sweep or cost file) read once, with
//! every error placed by the parser's own spans: the file, the 1-based
//! line and the dotted field of the first problem.
//!
//! Two parsers read the text. The typed deserialization (`toml` through
//! `serde_path_to_error`) reports syntax errors, wrong types, unknown and
//! missing keys with the span and path toml gives it
//! ([`Source::deserialize`]). The semantic checks that come after (ranges,
//! required tables, relations between fields) name a dotted field, and its
//! line comes from the same text parsed by `toml_edit`, which keeps the
//! span of every key and table header ([`Source::line_of`]).

use crate::error::ScenarioError;

/// The most characters of an error message (a message quoting a huge
/// value shows its start).
pub const MESSAGE_MAX: usize = 300;

/// An input file: its name (for errors), its text, and the text's TOML
/// tree with spans (`None` when it does not parse; the deserialization
/// then reports the syntax error).
#[derive(Debug)]
pub struct Source<'a> {
    /// The file name (`<builtin NAME>` for embedded scenarios).
    pub file: &'a str,
    /// The text.
    pub text: &'a str,
    doc: Option<toml_edit::ImDocument<&'a str>>,
}

impl<'a> Source<'a> {
    /// Reads `text`, named `file` in errors.
    pub fn new(file: &'a str, text: &'a str) -> Source<'a> {
        Source {
            file,
            text,
            doc: toml_edit::ImDocument::parse(text).ok(),
        }
    }

    /// The TOML tree with spans, when the text parses.
    pub fn doc(&self) -> Option<&toml_edit::Table> {
        self.doc.as_ref().map(|d| d.as_table())
    }

    /// Deserializes the text into `T`, reporting the file, the line (from
    /// toml's span) and the dotted field path (from `serde_path_to_error`)
    /// of the first problem.
    ///
    /// # Errors
    /// A [`ScenarioError`] for a syntax error, a wrong type, an unknown or a
    /// missing key.
    pub fn deserialize<T: serde::de::DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        let de = toml::Deserializer::new(self.text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let field = e.path().to_string();
            let inner = e.into_inner();
            ScenarioError {
                file: self.file.to_string(),
                line: inner.span().map(|s| line_of(self.text, s.start)),
                field: if field == "." { String::new() } else { field },
                message: elide(
                    &escape(&syntax_message(self.text, inner.message(), inner.span())),
                    MESSAGE_MAX,
                ),
            }
        })
    }

    /// A semantic problem with the dotted `field` (`readers.period_ms`,
    /// `policy[1].batch`): placed at the field's key, or at its table's
    /// header when the key is absent ([`Source::line_of`]).
    pub fn error(&self, field: &str, message: impl AsRef<str>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            line: self.line_of(field),
            field: field.to_string(),
            message: elide(&escape(message.as_ref()), MESSAGE_MAX),
        }
    }

    /// Whether the file sets the dotted `field` itself (its key is in the
    /// text), rather than leaving it to its default.
    pub fn sets(&self, field: &str) -> bool {
        let mut table: &dyn toml_edit::TableLike = match self.doc() {
            Some(d) => d,
            None => return false,
        };
        let segments: Vec<&str> = field.split('.').collect();
        for (i, seg) in segments.iter().enumerate() {
            let Some(item) = table.get(seg) else {
                return false;
            };
            if i + 1 == segments.len() {
                return true;
            }
            table = match item {
                toml_edit::Item::Table(t) => t,
                toml_edit::Item::Value(toml_edit::Value::InlineTable(t)) => t,
                _ => return false,
            };
        }
        false
    }

    /// A problem between `field` and the fields it is checked against
    /// (`others`: `workload.cpus` is more than `cpus`), reported where the
    /// user can act on it: at `field` when the file sets it; else at the
    /// first of `others` the file sets, the message saying that `field`
    /// has its default value there; else at `field`'s table.
    pub fn error_between(
        &self,
        field: &str,
        others: &[&str],
        message: impl AsRef<str>,
    ) -> ScenarioError {
        let message = message.as_ref();
        if self.sets(field) {
            return self.error(field, message);
        }
        let note = format!("{message} (`{field}` is not set in the file: that is its default)");
        match others.iter().find(|o| self.sets(o)) {
            Some(o) => self.error(o, note),
            None => self.error(field, note),
        }
    }

    /// The 1-based line that defines the dotted `field` (segments may
    /// index an array of tables: `policy[1].batch`): its key's line; when
    /// the key is absent, the line of the innermost table header on the
    /// way; `None` when neither is in the text.
    pub fn line_of(&self, field: &str) -> Option<usize> {
        let mut table: &dyn toml_edit::TableLike = self.doc()?;
        let mut best = None;
        let segments: Vec<&str> = field.split('.').collect();
        for (i, seg) in segments.iter().enumerate() {
            let (name, index) = match seg.split_once('[') {
                Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
                None => (*seg, None),
            };
            let Some((key, item)) = table.get_key_value(name) else {
                return best;
            };
            let key_line = key.span().map(|s| line_of(self.text, s.start));
            let last = i + 1 == segments.len();
            let inner: &dyn toml_edit::TableLike = match (item, index) {
                (toml_edit::Item::ArrayOfTables(a), Some(k)) => {
                    let Some(t) = a.get(k) else {
                        return best.or(key_line);
                    };
                    best = t.span().map(|s| line_of(self.text, s.start)).or(key_line);
                    t
                }
                _ if last => return key_line.or(best),
                (toml_edit::Item::Table(t), None) => {
                    best = t.span().map(|s| line_of(self.text, s.start)).or(key_line);
                    t
                }
                (toml_edit::Item::Value(toml_edit::Value::InlineTable(t)), None) => {
                    best = key_line;
                    t
                }
                _ => return key_line.or(best),
            };
            if last {
                return best;
            }
            table = inner;
        }
        best
    }
}

/// 1-based line of byte offset `pos` in `text`.
pub fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for messages
/// and tables that show user-supplied names.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `s` cut to `max` characters, the rest elided with `…`.
pub fn elide(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

/// toml's message for a syntax error, on one line: its lines joined with
/// `; ` (a line break would show as a literal `\n` once escaped); where
/// toml gives none, what stands at the error: the end of the file, or the
/// character found. A file whose lines end in a bare carriage return (old
/// Mac OS line ends, which TOML does not take) says so.
fn syntax_message(text: &str, message: &str, span: Option<std::ops::Range<usize>>) -> String {
    let mut parts: Vec<String> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if parts.is_empty() {
        let at = span.map_or(text.len(), |s| s.start);
        parts.push(match text.get(at..).and_then(|rest| rest.chars().next()) {
            None => "unexpected end of file: a value is missing".to_string(),
            Some(c) => format!("unexpected {c:?}"),
        });
    }
    let bytes = text.as_bytes();
    let bare_cr = bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
    if bare_cr {
        parts.push(
            "the file ends its lines with a bare carriage return (\\r); TOML needs \\n or \\r\\n"
                .to_string(),
        );
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n\n[tree]\nfanout = [2, 3]\n\n[[policy]]\nname = \"a\"\n\n[[policy]]\nname = \"b\"\nbatch = 4\n\n[numab]\nnodes = 2\nworkload = { kind = \"numa02\", passes = 3 }\n";

    #[test]
    fn fields_are_placed_by_the_parser_spans() {
        let s = Source::new("f.toml", TEXT);
        assert_eq!(s.line_of("name"), Some(1));
        assert_eq!(s.line_of("tree.fanout"), Some(4));
        // An absent key: its table's header.
        assert_eq!(s.line_of("tree.names"), Some(3));
        assert_eq!(s.line_of("tree"), Some(3));
        assert_eq!(s.line_of("policy[1].batch"), Some(11));
        assert_eq!(s.line_of("policy[1].period_ms"), Some(9));
        assert_eq!(s.line_of("policy[0].name"), Some(7));
        assert_eq!(s.line_of("numab.workload.passes"), Some(15));
        assert_eq!(s.line_of("numab.workload"), Some(15));
        assert_eq!(s.line_of("numab.sysctl.hz"), Some(13));
        assert_eq!(s.line_of("readers.period_ms"), None);
        let e = s.error("tree.fanout", "bad\u{1b}");
        assert_eq!((e.line, e.message.as_str()), (Some(4), "bad\\u{1b}"));
        assert_eq!(Source::new("f", "a = = 1").line_of("a"), None);
        assert!(s.sets("tree.fanout") && !s.sets("tree.names") && !s.sets("nope.x"));
        assert!(s.sets("numab.workload.kind") && !s.sets("numab.workload.threads"));
        // A default compared with a value the file sets: placed there.
        let e = s.error_between("tree.names", &["name", "tree.fanout"], "too many");
        assert_eq!((e.field.as_str(), e.line), ("name", Some(1)));
        assert!(e.message.contains("`tree.names` is not set"), "{e}");
        let e = s.error_between("tree.fanout", &["name"], "bad");
        assert_eq!((e.field.as_str(), e.line), ("tree.fanout", Some(4)));
    }

    #[test]
    fn deserialization_errors_carry_line_and_path() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            tree: Tree,
        }
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Tree {
            fanout: Vec<u32>,
        }
        let e = Source::new("f.toml", "[tree]\nfanout = \"x\"\n")
            .deserialize::<T>()
            .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(2), "tree.fanout"));
        assert_eq!(elide("abcdef", 4), "abc…");
    }
}
