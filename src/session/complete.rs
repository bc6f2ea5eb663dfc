//! Tab completion of the word before a cursor: names, methods after `.`, module members after `::`.
use std::any::TypeId;
use std::collections::BTreeSet;

use super::commands::COMMANDS;
use super::{Completion, Session};
use crate::script::help;

/// The name the script layer registers tensors under.
const TENSOR_TYPE: &str = "Tensor";

/// Rhai's own keywords, offered where a statement or expression starts (torchlet's come from help).
const KEYWORDS: &[&str] = &[
    "let", "const", "fn", "if", "else", "while", "loop", "for", "in", "do", "until", "return",
    "break", "continue", "true", "false", "switch", "try", "catch", "throw",
];

/// What the word before the cursor is completed against.
#[derive(Debug, PartialEq)]
enum Context<'a> {
    /// A `:command` at the start of the input.
    Command,
    /// A name after `:help `.
    HelpTopic,
    /// A method or property after `receiver.`; the receiver, when it is a plain name.
    Member(Option<&'a str>),
    /// A member of the module `ns::`.
    Module(&'a str),
    /// A variable, function, module or keyword.
    Global,
}

impl Session {
    /// Completion candidates for the word that ends at byte `cursor` of `code`.
    pub fn complete(&self, code: &str, cursor: usize) -> Completion {
        // `torch.ra` completes as `ra`, `torch.cuda.mem` as `cuda::mem`: the spelled text keeps
        // every offset (unless a rewrite changed a character's byte length; then use the typed).
        let spelled = self.spelled(code);
        let code = if spelled.len() == code.len() {
            spelled.as_str()
        } else {
            code
        };
        let mut cursor = cursor.min(code.len());
        while !code.is_char_boundary(cursor) {
            cursor -= 1;
        }
        let start = word_start(code, cursor);
        let (start, names) = match context(code, start) {
            Context::Command => {
                let colon = code[..start].rfind(':').unwrap_or(start);
                (
                    colon,
                    COMMANDS.iter().map(|c| format!(":{}", c.name)).collect(),
                )
            }
            Context::HelpTopic => (start, self.help_topics()),
            Context::Member(receiver) => (start, self.member_names(receiver)),
            Context::Module(ns) => (start, self.module_members(ns)),
            Context::Global => (start, self.global_names()),
        };
        let typed = &code[start..cursor];
        let matches = names
            .into_iter()
            .filter(|n| n.starts_with(typed) && !n.is_empty())
            .collect();
        Completion {
            start,
            end: cursor,
            matches,
        }
    }

    /// Variables, functions (documented, defined by the user, registered), modules and keywords.
    ///
    /// Rhai's standard library is left out here: its hundreds of helpers would bury the
    /// language's own names. After `.` it is offered, since there the receiver's type filters it.
    pub(super) fn global_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.variable_names().into_iter().collect();
        names.extend(help::names().into_iter().map(str::to_string));
        names.extend(help::keyword_names().into_iter().map(str::to_string));
        names.extend(self.functions.iter_functions().map(|f| f.name.to_string()));
        names.extend(self.registered_functions(false, |f| {
            f.namespace.is_empty() && is_identifier(&f.metadata.name)
        }));
        names.extend(self.module_names());
        names.insert("cuda".into());
        names.extend(KEYWORDS.iter().map(|k| k.to_string()));
        names
    }

    /// Everything `:help` knows about: global functions, tensor members, and `module::member`s.
    fn help_topics(&self) -> BTreeSet<String> {
        let mut names = self.global_names();
        names.extend(help::tensor_member_names().into_iter().map(str::to_string));
        names.insert("Tensor".into());
        for ns in self.module_names() {
            let members = self.module_members(&ns);
            names.extend(members.into_iter().map(|m| format!("{ns}::{m}")));
        }
        names
    }

    /// Methods and properties callable on `receiver` (on anything, when its type is unknown).
    fn member_names(&self, receiver: Option<&str>) -> BTreeSet<String> {
        let receiver = receiver.and_then(|name| self.scope.get(name));
        let receiver_type = receiver.map(rhai::Dynamic::type_id);
        let is_tensor = receiver
            .is_none_or(|value| self.engine.map_type_name(value.type_name()) == TENSOR_TYPE);
        let documented = help::tensor_member_names()
            .into_iter()
            .filter(|_| is_tensor)
            .map(str::to_string);
        let script_methods = self
            .functions
            .iter_functions()
            .filter(|f| !f.params.is_empty())
            .map(|f| f.name.to_string());
        let dynamic = TypeId::of::<rhai::Dynamic>();
        let native = self.registered_functions(true, |f| {
            let first = f.metadata.param_types.first();
            f.namespace.is_empty()
                && first.is_some()
                && receiver_type.is_none_or(|t| first == Some(&t) || first == Some(&dynamic))
        });
        native
            .into_iter()
            .filter_map(|name| member_name(&name).map(str::to_string))
            .chain(script_methods)
            .chain(documented)
            .collect()
    }

    /// Members of the module registered as `ns` (`cuda`).
    pub(super) fn module_members(&self, ns: &str) -> BTreeSet<String> {
        let mut names = self.registered_functions(true, |f| {
            f.namespace == ns && is_identifier(&f.metadata.name)
        });
        if ns == "cuda" {
            names.extend(help::cuda_names().into_iter().map(str::to_string));
        }
        names
    }

    /// Names of the modules registered in the engine (`cuda`).
    fn module_names(&self) -> BTreeSet<String> {
        self.engine
            .collect_fn_metadata(
                None,
                |f| (!f.namespace.is_empty()).then(|| f.namespace.to_string()),
                false,
            )
            .into_iter()
            .collect()
    }

    /// Names of the engine's native functions that pass `keep` (and Rhai's standard library's).
    fn registered_functions(
        &self,
        standard: bool,
        keep: impl Fn(&rhai::FuncInfo) -> bool + Copy,
    ) -> BTreeSet<String> {
        self.engine
            .collect_fn_metadata(
                None,
                |f| keep(&f).then(|| f.metadata.name.to_string()),
                standard,
            )
            .into_iter()
            .collect()
    }
}

