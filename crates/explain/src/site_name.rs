//! Reading statement names back: `FILE:LINE:COL: text` (see [`super::provenance`]) as a frame and a variable.

/// One statement name, split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site<'a> {
    /// The source (`script.rhai`, `[3]` for a notebook cell …).
    pub file: &'a str,
    /// The 1-based line.
    pub line: u64,
    /// The 1-based column where the statement starts.
    pub col: u64,
    /// The whole source line, trimmed.
    pub text: &'a str,
}

/// Split a statement name; `None` for a tag that is not one (a caller's own tag).
pub fn parse(tag: &str) -> Option<Site<'_>> {
    // The file may itself hold ": ", so take the first split whose left side ends in `:LINE:COL`.
    tag.match_indices(": ").find_map(|(at, _)| {
        let mut parts = tag[..at].rsplitn(3, ':');
        let col = parts.next()?.parse().ok()?;
        let line = parts.next()?.parse().ok()?;
        let file = parts.next()?;
        Some(Site {
            file,
            line,
            col,
            text: &tag[at + 2..],
        })
    })
}

/// The statements of a source line, split at top-level `;` (not inside brackets or strings),
/// each with the byte offset where it starts.
pub fn statements(text: &str) -> Vec<(usize, &str)> {
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '`' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ';') if depth <= 0 => {
                out.push(trimmed(text, start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    let rest = trimmed(text, start, text.len());
    if !rest.1.is_empty() || out.is_empty() {
        out.push(rest);
    }
    out
}

fn trimmed(text: &str, start: usize, end: usize) -> (usize, &str) {
    let part = &text[start..end];
    let lead = part.len() - part.trim_start().len();
    (start + lead, part.trim())
}

/// The name a statement assigns: `x` of `let x = …` or `x = …`, `w.grad` of `w.grad = …`, `t` of `t += …`.
pub fn assigned_name(statement: &str) -> Option<&str> {
    let s = statement.trim_start();
    let s = ["let ", "const "]
        .iter()
        .find_map(|k| s.strip_prefix(k))
        .unwrap_or(s)
        .trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(s.len());
    let (name, rest) = s.split_at(end);
    let rest = rest.trim_start();
    let word = name.starts_with(|c: char| c.is_alphabetic() || c == '_');
    if let Some(list) = grown_container(name, rest).filter(|_| word) {
        return Some(list);
    }
    let rest = rest.strip_prefix(['+', '-', '*', '/', '%']).unwrap_or(rest);
    let assigns = rest.starts_with('=') && !rest.starts_with("==");
    (assigns && word && !name.ends_with('.')).then_some(name)
}

/// The list or map a statement puts its value into (`xs.push(t)`, `xs.append(t)`, `d[k] = t`):
/// what holds the tensors it makes, so they are drawn under the container's name.
fn grown_container<'a>(name: &'a str, rest: &str) -> Option<&'a str> {
    let grows = [".push", ".append", ".insert", ".extend"]
        .iter()
        .find_map(|m| name.strip_suffix(m))
        .filter(|list| !list.is_empty() && rest.starts_with('('));
    if grows.is_some() {
        return grows;
    }
    let close = rest.strip_prefix('[').and_then(|r| r.find(']'))?;
    let after = rest[close + 2..].trim_start();
    (after.starts_with('=') && !after.starts_with("==") && !name.contains('.')).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_that_fills_a_container_names_the_container() {
        assert_eq!(assigned_name("xs.push(randn(3).cuda())"), Some("xs"));
        assert_eq!(assigned_name("acts.append(h)"), Some("acts"));
        assert_eq!(assigned_name("cache[step] = h.detach()"), Some("cache"));
        assert_eq!(assigned_name("cache[step] == h"), None);
        assert_eq!(assigned_name("print(xs)"), None);
        assert_eq!(assigned_name("let y = xs.push(1)"), Some("y"));
    }

    #[test]
    fn a_name_splits_even_when_the_file_holds_colons() {
        let s = parse("a: b.rhai:12:5: let x = randn(2, 2);").unwrap();
        assert_eq!((s.file, s.line, s.col), ("a: b.rhai", 12, 5));
        assert_eq!(s.text, "let x = randn(2, 2);");
        assert!(parse("my own tag").is_none());
    }

    #[test]
    fn statements_split_at_top_level_semicolons_only() {
        assert_eq!(
            statements("w.sub_(g * lr); b.sub_(\"a;b\"); f(|x| { x; })"),
            [
                (0, "w.sub_(g * lr)"),
                (16, "b.sub_(\"a;b\")"),
                (31, "f(|x| { x; })")
            ]
        );
    }

    #[test]
    fn the_assigned_name_is_the_target_of_an_assignment() {
        assert_eq!(assigned_name("let x = randn(2)"), Some("x"));
        assert_eq!(assigned_name("w1.grad = ()"), Some("w1.grad"));
        assert_eq!(assigned_name("total += loss"), Some("total"));
        assert_eq!(assigned_name("x == y"), None);
        assert_eq!(assigned_name("loss.backward()"), None);
    }
}
