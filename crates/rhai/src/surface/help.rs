//! The language's names with a one-line doc each: for `help(name)`, `name?`, completion and inspect.
//!
//! Read from the engine's function metadata: each help line is the doc comment its function was
//! registered with (see [`super::documented`]), so it is written once, beside the registration.
//! Statements and custom syntax are not functions and have no metadata: their lines are the small
//! tables [`KEYWORDS`] here and `holders_api::SYNTAX_HELP`.
use crate::State;
use std::rc::Rc;
use std::sync::OnceLock;

use rhai::Engine;

/// What a help entry documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A function callable at top level: `zeros(…)`.
    Function,
    /// A statement that is not a function call: `del`, `no_grad { … }`.
    Keyword,
    /// A tensor method: `t.sum(…)`.
    Method,
    /// A tensor property: `t.shape`.
    Property,
    /// A member of the `cuda` module: `cuda::memory_allocated(…)`.
    CudaMember,
}

/// One documented name: what it is, what to type, and one line saying what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Function, statement, tensor method or property, or `cuda` member.
    pub kind: Kind,
    /// The name as typed (`zeros`, `shape`, `memory_allocated`).
    pub name: String,
    /// Usage and purpose on one line.
    pub doc: String,
}

/// Statements that are not function calls.
pub static KEYWORDS: &[(&str, &str)] = &[
    ("del", "del x, y — forget the variables; their tensors are freed at once if nothing else holds them"),
    ("no_grad", "no_grad { … } — run the block without recording the autograd graph"),
    ("enable_grad", "enable_grad { … } — record the autograd graph inside the block, even under no_grad"),
    ("inference_mode", "inference_mode { … } — like no_grad; tensors made inside are inference tensors"),
    ("autocast", "autocast(#{dtype: \"bfloat16\"}) { … } — mixed precision for CUDA ops in the block (dtype float16 by default; also enabled, device_type, cache_enabled)"),
    ("import", "import torch (or import torch.nn.functional as F) — accepted and ignored: torch.NAME, torch.cuda.NAME and F.NAME are NAME and cuda::NAME"),
];

/// The text of Rhai doc comments (`/// line`), markers stripped, lines joined.
pub fn comment_text<S: AsRef<str>>(comments: &[S]) -> String {
    comments
        .iter()
        .flat_map(|c| c.as_ref().lines())
        .map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("///").or_else(|| l.strip_prefix("//!"));
            let l = l.unwrap_or("");
            l.strip_prefix(' ').unwrap_or(l).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every help entry of the language, sorted by kind and name; read once, from a fresh engine.
pub fn entries() -> &'static [Entry] {
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let frontend = Rc::new(crate::CapturedOutput::default());
        of_engine(&crate::new_engine(
            frontend,
            Default::default(),
            &State::default(),
        ))
    })
}

/// The help entries of `engine`'s documented functions, its statements and its custom syntax.
pub fn of_engine(engine: &Engine) -> Vec<Entry> {
    let documented = engine.collect_fn_metadata(
        None,
        |info| {
            let comments = info.metadata.comments.iter().map(|c| c.to_string());
            let namespace = info.namespace.as_str();
            let name = info.metadata.name.as_str();
            let found: Vec<Entry> = comments
                .map(|comment| entry_of(namespace, name, &comment_text(&[comment])))
                .collect();
            Some(found)
        },
        false,
    );
    let statements = KEYWORDS
        .iter()
        .map(|(name, doc)| (Kind::Keyword, name, doc));
    let syntax = super::holders_api::SYNTAX_HELP
        .iter()
        .map(|(name, doc)| (Kind::Function, name, doc));
    let mut entries: Vec<Entry> = documented.into_iter().flatten().collect();
    entries.extend(statements.chain(syntax).map(|(kind, name, doc)| Entry {
        kind,
        name: name.to_string(),
        doc: doc.to_string(),
    }));
    entries.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    entries.dedup_by(|a, b| a.kind == b.kind && a.name == b.name);
    entries
}

/// The entry a help line registered on `namespace::name` makes; its usage says its kind.
fn entry_of(namespace: &str, name: &str, doc: &str) -> Entry {
    let (kind, name) = if namespace == "cuda" {
        (Kind::CudaMember, name)
    } else if let Some(property) = name.strip_prefix("get$") {
        (Kind::Property, property)
    } else if is_method_usage(doc, name) {
        (Kind::Method, name)
    } else {
        (Kind::Function, name)
    };
    Entry {
        kind,
        name: name.to_string(),
        doc: doc.to_string(),
    }
}

/// Whether `doc` reads `t.NAME…`: a one-letter receiver, a dot, the name.
fn is_method_usage(doc: &str, name: &str) -> bool {
    doc.split_once('.')
        .is_some_and(|(receiver, rest)| receiver.len() == 1 && rest.starts_with(name))
}

/// The entries of one kind, by name.
pub fn of_kind(kind: Kind) -> impl Iterator<Item = &'static Entry> {
    entries().iter().filter(move |entry| entry.kind == kind)
}

fn find(kind: Kind, name: &str) -> Option<&'static Entry> {
    of_kind(kind).find(|entry| entry.name == name)
}

fn names_of(kind: Kind) -> Vec<&'static str> {
    of_kind(kind).map(|entry| entry.name.as_str()).collect()
}

