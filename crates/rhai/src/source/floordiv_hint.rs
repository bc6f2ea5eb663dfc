//! Spotting `a // b` written for Python's floor division, which Rhai reads as `a` and a comment.
//!
//! `let q = n // 2` runs without error and binds `n`; `print(n // 2)` fails far from the cause.
//! A comment is taken for floor division only when it could not be prose: `//` follows an
//! operand on the same line, and what follows reads as an operand (a number, a bracket, or a
//! name the program knows) and then only operators and operands, never two words in a row. So
//! `let n = 5 // the count`, `x = 1 // TODO` and `} // end` stay comments without a word said.
use std::collections::HashSet;

use super::tokens::{is_word, lex, Kind};

/// One place where `//` reads as floor division.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suspect {
    /// 1-based line.
    pub line: usize,
    /// The operand before `//`, as written.
    pub lhs: String,
    /// What follows `//`, as written (trimmed, without a trailing `;`).
    pub rhs: String,
}

impl Suspect {
    /// What was meant and what to write.
    pub fn message(&self) -> String {
        let (a, b) = (&self.lhs, &self.rhs);
        format!("`//` starts a comment, so `{a} // {b}` is `{a}`; for Python's floor division write floordiv({a}, {b})")
    }

    /// The `hint:` line an error carries.
    pub fn hint(&self) -> String {
        format!("hint: line {}: {}", self.line, self.message())
    }
}

/// Keywords that end a line's code without being an operand (`else // …`).
const KEYWORDS: &[&str] = &[
    "else", "do", "loop", "return", "break", "continue", "in", "let", "const", "fn", "if", "while",
    "for", "throw", "try", "catch", "switch", "import", "export", "as", "private",
];

/// Every `//` in `code` that reads as floor division; `known` says whether a name is a variable
/// of the session (the names `code` itself binds are known too).
pub fn find(code: &str, known: &dyn Fn(&str) -> bool) -> Vec<Suspect> {
    let bound = bound_names(code);
    let is_known = |name: &str| bound.contains(name) || known(name);
    line_comments(code)
        .into_iter()
        .filter_map(|(line, before, after)| {
            let lhs = trailing_operand(before)?;
            let rhs = leading_expression(after, &is_known)?;
            Some(Suspect { line, lhs, rhs })
        })
        .collect()
}

/// Each `//` comment outside strings and block comments: its line, the code before it on that
/// line, and the comment's text.
fn line_comments(code: &str) -> Vec<(usize, &str, &str)> {
    lex(code)
        .into_iter()
        .filter(|t| t.kind == Kind::Comment && t.text(code).starts_with("//"))
        .map(|t| {
            let line_start = code[..t.start].rfind('\n').map_or(0, |n| n + 1);
            (
                t.line + 1,
                &code[line_start..t.start],
                &code[t.start + 2..t.end],
            )
        })
        .collect()
}

