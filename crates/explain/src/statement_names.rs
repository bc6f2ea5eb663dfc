//! The statement and variable behind each allocation tag of a trace, for frames and legends.
use std::collections::{BTreeSet, HashMap};

use crate::site_name::{self, Site};

/// What one tag says: where, which statement, and the variable it assigns (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    /// The source file or cell.
    pub file: String,
    /// The 1-based line.
    pub line: u64,
    /// The statement's text.
    pub statement: String,
    /// The variable the statement assigns, if it assigns one.
    pub variable: Option<String>,
}

/// Names the tags of one snapshot or trace.
///
/// A name keeps the whole source line and the statement's column, not its own text; where a line
/// holds several statements, the k-th column seen on that line is taken as its k-th statement
/// (a statement that never allocates is not seen, so this is a best guess on such lines).
#[derive(Default)]
pub struct Namer {
    columns: HashMap<(String, u64), BTreeSet<u64>>,
    cache: HashMap<String, Option<Named>>,
}

impl Namer {
    /// A namer for a trace whose tags are `tags`.
    pub fn new<'a>(tags: impl IntoIterator<Item = &'a str>) -> Namer {
        let mut namer = Namer::default();
        for site in tags.into_iter().filter_map(site_name::parse) {
            namer
                .columns
                .entry((site.file.to_string(), site.line))
                .or_default()
                .insert(site.col);
        }
        namer
    }

    /// What `tag` says; `None` for no tag or one that is not a statement name.
    pub fn name(&mut self, tag: Option<&str>) -> Option<Named> {
        let tag = tag?;
        if let Some(named) = self.cache.get(tag) {
            return named.clone();
        }
        let named = site_name::parse(tag).map(|site| self.resolve(&site));
        self.cache.insert(tag.to_string(), named.clone());
        named
    }

    fn resolve(&self, site: &Site) -> Named {
        let parts = site_name::statements(site.text);
        // An unindented line (a REPL input, a notebook cell): the column is the statement's offset.
        let at_column = parts
            .iter()
            .find(|(offset, _)| *offset as u64 + 1 == site.col);
        let k = self
            .columns
            .get(&(site.file.to_string(), site.line))
            .and_then(|cols| cols.iter().position(|&c| c == site.col))
            .unwrap_or(0);
        let statement = match at_column {
            _ if parts.len() == 1 => site.text,
            Some((_, s)) => s,
            None => parts.get(k).map_or(site.text, |(_, s)| s),
        };
        Named {
            file: site.file.to_string(),
            line: site.line,
            statement: statement.to_string(),
            variable: site_name::assigned_name(statement).map(str::to_string),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_column_of_a_line_is_its_kth_statement() {
        let a = "s.rhai:3:5: let a = f(); let b = g();";
        let b = "s.rhai:3:16: let a = f(); let b = g();";
        let unindented = "<in>:1:14: let a = f(); let b = g();";
        assert_eq!(
            Namer::new([unindented])
                .name(Some(unindented))
                .unwrap()
                .variable
                .as_deref(),
            Some("b")
        );
        let mut namer = Namer::new([a, b]);
        assert_eq!(namer.name(Some(b)).unwrap().variable.as_deref(), Some("b"));
        let first = namer.name(Some(a)).unwrap();
        assert_eq!((first.statement.as_str(), first.line), ("let a = f()", 3));
        assert_eq!(namer.name(None), None);
    }
}