/// Where the identifier that ends at `cursor` starts.
fn word_start(code: &str, cursor: usize) -> usize {
    code[..cursor]
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map_or(cursor, |(i, _)| i)
}

/// What the word starting at `start` completes against, judged from the text before it.
fn context(code: &str, start: usize) -> Context<'_> {
    let before = &code[..start];
    let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
    if before.trim_start() == ":" {
        return Context::Command;
    }
    if before.trim_start().starts_with(':') && !before.contains('\n') {
        let command = before.trim_start()[1..].split_whitespace().next();
        return match command {
            Some("help") => Context::HelpTopic,
            _ => Context::Global,
        };
    }
    if let Some(head) = line.strip_suffix("::") {
        return Context::Module(&head[word_start(head, head.len())..]);
    }
    if let Some(head) = line.strip_suffix('.') {
        if head.ends_with('.') {
            return Context::Global; // a range `a..b`
        }
        let name = &head[word_start(head, head.len())..];
        let plain = !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit());
        let chained = head[..head.len() - name.len()].ends_with(['.', ':']);
        return Context::Member((plain && !chained).then_some(name));
    }
    Context::Global
}

/// The name a function is used by after `.`: `get$shape` → `shape`; operators and indexers → none.
fn member_name(name: &str) -> Option<&str> {
    let name = name
        .strip_prefix("get$")
        .or_else(|| name.strip_prefix("set$"))
        .unwrap_or(name);
    is_identifier(name).then_some(name)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_follows_the_text_before_the_word() {
        assert_eq!(context(":me", 1), Context::Command);
        assert_eq!(context(":help mem", 6), Context::HelpTopic);
        assert_eq!(context("x.cu", 2), Context::Member(Some("x")));
        assert_eq!(context("f(x).cu", 5), Context::Member(None));
        assert_eq!(context("a.b.cu", 4), Context::Member(None));
        assert_eq!(context("1..cu", 3), Context::Global);
        assert_eq!(context("cuda::mem", 6), Context::Module("cuda"));
        assert_eq!(context("let y = ze", 8), Context::Global);
    }

    #[test]
    fn word_start_stops_at_punctuation() {
        assert_eq!(word_start("x.cu", 4), 2);
        assert_eq!(word_start("foo(ba", 6), 4);
        assert_eq!(word_start("foo(", 4), 4);
        assert_eq!(word_start("é_x", "é_x".len()), 0);
    }

    #[test]
    fn member_names_drop_accessor_prefixes_and_operators() {
        assert_eq!(member_name("get$shape"), Some("shape"));
        assert_eq!(member_name("cuda"), Some("cuda"));
        assert_eq!(member_name("+"), None);
        assert_eq!(member_name("index$get$"), None);
    }
}
