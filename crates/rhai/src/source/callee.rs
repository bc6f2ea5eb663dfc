//! The innermost call still open before a cursor (`randn(3, |`), for inspection inside its parentheses.
use super::tokens::{code_tokens, is_word, Kind};

/// A call whose `(` is open at the cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callee<'a> {
    /// The function's name as written: `randn`, `cuda::memory_allocated`, `sum` in `x.sum(`.
    pub name: &'a str,
    /// For a method call, the receiver when it is a plain name (`Some("x")` in `x.sum(`);
    /// `Some("")` when it is an expression (`f(y).sum(`); `None` for a function call.
    pub receiver: Option<&'a str>,
}

/// Words that take parentheses without being calls (`if (a) {`).
const NOT_CALLS: &[&str] = &[
    "if", "while", "for", "in", "switch", "return", "throw", "catch", "loop", "do", "until", "fn",
    "let", "const",
];

/// The innermost call whose `(` is still open at byte `cursor` of `code`, as IPython's
/// `token_at_cursor` finds the callable: strings, comments and closed brackets are skipped, a
/// grouping `(` or an array `[` inside the call is looked through, a block `{` is not.
pub fn open_call(code: &str, cursor: usize) -> Option<Callee<'_>> {
    let mut cursor = cursor.min(code.len());
    while !code.is_char_boundary(cursor) {
        cursor -= 1;
    }
    let head = &code[..cursor];
    for (open, at) in open_brackets(head).into_iter().rev() {
        match open {
            '(' => {
                if let Some(callee) = callee_before(&head[..at]) {
                    return Some(callee);
                }
            }
            '{' => return None,
            _ => {}
        }
    }
    None
}

/// Brackets open at the end of `code`, innermost last, with their byte offsets; a map literal's
/// `#{` is `#` (an expression, looked through like `[`), a block's `{` is `{`. Strings and
/// comments are whole tokens of the lexer, so brackets inside them do not count.
fn open_brackets(code: &str) -> Vec<(char, usize)> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    for token in code_tokens(code).iter().filter(|t| t.kind == Kind::Symbol) {
        let open = match token.text(code) {
            "(" => '(',
            "[" | "?[" => '[',
            "#{" => '#',
            "{" => '{',
            closer @ (")" | "]" | "}") => {
                // A closer closes the nearest bracket it matches, and whatever is left open inside.
                let matches = |open: char| match closer {
                    ")" => open == '(',
                    "]" => open == '[',
                    _ => open == '{' || open == '#',
                };
                if let Some(k) = stack.iter().rposition(|&(open, _)| matches(open)) {
                    stack.truncate(k);
                }
                continue;
            }
            _ => continue,
        };
        stack.push((open, token.start));
    }
    stack
}

/// The function named just before a `(` (spaces allowed between), if the `(` is a call's.
fn callee_before(code: &str) -> Option<Callee<'_>> {
    let end = code.trim_end().len();
    let head = &code[..end];
    let mut start = end;
    for (i, c) in head.char_indices().rev() {
        if is_word(c) || c == ':' {
            start = i;
        } else {
            break;
        }
    }
    let name = head[start..end].trim_start_matches(':');
    let starts_like_a_name = name.starts_with(|c: char| c.is_alphabetic() || c == '_');
    if !starts_like_a_name || NOT_CALLS.contains(&name) {
        return None;
    }
    let before = &head[..start];
    // `fn name(`: a definition, whose parameters are being written, not a call.
    let previous_word = before.trim_end().rsplit(|c: char| !is_word(c)).next();
    if before.ends_with(char::is_whitespace) && previous_word == Some("fn") {
        return None;
    }
    let receiver = before.strip_suffix('.').map(|object| {
        let word: usize = object
            .chars()
            .rev()
            .take_while(|&c| is_word(c))
            .map(char::len_utf8)
            .sum();
        let plain = &object[object.len() - word..];
        let chained = object[..object.len() - word].ends_with(['.', ')', ']']);
        match plain.is_empty() || chained || plain.starts_with(|c: char| c.is_ascii_digit()) {
            true => "",
            false => plain,
        }
    });
    Some(Callee { name, receiver })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_end(code: &str) -> Option<Callee<'_>> {
        open_call(code, code.len())
    }

    fn function(name: &str) -> Option<Callee<'_>> {
        Some(Callee {
            name,
            receiver: None,
        })
    }

    #[test]
    fn the_innermost_open_call_is_found() {
        assert_eq!(at_end("randn("), function("randn"));
        assert_eq!(at_end("let x = randn(3, "), function("randn"));
        assert_eq!(at_end("zeros(ones(2), "), function("zeros"));
        assert_eq!(at_end("zeros(ones(2"), function("ones"));
        assert_eq!(
            at_end("cuda::memory_allocated("),
            function("cuda::memory_allocated")
        );
        assert_eq!(at_end("tensor([1, 2, "), function("tensor"));
        assert_eq!(at_end("zeros(2, #{dtype: "), function("zeros"));
        assert_eq!(at_end("f((1 + "), function("f"));
    }

    #[test]
    fn methods_carry_their_receiver() {
        let call = at_end("x.sum(0, ").unwrap();
        assert_eq!((call.name, call.receiver), ("sum", Some("x")));
        let call = at_end("f(y).matmul(").unwrap();
        assert_eq!((call.name, call.receiver), ("matmul", Some("")));
    }

    #[test]
    fn closed_calls_strings_comments_and_blocks_are_not_open_calls() {
        assert_eq!(at_end("randn(3)"), None);
        assert_eq!(at_end("randn(3) + "), None);
        assert_eq!(at_end("print(\"a(\" + "), function("print"));
        assert_eq!(at_end("print(\"a)\", "), function("print"));
        assert_eq!(at_end("f(1, // g(\n"), function("f"));
        assert_eq!(at_end("if (a"), None);
        assert_eq!(at_end("(1 + "), None);
        assert_eq!(at_end("f(|| { g"), None);
        assert_eq!(at_end("fn twice(a"), None);
    }

    #[test]
    fn the_cursor_may_sit_anywhere() {
        let code = "zeros(2, 3) + ones(4)";
        assert_eq!(open_call(code, 6), function("zeros"));
        assert_eq!(open_call(code, 19), function("ones"));
        assert_eq!(open_call(code, 12), None);
        assert_eq!(open_call("é(", 1), None);
        assert_eq!(open_call("ä(1", 99), function("ä"));
    }

    proptest::proptest! {
        // No failure file: a case found failing becomes an assertion above.
        #![proptest_config(proptest::test_runner::Config {
            failure_persistence: None,
            ..Default::default()
        })]
        /// Inspection runs at whatever offset a front end sends, inside a character too.
        #[test]
        fn no_text_or_cursor_panics(
            code in "(x|\\.|\\(|\\)|\\[|\\{|\"|'|`|//|/\\*|\\*/|\n|₮|🕴|é|f| ){0,16}",
        ) {
            for cursor in 0..=code.len() + 1 {
                let _ = open_call(&code, cursor);
            }
        }
    }
}
