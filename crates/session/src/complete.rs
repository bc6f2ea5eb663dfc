//! Tab completion of the word before a cursor (names, members after `.` or `::`), each candidate typed for the REPL and the kernel.
use std::any::TypeId;
use std::collections::{BTreeMap, BTreeSet};

use super::commands::{command_with_argument, Completes, COMMANDS};
use super::Session;
use torchlet_rhai::surface::help::{self, Kind};

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

/// What a candidate names, as ipykernel's completion `type` (JupyterLab shows it as a badge).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CompletionKind {
    /// A variable of the session.
    Variable,
    /// A statement word: Rhai's (`let`, `fn`) or torchlet's (`del`, `no_grad`).
    Keyword,
    /// A function called by name (`zeros`, `cuda::memory_allocated`, one the user defined).
    Function,
    /// A method called after `.` (`t.sum()`).
    Method,
    /// A property read after `.` (`t.shape`).
    Property,
    /// A module (`cuda`).
    Module,
    /// A `:command` (a `%magic` in the kernel).
    Magic,
    /// A type (`Tensor`, after `:help`).
    Class,
}

impl CompletionKind {
    /// The name ipykernel and JupyterLab use for this kind.
    pub fn name(self) -> &'static str {
        match self {
            CompletionKind::Variable => "variable",
            CompletionKind::Keyword => "keyword",
            CompletionKind::Function => "function",
            CompletionKind::Method => "method",
            CompletionKind::Property => "property",
            CompletionKind::Module => "module",
            CompletionKind::Magic => "magic",
            CompletionKind::Class => "class",
        }
    }
}

/// One completion candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The text that replaces the word being completed.
    pub text: String,
    /// What it names.
    pub kind: CompletionKind,
    /// How a function or method is called, when the language documents it (`zeros(d0, d1, …)`).
    pub signature: Option<String>,
}

/// Completion candidates for the text around a cursor.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    /// Byte offset where the replaced text starts.
    pub start: usize,
    /// Byte offset where it ends.
    pub end: usize,
    /// Candidates, sorted by text.
    pub items: Vec<Candidate>,
}

impl Completion {
    /// The candidates' texts, in order.
    pub fn matches(&self) -> Vec<String> {
        self.items.iter().map(|c| c.text.clone()).collect()
    }
}

/// Candidates by text; the first kind given for a text wins, so callers add the most specific first.
#[derive(Default)]
pub(super) struct Names(pub(super) BTreeMap<String, Candidate>);

impl Names {
    fn add(&mut self, text: impl Into<String>, kind: CompletionKind) {
        let text = text.into();
        let signature = signature_of(&text, kind);
        self.add_with(text, kind, signature);
    }

    fn add_with(&mut self, text: String, kind: CompletionKind, signature: Option<String>) {
        self.0.entry(text.clone()).or_insert(Candidate {
            text,
            kind,
            signature,
        });
    }

    fn extend<S: Into<String>>(
        &mut self,
        texts: impl IntoIterator<Item = S>,
        kind: CompletionKind,
    ) {
        for text in texts {
            self.add(text, kind);
        }
    }
}