/// Names of the top-level functions.
pub fn names() -> Vec<&'static str> {
    names_of(Kind::Function)
}

/// Names of tensor methods and properties, for completion after `t.`.
pub fn tensor_member_names() -> Vec<&'static str> {
    let mut names = names_of(Kind::Method);
    names.extend(names_of(Kind::Property));
    names
}

/// Names of the `cuda` module's members, for completion after `cuda::`.
pub fn cuda_names() -> Vec<&'static str> {
    names_of(Kind::CudaMember)
}

/// Names of the statements `del`, `no_grad` …
pub fn keyword_names() -> Vec<&'static str> {
    names_of(Kind::Keyword)
}

/// Whether `name` is part of the language (function, keyword, tensor member or cuda member).
pub fn is_known(name: &str) -> bool {
    doc(name).is_some()
}

/// The one-line doc of `name`: `zeros`, `cuda::memory_allocated`, `Tensor.shape`, or a bare member name.
pub fn doc(name: &str) -> Option<&'static str> {
    let name = name.trim();
    if let Some(member) = name.strip_prefix("cuda::") {
        return find(Kind::CudaMember, member).map(|entry| entry.doc.as_str());
    }
    if let Some(member) = name
        .strip_prefix("Tensor.")
        .or_else(|| name.strip_prefix("torch.Tensor."))
    {
        return find(Kind::Method, member)
            .or_else(|| find(Kind::Property, member))
            .map(|entry| entry.doc.as_str());
    }
    // `optim::SGD`, `nn::linear_params`: module members other than cuda's are functions.
    if let Some((_, member)) = name.rsplit_once("::") {
        return find(Kind::Function, member).map(|entry| entry.doc.as_str());
    }
    let kinds = [
        Kind::Function,
        Kind::Keyword,
        Kind::Method,
        Kind::Property,
        Kind::CudaMember,
    ];
    kinds
        .into_iter()
        .find_map(|kind| find(kind, name))
        .map(|entry| entry.doc.as_str())
}

/// What `help()` with no argument prints: every name, grouped.
pub fn overview() -> String {
    let line = |title: &str, names: Vec<&str>| format!("{title}:\n  {}\n", names.join(", "));
    let mut text = String::from("torchlet — help(name) or name? explains one name.\n");
    text += &line("Functions", names());
    text += &line("Statements", keyword_names());
    text += &line("Tensor methods", names_of(Kind::Method));
    text += &line("Tensor properties", names_of(Kind::Property));
    text += &line("cuda:: members", cuda_names());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_help_line_is_one_line_that_starts_with_its_usage() {
        for entry in entries() {
            assert!(!entry.doc.contains('\n'), "{}: {}", entry.name, entry.doc);
            let usage = entry.doc.split(" — ").next().unwrap();
            assert!(usage.contains(&entry.name), "{}: {}", entry.name, entry.doc);
        }
    }

    /// The names the engine really has, by kind: `name(`, `get$name(`, `cuda::name(`.
    fn registered() -> Vec<String> {
        let frontend = Rc::new(crate::CapturedOutput::default());
        let engine = crate::new_engine(frontend, Default::default(), &crate::State::default());
        engine.gen_fn_signatures(false)
    }

    #[test]
    fn every_registered_name_is_documented() {
        let internal = [
            "to_string",
            "to_debug",
            "index$get$",
            "get$kind",
            "get$message",
            // explain_free's report: its help entry says what `.ways` holds.
            "get$ways",
        ];
        for signature in registered() {
            let name = signature.split('(').next().unwrap();
            let bare = name.trim_start_matches("get$").trim_start_matches("set$");
            let symbol = !bare.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            // `__discard`, `__assign`, `__line`: called by the lifetime rewrite, not by users.
            let rewrite_helper = name.starts_with("__");
            if symbol || rewrite_helper || internal.contains(&name) {
                continue;
            }
            assert!(doc(bare).is_some(), "{signature} has no help entry");
        }
    }

    #[test]
    fn kinds_follow_the_usage() {
        assert!(find(Kind::Function, "matmul").is_some());
        assert!(find(Kind::Method, "matmul").is_some());
        assert!(find(Kind::Function, "float")
            .unwrap()
            .doc
            .starts_with("float(x)"));
        assert!(find(Kind::Method, "float")
            .unwrap()
            .doc
            .starts_with("t.float()"));
        assert!(find(Kind::Property, "shape").is_some());
        assert!(find(Kind::Keyword, "del").is_some());
        assert!(find(Kind::Function, "explain_free").is_some());
        assert!(find(Kind::CudaMember, "all_reduce").is_some());
        // The module members other than cuda's are functions: `dist::all_reduce`'s, not cuda's.
        let dist = find(Kind::Function, "all_reduce").expect("dist::all_reduce");
        assert!(dist.doc.starts_with("dist::all_reduce"), "{}", dist.doc);
    }

    #[test]
    fn qualified_names_find_their_table() {
        assert!(doc("cuda::memory_allocated").unwrap().starts_with("cuda::"));
        assert!(doc("memory_allocated")
            .unwrap()
            .starts_with("memory_allocated("));
        assert!(doc("Tensor.shape").unwrap().starts_with("t.shape"));
        assert_eq!(doc("cuda::zeros"), None);
        assert_eq!(doc("nonsense"), None);
    }
}
