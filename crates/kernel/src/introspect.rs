//! What the kernel knows about names: completion candidates, and the help text behind inspect and `name?`.
use torchlet_session::{callee, is_word, Completion, Session};

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
    if let Some(text) = word_at(code, cursor).and_then(|word| session.describe(word)) {
        return Some(text);
    }
    let call = callee::open_call(code, cursor)?;
    match call.receiver {
        Some(receiver) => session.describe_member(receiver, call.name),
        None => session.describe(call.name),
    }
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