/// The usage half of a documented function's or method's help line: `zeros(d0, d1, …) or
/// zeros(shape_array[, opts])`, `cuda::memory_allocated([device])`, `t.sum([dim[, keepdim]])`.
pub(crate) fn signature_of(name: &str, kind: CompletionKind) -> Option<String> {
    let doc = match kind {
        CompletionKind::Method => help::doc(&format!("Tensor.{name}"))?,
        CompletionKind::Function if name.contains("::") => help::doc(name)?,
        CompletionKind::Function => help::of_kind(Kind::Function)
            .find(|e| e.name == name)?
            .doc
            .as_str(),
        _ => return None,
    };
    let usage = doc.split(" — ").next()?.trim();
    usage.contains('(').then(|| usage.to_string())
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
                let mut names = Names::default();
                names.extend(
                    COMMANDS.iter().map(|c| format!(":{}", c.name)),
                    CompletionKind::Magic,
                );
                (colon, names)
            }
            Context::HelpTopic => (start, self.help_topics()),
            Context::Member(receiver) => (start, self.member_names(receiver)),
            Context::Module(ns) => (start, self.module_members(ns)),
            Context::Global => (start, self.global_names()),
        };
        let typed = &code[start..cursor];
        let items = names
            .0
            .into_values()
            .filter(|c| c.text.starts_with(typed) && !c.text.is_empty())
            .collect();
        Completion {
            start,
            end: cursor,
            items,
        }
    }

    /// Variables, functions (documented, defined by the user, registered), modules and keywords.
    ///
    /// Rhai's standard library is left out here: its hundreds of helpers would bury the
    /// language's own names. After `.` it is offered, since there the receiver's type filters it.
    pub(super) fn global_names(&self) -> Names {
        use CompletionKind::*;
        // A variable shadows a function of its name, as lookups do; statements are not functions.
        let mut names = Names::default();
        names.extend(self.variable_names(), Variable);
        names.extend(help::keyword_names(), Keyword);
        names.extend(help::names(), Function);
        for f in self.functions.iter_functions() {
            let signature = format!("{}({})", f.name, f.params.join(", "));
            names.add_with(f.name.to_string(), Function, Some(signature));
        }
        // `cuda` is a module before it is the `cuda(t)` behind `t.cuda()`.
        names.extend(self.module_names(), Module);
        names.add("cuda", Module);
        names.extend(
            self.registered_functions(false, |f| {
                f.namespace.is_empty() && is_identifier(&f.metadata.name)
            }),
            Function,
        );
        names.extend(KEYWORDS.iter().copied(), Keyword);
        names
    }

    /// Everything `:help` knows about: global functions, tensor members, and `module::member`s.
    fn help_topics(&self) -> Names {
        let mut names = self.global_names();
        names.extend(
            help::of_kind(Kind::Method).map(|e| e.name.as_str()),
            CompletionKind::Method,
        );
        names.extend(
            help::of_kind(Kind::Property).map(|e| e.name.as_str()),
            CompletionKind::Property,
        );
        names.add("Tensor", CompletionKind::Class);
        for ns in self.module_names() {
            for (member, candidate) in self.module_members(&ns).0 {
                names.add(format!("{ns}::{member}"), candidate.kind);
            }
        }
        names
    }

    /// Methods and properties callable on `receiver` (on anything, when its type is unknown).
    fn member_names(&self, receiver: Option<&str>) -> Names {
        let receiver = receiver.and_then(|name| self.scope.get(name));
        let receiver_type = receiver.map(rhai::Dynamic::type_id);
        let is_tensor = receiver
            .is_none_or(|value| self.engine.map_type_name(value.type_name()) == TENSOR_TYPE);
        let mut names = Names::default();
        if is_tensor {
            names.extend(
                help::of_kind(Kind::Property).map(|e| e.name.as_str()),
                CompletionKind::Property,
            );
            names.extend(
                help::of_kind(Kind::Method).map(|e| e.name.as_str()),
                CompletionKind::Method,
            );
        }
        // A variable known to be a tensor offers what `dir(tensor)` would: its documented
        // members, not every function Rhai could call with it first (`print`, `exit`, hooks).
        if is_tensor && receiver.is_some() {
            return names;
        }
        let known_tensor = false;
        let dynamic = TypeId::of::<rhai::Dynamic>();
        let native = self.registered_functions(true, |f| {
            let first = f.metadata.param_types.first();
            let takes_any = first == Some(&dynamic) && !known_tensor;
            f.namespace.is_empty()
                && !f.metadata.name.starts_with("__")
                && first.is_some()
                && receiver_type.is_none_or(|t| first == Some(&t) || takes_any)
        });
        if is_tensor {
            let on_tensor = |name: &str| {
                !known_tensor || native.contains(name) || native.contains(&format!("get${name}"))
            };
            names.extend(
                help::of_kind(Kind::Property)
                    .map(|e| e.name.as_str())
                    .filter(|n| on_tensor(n)),
                CompletionKind::Property,
            );
            names.extend(
                help::of_kind(Kind::Method)
                    .map(|e| e.name.as_str())
                    .filter(|n| on_tensor(n)),
                CompletionKind::Method,
            );
        }
        for name in native {
            // `get$shape` is read as `t.shape`: a property; anything else is called.
            let kind = match name.starts_with("get$") || name.starts_with("set$") {
                true => CompletionKind::Property,
                false => CompletionKind::Method,
            };
            if let Some(member) = member_name(&name) {
                names.add(member, kind);
            }
        }
        if !known_tensor {
            names.extend(
                self.functions
                    .iter_functions()
                    .filter(|f| !f.params.is_empty())
                    .map(|f| f.name.to_string()),
                CompletionKind::Method,
            );
        }
        names
    }

    /// Members of the module registered as `ns` (`cuda`).
    pub(super) fn module_members(&self, ns: &str) -> Names {
        let mut names = Names::default();
        let registered = self.registered_functions(true, |f| {
            f.namespace == ns && is_identifier(&f.metadata.name)
        });
        if ns == "cuda" {
            for name in help::cuda_names() {
                let signature = signature_of(&format!("cuda::{name}"), CompletionKind::Function);
                names.add_with(name.to_string(), CompletionKind::Function, signature);
            }
        }
        names.extend(registered, CompletionKind::Function);
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
        let command = command_with_argument(before);
        return match command.map(|c| c.completes) {
            Some(Completes::HelpTopics) => Context::HelpTopic,
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
