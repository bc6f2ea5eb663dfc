//! What the kernel knows about names: completion candidates, and the help text behind inspect and `name?`.
use super::callee;
use crate::script::help;
use crate::session::{Completion, DisplayData, Session};
use crate::tensor::Tensor;

/// Rhai keywords offered as completions alongside names.
const KEYWORDS: &[&str] = &[
    "let", "const", "fn", "if", "else", "while", "loop", "for", "in", "do", "until", "break",
    "continue", "return", "throw", "try", "catch", "switch", "true", "false", "print", "debug",
];

/// One function the engine knows: `namespace::name`, its signature and doc comment.
struct FnDoc {
    name: String,
    signature: String,
    doc: String,
}

fn functions(session: &Session) -> Vec<FnDoc> {
    session.engine().collect_fn_metadata(
        None,
        |info| {
            let m = info.metadata;
            let prefix = if info.namespace.is_empty() {
                String::new()
            } else {
                format!("{}::", info.namespace)
            };
            let doc = m
                .comments
                .iter()
                .flat_map(|c| c.lines())
                .map(|l| {
                    let l = l.trim_start();
                    let l = l.strip_prefix("///").or_else(|| l.strip_prefix("//!"));
                    let l = l.unwrap_or("");
                    l.strip_prefix(' ').unwrap_or(l).to_string()
                })
                .collect::<Vec<_>>()
                .join("\n");
            Some(FnDoc {
                name: format!("{prefix}{}", m.name),
                signature: format!("{prefix}{}", m.gen_signature(|s| s.into())),
                doc,
            })
        },
        true,
    )
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte range of the (possibly `module::`-qualified) name that ends at `cursor`.
fn word_before(code: &str, cursor: usize) -> (usize, usize) {
    let head = &code[..cursor];
    let mut start = cursor;
    for (i, c) in head.char_indices().rev() {
        if is_word(c) || c == ':' {
            start = i;
        } else {
            break;
        }
    }
    (start, cursor)
}

/// Completion candidates at byte `cursor`: the session's (the REPL's), with `%magics` completed
/// as the `:commands` they stand for.
pub fn complete(session: &Session, code: &str, cursor: usize) -> Completion {
    let cursor = floor_boundary(code, cursor);
    let magic = code.find('%').filter(|&at| {
        code[..at].trim().is_empty() && !code[at..cursor].contains(char::is_whitespace)
    });
    let Some(at) = magic else {
        return session.complete(code, cursor);
    };
    let as_command = format!("{}:{}", &code[..at], &code[at + 1..]);
    let mut found = session.complete(&as_command, cursor);
    for item in &mut found.items {
        if let Some(name) = item.text.strip_prefix(':') {
            item.text = format!("%{name}");
        }
    }
    found
}

fn floor_boundary(code: &str, mut at: usize) -> usize {
    at = at.min(code.len());
    while !code.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Byte range of the whole name under (or just before) `cursor`.
fn word_at(code: &str, cursor: usize) -> Option<&str> {
    let cursor = floor_boundary(code, cursor);
    let (start, _) = word_before(code, cursor);
    let end = code[cursor..]
        .char_indices()
        .find(|&(_, c)| !(is_word(c) || c == ':'))
        .map_or(code.len(), |(i, _)| cursor + i);
    let word = code[start..end].trim_matches(':');
    (!word.is_empty()).then_some(word)
}

/// The help text for inspect_request at byte `cursor`: of the name under the cursor when it is
/// known (a variable inside `print(x)` is described), else of the innermost call still open
/// before the cursor, so `randn(` and `randn(3, ` show randn's signature and help as ipykernel does.
pub fn inspect(session: &Session, code: &str, cursor: usize) -> Option<String> {
    // `torch.cuda.memory_allocated` is inspected as `cuda::memory_allocated`: the spelled text
    // keeps every offset (unless a rewrite changed a character's byte length).
    let spelled = session.spelled(code);
    let code = if spelled.len() == code.len() {
        spelled.as_str()
    } else {
        code
    };
    if let Some(text) = word_at(code, cursor).and_then(|word| help(session, word)) {
        return Some(text);
    }
    let call = callee::open_call(code, cursor)?;
    match call.receiver {
        Some(receiver) => method_help(session, receiver, call.name),
        None => help(session, call.name),
    }
}

/// Help on `receiver.name(`: the tensor method's when the receiver is a tensor or unknown, else
/// the engine's functions of that name (whose first parameter is the receiver).
fn method_help(session: &Session, receiver: &str, name: &str) -> Option<String> {
    let value = session
        .scope()
        .get(receiver)
        .filter(|_| !receiver.is_empty());
    let tensor = value.is_none_or(|v| v.is::<Tensor>());
    let documented = tensor
        .then(|| help::doc(&format!("Tensor.{name}")))
        .flatten();
    match documented {
        Some(doc) => Some(doc.to_string()),
        None => help(session, name),
    }
}

/// Documentation of `name`: a variable's type and value, the language's doc of a name, or the
/// signatures and doc comments of an engine function.
pub fn help(session: &Session, name: &str) -> Option<String> {
    let is_variable = session.variable_names().iter().any(|v| v == name);
    if let Some(value) = session.scope().get(name).filter(|_| is_variable) {
        let shown = DisplayData::of_value(value).map_or("()".to_string(), |d| d.plain);
        if let Some(t) = value.read_lock::<Tensor>() {
            return Some(format!(
                "{name}: Tensor of shape {:?}, dtype {}, on {}, {} bytes ({} in its storage){}\n{shown}",
                t.shape(),
                t.dtype(),
                t.device(),
                t.nbytes(),
                t.storage_nbytes(),
                if t.requires_grad() { ", requires grad" } else { "" },
            ));
        }
        return Some(format!(
            "{name}: variable of type {}\n{shown}",
            session.engine().map_type_name(value.type_name())
        ));
    }
    if let Some(doc) = help::doc(name) {
        return Some(doc.to_string());
    }
    let docs: Vec<FnDoc> = functions(session)
        .into_iter()
        .filter(|f| f.name == name)
        .collect();
    if docs.is_empty() {
        // The user's own functions, with the first line of their `///` doc comment.
        let defined = session.signatures(name);
        if !defined.is_empty() {
            return Some(defined.join("\n"));
        }
        return KEYWORDS
            .contains(&name)
            .then(|| format!("{name}: a Rhai keyword (see https://rhai.rs/book/)"));
    }
    let mut text = String::new();
    for f in &docs {
        text.push_str(&f.signature);
        text.push('\n');
    }
    let mut seen = Vec::new();
    for f in &docs {
        if !f.doc.is_empty() && !seen.contains(&f.doc) {
            text.push('\n');
            text.push_str(&f.doc);
            text.push('\n');
            seen.push(f.doc.clone());
        }
    }
    Some(text.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_spellings_are_inspected_as_torchlets() {
        let (s, _) = Session::captured("<test>");
        let doc = inspect(&s, "torch.cuda.memory_allocated()", 15).unwrap();
        assert!(doc.starts_with("cuda::memory_allocated("), "{doc}");
        let doc = inspect(&s, "x = torch.randn(3)", 12).unwrap();
        assert!(doc.starts_with("randn("), "{doc}");
    }

    #[test]
    fn words_include_module_paths() {
        assert_eq!(word_before("x = cuda::mem", 13), (4, 13));
        assert_eq!(word_at("print(abc_d)", 8), Some("abc_d"));
        assert_eq!(word_at("a + ", 4), None);
    }
}