/// The operand that ends `before` (a name, a number, or a bracketed group with the name before
/// it), or `None` when the code does not end with one.
fn trailing_operand(before: &str) -> Option<String> {
    let text = before.trim_end();
    let chars: Vec<char> = text.chars().collect();
    let mut start = chars.len();
    let last = *chars.last()?;
    if matches!(last, ')' | ']') {
        let mut depth = 0i32;
        loop {
            start = start.checked_sub(1)?;
            match chars[start] {
                ')' | ']' => depth += 1,
                '(' | '[' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
        }
    } else if !is_word(last) {
        return None;
    }
    while start > 0 && (is_word(chars[start - 1]) || chars[start - 1] == '.') {
        start -= 1;
    }
    let operand: String = chars[start..].iter().collect();
    if KEYWORDS.contains(&operand.as_str()) {
        return None;
    }
    Some(operand)
}

/// The comment as an expression, if it reads as one: it starts with an operand and never puts
/// two words (names or numbers) side by side; `None` for prose.
fn leading_expression(comment: &str, known: &dyn Fn(&str) -> bool) -> Option<String> {
    if comment.starts_with(['/', '!']) {
        return None; // a doc comment
    }
    let text = comment.trim();
    let text = text.strip_suffix(';').unwrap_or(text).trim_end();
    if text.is_empty()
        || !text
            .chars()
            .all(|c| is_word(c) || " .,+-*/%()[]<>=!&|".contains(c))
    {
        return None;
    }
    let words = text
        .split(|c: char| !(is_word(c) || c == '.'))
        .filter(|w| !w.is_empty());
    let first = text.trim_start_matches(['(', '-', ' ']);
    let first_word: String = first.chars().take_while(|&c| is_word(c)).collect();
    let opens_with_operand = text.starts_with('(')
        || first_word.starts_with(|c: char| c.is_ascii_digit())
        || (!first_word.is_empty() && known(&first_word))
        || (!first_word.is_empty() && first[first_word.len()..].starts_with('('));
    if !opens_with_operand {
        return None;
    }
    // Two words with only blanks between them is prose: "2 items", "b is …".
    let mut previous_end: Option<usize> = None;
    let mut offset = 0;
    for word in words {
        let at = offset + text[offset..].find(word)?;
        if let Some(end) = previous_end {
            if text[end..at].trim().is_empty() {
                return None;
            }
        }
        previous_end = Some(at + word.len());
        offset = at + word.len();
    }
    Some(first_operand(text).to_string())
}

/// The operand `text` starts with: up to a `,` or `;` outside brackets, or a bracket closed
/// that it did not open (the rest of the line the comment swallowed, as in `f(a // b, c)`).
fn first_operand(text: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth == 0 => return text[..i].trim_end(),
            ')' | ']' => depth -= 1,
            ',' | ';' if depth == 0 => return text[..i].trim_end(),
            _ => {}
        }
    }
    text
}

/// Names `code` binds: after `let`, `const` and `for`, and a function's parameters.
fn bound_names(code: &str) -> HashSet<String> {
    let mut names = HashSet::new();
    let words: Vec<&str> = code
        .split(|c: char| !is_word(c))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        if matches!(pair[0], "let" | "const" | "for") {
            names.insert(pair[1].to_string());
        }
    }
    for part in code.split("fn ").skip(1) {
        if let Some(params) = part
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
        {
            names.extend(
                params
                    .0
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string),
            );
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suspects(code: &str) -> Vec<(usize, String, String)> {
        find(code, &|name| name == "total")
            .into_iter()
            .map(|s| (s.line, s.lhs, s.rhs))
            .collect()
    }

    #[test]
    fn floor_division_is_spotted() {
        assert_eq!(
            suspects("let n = 7;\nlet q = n // 2;"),
            [(2, "n".into(), "2".into())]
        );
        assert_eq!(
            suspects("print(total // 1024)"),
            [(1, "total".into(), "1024".into())]
        );
        assert_eq!(
            suspects("let a = 1; let b = 2;\nlet c = x.numel() // b"),
            [(2, "x.numel()".into(), "b".into())]
        );
        assert_eq!(
            suspects("let r = total // (1024 * 1024)"),
            [(1, "total".into(), "(1024 * 1024)".into())]
        );
    }

    #[test]
    fn real_comments_are_left_alone() {
        for code in [
            "// a whole-line comment 2",
            "let n = 5 // the count",
            "let n = 5 // 5 elements",
            "x = 1 // TODO",
            "} // end of loop",
            "let x = 1; // one",
            "let s = \"http://example.com\" // url",
            "let s = \"a // b\";",
            "let n = 4 /// doc",
            "foo() //! inner",
            "let t = 3 // t is three",
            "/* let q = n // 2 */",
            "else // 2",
            "let u = `a // ${b}`;",
        ] {
            assert_eq!(suspects(code), [], "{code}");
        }
    }
}
