//! Hints for Python habits torchlet cannot accept: the torchlet spelling of what was typed.
//!
//! An error comes with a `hint:` line when its input shows a Python construct (`def`, `with`,
//! `elif`, `lambda`, a colon block, an f-string, a keyword argument, a slice with `:`), or names
//! something that does not exist but is close to something that does ("did you mean"). Hints are
//! built from the user's own text, so they can be copied.
use super::tokens::{self, ends_operand, Kind, Token};

/// Where an error happened and what it says, as the session reports it.
#[derive(Clone, Copy, Debug)]
pub struct ErrorSite<'a> {
    /// Python-style kind: `SyntaxError`, `NameError`, `AttributeError` …
    pub kind: &'a str,
    /// The message, without a hint.
    pub message: &'a str,
    /// 1-based line, if known.
    pub line: Option<usize>,
    /// 1-based column, if known.
    pub column: Option<usize>,
}

/// The names an unknown name may be a misspelling of.
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// Variables in scope and callable functions (`cuda::` members with their prefix).
    pub names: Vec<String>,
    /// Methods and properties of tensors.
    pub members: Vec<String>,
}

/// The hint for an error in `code` (as typed; `translated` is what was compiled), if any.
pub fn hint(code: &str, translated: &str, site: &ErrorSite, known: &Known) -> Option<String> {
    // `import numpy as np` parses as Rhai's own import and fails when it runs.
    if let Some(h) = site.line.and_then(|l| import_line(code, l - 1)) {
        return Some(h);
    }
    match site.kind {
        "SyntaxError" => syntax_hint(code, translated, site),
        "NameError" => name_hint(code, site, known),
        "AttributeError" => attribute_hint(site, known),
        _ => None,
    }
}

/// Whether the input ends with a Python block header (`for i in range(3):`, `def f(x):`, `else:`).
pub fn opens_python_block(code: &str) -> bool {
    let toks = tokens::code_tokens(code);
    toks.last()
        .is_some_and(|last| block_header(code, &toks, last.line).is_some())
}

/// The first Python block header of `code` (`with torch.no_grad():`): its 0-based line and text.
pub fn python_block(code: &str) -> Option<(usize, String)> {
    let toks = tokens::code_tokens(code);
    let mut lines: Vec<usize> = toks.iter().map(|t| t.line).collect();
    lines.dedup();
    lines.into_iter().find_map(|line| {
        let header = block_header(code, &toks, line)?;
        Some((line, header))
    })
}

/// Whether a Python block that `code` opens may still get body lines: nothing after its header
/// but indented lines, and no blank line ending them (as Python's REPL reads a block).
pub fn python_block_continues(code: &str) -> bool {
    let Some((header, _)) = python_block(code) else {
        return false;
    };
    // A front end's line ends with a newline of its own; a blank line after it ends the block.
    let text = code.strip_suffix('\n').unwrap_or(code);
    let after: Vec<&str> = text.split('\n').skip(header + 1).collect();
    let ended = after.last().is_some_and(|l| l.trim().is_empty())
        || after
            .iter()
            .any(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']));
    !ended
}

/// The text of `line` when it is a Python block header: a statement keyword first, `:` last,
/// and no braces (so a Rhai map such as `#{a:` is not one).
fn block_header(code: &str, toks: &[Token], line: usize) -> Option<String> {
    let on = on_line(toks, line);
    let (first, last) = (on.first()?, on.last()?);
    let first_index = toks.iter().position(|t| t == first)?;
    let header = matches!(
        first.text(code),
        "for"
            | "while"
            | "if"
            | "elif"
            | "else"
            | "def"
            | "with"
            | "try"
            | "except"
            | "finally"
            | "class"
    );
    let braces = on.iter().any(|t| matches!(t.text(code), "{" | "#{" | "}"));
    (last.is(code, ":")
        && header
        && first.kind == Kind::Ident
        && starts_statement(code, toks, first_index)
        && !braces)
        .then(|| span(code, first, last))
}

fn syntax_hint(code: &str, translated: &str, site: &ErrorSite) -> Option<String> {
    let toks = tokens::code_tokens(code);
    let line = site.line.map(|l| l - 1);
    // A construct on the error's own line explains it best; one elsewhere may still be the cause
    // (a `def` line's error shows up on its body's line).
    // A statement that starts a line where Rhai wanted a `;` is the missing `;` itself, however
    // Pythonic the rest of the input (an `import torch` line above it is no cause).
    line.and_then(|l| construct(code, translated, &toks, Some(l)))
        .or_else(|| missing_semicolon(translated, site))
        .or_else(|| construct(code, translated, &toks, None))
        .or_else(|| tuple(code, site))
}

/// `a, b` where a statement should end: Python's tuple.
fn tuple(code: &str, site: &ErrorSite) -> Option<String> {
    let line = code.lines().nth(site.line? - 1)?;
    let at = line.chars().nth(site.column? - 1)?;
    (at == ',' && site.message.starts_with("Expecting ';'"))
        .then(|| "torchlet has no tuples: an array holds several values, [a, b]".into())
}

/// A look at token `i` of the typed code for one Python construct; its hint if found.
type Check = fn(&str, &[Token], usize) -> Option<String>;

/// The first Python construct among the tokens (of `only_line`, when given).
fn construct(
    code: &str,
    translated: &str,
    toks: &[Token],
    only_line: Option<usize>,
) -> Option<String> {
    let checks: [Check; 12] = [
        var_call,
        def,
        with,
        decorator,
        elif,
        lambda,
        colon_block,
        f_string,
        slice,
        not_in,
        comprehension,
        other_python,
    ];
    for i in 0..toks.len() {
        if only_line.is_some_and(|l| toks[i].line != l) {
            continue;
        }
        if let Some(h) = checks.iter().find_map(|check| check(code, toks, i)) {
            return Some(h);
        }
    }
    keyword_arguments(translated, only_line)
}

fn starts_statement(code: &str, toks: &[Token], i: usize) -> bool {
    i == 0 || toks[i - 1].is(code, ";") || toks[i - 1].line < toks[i].line
}

/// The code tokens on `line`.
fn on_line(toks: &[Token], line: usize) -> Vec<Token> {
    toks.iter().copied().filter(|t| t.line == line).collect()
}

/// Text from the start of `from` to the end of `to`, inclusive.
fn span(code: &str, from: &Token, to: &Token) -> String {
    code[from.start..to.end].to_string()
}

/// The index of the bracket that closes the one at `open`, if it is in `toks`.
fn closing(code: &str, toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.text(code) {
            "(" | "[" | "{" | "#{" | "?[" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn def(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is_ident(code, "def") || !starts_statement(code, toks, i) {
        return None;
    }
    let name = toks
        .get(i + 1)
        .filter(|t| t.kind == Kind::Ident)?
        .text(code);
    let open = i + 2;
    let params = match toks.get(open).filter(|t| t.is(code, "(")) {
        Some(o) => {
            let close = closing(code, toks, open)?;
            let inner = &code[o.end..toks[close].start];
            // Python's annotations and defaults have no place in a Rhai parameter list.
            inner
                .split(',')
                .map(|p| p.split([':', '=']).next().unwrap_or("").trim())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(", ")
        }
        None => String::new(),
    };
    Some(format!(
        "functions are written with fn and braces: fn {name}({params}) {{ … }}"
    ))
}

/// `var(t)` or `t.var()`: the language reserves `var`; PyTorch's var is `variance` here.
fn var_call(code: &str, toks: &[Token], i: usize) -> Option<String> {
    let called = toks.get(i + 1).is_some_and(|t| t.is(code, "("));
    (toks[i].is_ident(code, "var") && called).then(|| {
        "var is a reserved word here: PyTorch's var is variance(t[, dim[, unbiased]]) or t.variance(…)".into()
    })
}

const GRAD_MODES: [&str; 3] = ["no_grad", "enable_grad", "inference_mode"];

fn grad_mode_on_line(code: &str, toks: &[Token], i: usize) -> Option<&'static str> {
    let line = on_line(toks, toks[i].line);
    GRAD_MODES
        .into_iter()
        .find(|m| line.iter().any(|t| t.is_ident(code, m)))
}

fn with(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is_ident(code, "with") || !starts_statement(code, toks, i) {
        return None;
    }
    let line = on_line(toks, toks[i].line);
    if line.iter().any(|t| t.is_ident(code, "autocast")) {
        return Some("autocast is a block: autocast(#{dtype: \"bfloat16\"}) { … } (variables assigned inside stay visible after it, as with Python's with)".into());
    }
    Some(match grad_mode_on_line(code, toks, i) {
        Some(mode) => format!(
            "grad modes are blocks: {mode} {{ … }} (variables assigned inside stay visible after it, as with Python's with)"
        ),
        None => "torchlet has no with statement; its grad modes are blocks: no_grad { … }, enable_grad { … }, inference_mode { … }".into(),
    })
}

fn decorator(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is(code, "@") || !starts_statement(code, toks, i) {
        return None;
    }
    let mode = grad_mode_on_line(code, toks, i).unwrap_or("no_grad");
    Some(format!(
        "torchlet has no decorators; put the function's body in a block: fn f(x) {{ {mode} {{ … }} }}"
    ))
}

fn elif(code: &str, toks: &[Token], i: usize) -> Option<String> {
    toks[i]
        .is_ident(code, "elif")
        .then(|| "write else if, with braces: if a { … } else if b { … } else { … }".into())
}

fn lambda(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is_ident(code, "lambda") {
        return None;
    }
    let colon = (i + 1..toks.len()).find(|&k| toks[k].is(code, ":"))?;
    let params: Vec<&str> = toks[i + 1..colon]
        .iter()
        .filter(|t| t.kind == Kind::Ident)
        .map(|t| t.text(code))
        .collect();
    // The body runs to the end of its line or to a bracket it did not open.
    let mut depth = 0i32;
    let mut last = colon;
    for (k, t) in toks.iter().enumerate().skip(colon + 1) {
        if t.line != toks[colon].line {
            break;
        }
        match t.text(code) {
            "(" | "[" | "{" | "#{" => depth += 1,
            ")" | "]" | "}" if depth == 0 => break,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => break,
            _ => {}
        }
        last = k;
    }
    let body = if last > colon {
        span(code, &toks[colon + 1], &toks[last])
    } else {
        "…".into()
    };
    Some(format!(
        "a closure is written with bars: |{}| {body}",
        params.join(", ")
    ))
}

/// `for …:`, `if …:`, `while …:`, `else:`, `try:`, `except …:`, `finally:`, `class …:`.
fn colon_block(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !starts_statement(code, toks, i) || toks[i].kind != Kind::Ident {
        return None;
    }
    let line = on_line(toks, toks[i].line);
    let last = line.last()?;
    if !last.is(code, ":") || line.len() < 2 {
        return None;
    }
    let head = line[line.len() - 2];
    let header = span(code, &toks[i], &head);
    let text = match toks[i].text(code) {
        "for" | "while" | "if" => format!("blocks are written with braces: {header} {{ … }}"),
        "else" => "blocks are written with braces: else { … }".into(),
        "try" => "blocks are written with braces: try { … } catch (e) { … }".into(),
        "except" => {
            let name = line
                .iter()
                .position(|t| t.is_ident(code, "as"))
                .and_then(|k| line.get(k + 1))
                .map_or("e", |t| t.text(code));
            format!("Python's except is catch, with braces: try {{ … }} catch ({name}) {{ … }}")
        }
        "finally" => {
            "torchlet has no finally; put that code after try { … } catch (e) { … }".into()
        }
        "class" => {
            "torchlet has no classes; keep state in an object map #{…} and write fn functions"
                .into()
        }
        _ => return None,
    };
    Some(text)
}

fn f_string(code: &str, toks: &[Token], i: usize) -> Option<String> {
    let t = &toks[i];
    if t.kind != Kind::Ident || !matches!(t.text(code), "f" | "rf" | "fr" | "F") {
        return None;
    }
    let s = toks
        .get(i + 1)
        .filter(|s| s.start == t.end && matches!(s.kind, Kind::Str | Kind::Quoted))?;
    // An unclosed string reaches here too (the fuzzer found `f'…₮`), so the
    // quotes come off by character, the closing one only when it is there.
    let mut rest = s.text(code).chars();
    let quote = rest.next()?;
    let inner = rest.as_str().strip_suffix(quote).unwrap_or(rest.as_str());
    let (converted, dropped_spec) = interpolate(inner);
    let note = if dropped_spec {
        " (format specs such as :.2f have no counterpart; round the value first)"
    } else {
        ""
    };
    Some(format!(
        "f-strings are back-tick strings with ${{…}}: `{converted}`{note}"
    ))
}

/// An f-string's text as a back-tick string's; whether a format spec was dropped.
fn interpolate(inner: &str) -> (String, bool) {
    let mut out = String::new();
    let mut dropped = false;
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut expr = String::new();
                for e in chars.by_ref() {
                    if e == '}' {
                        break;
                    }
                    expr.push(e);
                }
                let mut expr = expr.as_str();
                if let Some((head, _)) = expr.split_once(':') {
                    dropped = true;
                    expr = head;
                }
                let expr = expr.split("!r").next().unwrap_or(expr);
                let expr = expr.trim().trim_end_matches('=').trim();
                out.push_str(&format!("${{{expr}}}"));
            }
            '`' => out.push_str("\\`"),
            c => out.push(c),
        }
    }
    (out, dropped)
}

/// `x[1:3]`, `x[:, 0]`, `x[..., -1]`: Python's slices, as ranges and an index array.
fn slice(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is(code, "[") || i == 0 || !ends_operand(code, &toks[i - 1]) {
        return None;
    }
    let close = closing(code, toks, i).unwrap_or(toks.len());
    let inner = &toks[i + 1..close];
    let mut depth = 0;
    let mut items: Vec<Vec<Token>> = vec![Vec::new()];
    let mut has_colon = false;
    for t in inner {
        match t.text(code) {
            "(" | "[" | "{" | "#{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            ":" | "::" if depth == 0 => has_colon = true,
            _ => {}
        }
        items.last_mut()?.push(*t);
    }
    let is_ellipsis = inner.iter().any(|t| t.is(code, "..."));
    if !(has_colon || is_ellipsis && items.len() > 1) {
        return None;
    }
    let mut parts = Vec::new();
    for item in &items {
        match slice_item(code, item) {
            Some(part) => parts.push(part),
            None => return Some(
                "slices with a step (x[::2]) have no counterpart: a range a..b takes every element"
                    .into(),
            ),
        }
    }
    let receiver = match toks[i - 1].kind {
        Kind::Ident => toks[i - 1].text(code),
        _ => "x",
    };
    let index = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let several = if parts.len() > 1 {
        " and several indices are an array"
    } else {
        ""
    };
    Some(format!(
        "slices are ranges here{several}: {receiver}[{index}] (a view, as in PyTorch; `..` is a whole dimension)"
    ))
}

/// One index of a Python subscript as torchlet's: `a:b` → `a..b`, `:` → `..`, `...` → `..`.
fn slice_item(code: &str, item: &[Token]) -> Option<String> {
    let text = |ts: &[Token]| -> String {
        match (ts.first(), ts.last()) {
            (Some(a), Some(b)) => code[a.start..b.end].trim().to_string(),
            _ => String::new(),
        }
    };
    if item.len() == 1 && item[0].is(code, "...") {
        return Some("..".into());
    }
    let mut bounds: Vec<Vec<Token>> = vec![Vec::new()];
    for t in item {
        match t.text(code) {
            ":" => bounds.push(Vec::new()),
            "::" => {
                bounds.push(Vec::new());
                bounds.push(Vec::new());
            }
            _ => bounds.last_mut()?.push(*t),
        }
    }
    match bounds.as_slice() {
        [only] => Some(text(only)),
        [start, stop] => Some(format!("{}..{}", text(start), text(stop))),
        [start, stop, step] if step.is_empty() => Some(format!("{}..{}", text(start), text(stop))),
        // A step has no counterpart: say so rather than suggest something else.
        _ => None,
    }
}

fn not_in(code: &str, toks: &[Token], i: usize) -> Option<String> {
    let is_not_in = toks[i].is_ident(code, "not")
        && i > 0
        && ends_operand(code, &toks[i - 1])
        && toks.get(i + 1).is_some_and(|t| t.is_ident(code, "in"));
    is_not_in.then(|| "write !(a in b) for Python's a not in b".into())
}

fn comprehension(code: &str, toks: &[Token], i: usize) -> Option<String> {
    if !toks[i].is(code, "[") {
        return None;
    }
    let close = closing(code, toks, i).unwrap_or(toks.len());
    let has_for = toks[i + 1..close].iter().any(|t| t.is_ident(code, "for"));
    has_for.then(|| {
        "torchlet has no list comprehensions: build the array in a loop (let a = []; for x in xs { a.push(f(x)); }) or use xs.map(|x| f(x))".into()
    })
}

/// An `import`/`from` line that is not torch's (those are accepted before this can run).
fn import_line(code: &str, line: usize) -> Option<String> {
    let toks = tokens::code_tokens(code);
    let i = toks.iter().position(|t| t.line == line)?;
    let is_import = matches!(toks[i].text(code), "import" | "from") && toks[i].kind == Kind::Ident;
    is_import.then(|| other_python(code, &toks, i)).flatten()
}

/// Python words with one fixed answer: `pass`, other modules' `import`, single-quoted strings.
fn other_python(code: &str, toks: &[Token], i: usize) -> Option<String> {
    let t = &toks[i];
    match (t.kind, t.text(code)) {
        (Kind::Ident, "pass") => Some("an empty block is {}".into()),
        (Kind::Ident, "import" | "from") if starts_statement(code, toks, i) => Some(
            "only import torch … lines are accepted (they do nothing: torch's names are built in); torchlet has no other modules".into(),
        ),
        (Kind::Ident, "global" | "nonlocal") => Some(
            "torchlet has no global statement; pass values to a function and return results".into(),
        ),
        // A `'…'` string the rewrite could not turn into a `"…"` one (it holds `"` or `\'`).
        (Kind::Quoted, text) if text.chars().count() > 3 && (text.contains('"') || text.contains("\\'")) => Some(
            "write strings in double quotes: \"…\" (single quotes hold one character)".into(),
        ),
        _ => None,
    }
}

/// `f(a, name=value)`: keyword arguments are an object map.
fn keyword_arguments(code: &str, only_line: Option<usize>) -> Option<String> {
    let toks = tokens::code_tokens(code);
    for i in 1..toks.len().saturating_sub(1) {
        let is_keyword = toks[i].kind == Kind::Ident
            && toks[i + 1].is(code, "=")
            && (toks[i - 1].is(code, "(") || toks[i - 1].is(code, ","))
            && only_line.is_none_or(|l| toks[i].line == l);
        if !is_keyword {
            continue;
        }
        let open = enclosing_paren(code, &toks, i)?;
        let name_at = open.checked_sub(1)?;
        if toks[name_at].kind != Kind::Ident {
            return None;
        }
        let name = toks[name_at].text(code);
        if name == "print" {
            return Some(
                "print takes no keyword arguments: build the text, e.g. print(`${a} ${b}`)".into(),
            );
        }
        let receiver = match name_at.checked_sub(2) {
            Some(r) if toks[name_at - 1].is(code, ".") && toks[r].kind == Kind::Ident => {
                format!("{}.", toks[r].text(code))
            }
            _ => String::new(),
        };
        let close = closing(code, &toks, open).unwrap_or(toks.len());
        let (positional, keywords) = split_arguments(code, &toks[open + 1..close]);
        let mut args = positional;
        args.push(format!("#{{{}}}", keywords.join(", ")));
        return Some(format!(
            "keyword arguments are passed as an object map: {receiver}{name}({})",
            args.join(", ")
        ));
    }
    None
}

/// The `(` whose argument list holds token `i`.
fn enclosing_paren(code: &str, toks: &[Token], i: usize) -> Option<usize> {
    let mut depth = 0;
    for k in (0..i).rev() {
        match toks[k].text(code) {
            ")" | "]" | "}" => depth += 1,
            "(" if depth == 0 => return Some(k),
            "(" | "[" | "{" | "#{" => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Arguments as text: the positional ones, and `name: value` for each `name=value`.
fn split_arguments(code: &str, args: &[Token]) -> (Vec<String>, Vec<String>) {
    let mut items: Vec<Vec<Token>> = vec![Vec::new()];
    let mut depth = 0;
    for t in args {
        match t.text(code) {
            "(" | "[" | "{" | "#{" => depth += 1,
            ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                items.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = items.last_mut() {
            last.push(*t);
        }
    }
    let (mut positional, mut keywords) = (Vec::new(), Vec::new());
    for item in items.iter().filter(|i| !i.is_empty()) {
        let text = |from: usize| span(code, &item[from], &item[item.len() - 1]);
        if item.len() > 2 && item[0].kind == Kind::Ident && item[1].is(code, "=") {
            keywords.push(format!("{}: {}", item[0].text(code), text(2)));
        } else {
            positional.push(text(0));
        }
    }
    (positional, keywords)
}

/// "Expecting ';'" at the start of a line: the statement on the line before needs its `;`.
fn missing_semicolon(translated: &str, site: &ErrorSite) -> Option<String> {
    let (line, _) = missing_semicolon_at(translated, site)?;
    Some(semicolon_hint(&[line]))
}

/// Where the `;` that Rhai's "Expecting ';'" at the start of a statement wants goes: the 1-based
/// line of the statement before it and the byte offset just past its last token.
///
/// Read from the compiled text, where `torch.cuda.x` is `     cuda::x` and `import torch` is
/// blank: the typed text would put the statement's start in the middle of a name, or take the
/// blanked import for the statement before.
pub fn missing_semicolon_at(translated: &str, site: &ErrorSite) -> Option<(usize, usize)> {
    if !site.message.starts_with("Expecting ';'") {
        return None;
    }
    let toks = tokens::code_tokens(translated);
    let line = site.line? - 1;
    let first = toks.iter().position(|t| t.line == line)?;
    let line_start = translated[..toks[first].start]
        .rfind('\n')
        .map_or(0, |nl| nl + 1);
    let column = translated[line_start..toks[first].start].chars().count() + 1;
    if site.column != Some(column) || first == 0 {
        return None;
    }
    let before = &toks[first - 1];
    Some((before.line + 1, before.end))
}

/// The hint for statements on `lines` (1-based, in order) that lack their `;`.
pub fn semicolon_hint(lines: &[usize]) -> String {
    let listed = match lines {
        [one] => format!("the statement on line {one}"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(usize::to_string).collect();
            format!("the statements on lines {} and {last}", init.join(", "))
        }
        [] => "the statement".into(),
    };
    format!("end {listed} with ; (a line break does not end a statement)")
}

/// Python's builtins and modules that have another spelling here.
fn python_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "append" => "arrays grow with push: xs.push(x)",
        "len" => "x.len() for an array or a string; t.shape[0] or t.size(0) for a tensor",
        "str" => "x.to_string(), or a back-tick string: `${x}`",
        "type" | "isinstance" => "type_of(x) names a value's type",
        "list" | "tuple" => "arrays are written [a, b, c]",
        "dict" => "maps are written #{key: value}",
        "enumerate" => "for (x, i) in xs { … } gives each item with its index",
        "self" => "torchlet has no classes; pass values to fn functions",
        "nn" | "optim" => "torchlet has no torch.nn modules; write a layer as a function of tensors (matmul, relu, …)",
        "cuda" => "the cuda module's members are reached with ::, e.g. cuda::empty_cache()",
        "np" | "numpy" | "math" => "torchlet has only torch's names; other modules are not available",
        _ => return None,
    })
}

fn name_hint(code: &str, site: &ErrorSite, known: &Known) -> Option<String> {
    let name = quoted_name(site.message)?;
    if let Some(h) = after_torch_prefix(code, site, name, known) {
        return Some(h);
    }
    if let Some(h) = assigned_without_let(code, name) {
        return Some(h);
    }
    if let Some(h) = python_name(name) {
        return Some(h.into());
    }
    closest(name, &known.names).map(|n| format!("did you mean {n}?"))
}

fn attribute_hint(site: &ErrorSite, known: &Known) -> Option<String> {
    let name = site
        .message
        .rsplit_once("attribute '")
        .and_then(|(_, rest)| rest.split('\'').next())
        .or_else(|| quoted_name(site.message))?;
    match name {
        "append" => return Some("arrays grow with push: xs.push(x)".into()),
        "numpy" => return Some("t.tolist() gives the values as arrays".into()),
        _ => {}
    }
    closest(name, &known.members).map(|n| format!("did you mean .{n}?"))
}

/// The first `'…'`-quoted word of a message.
fn quoted_name(message: &str) -> Option<&str> {
    message.split('\'').nth(1).filter(|n| !n.is_empty())
}

/// `torch.NAME` (or `F.NAME`, `torch.cuda.NAME`) where torchlet has no NAME.
fn after_torch_prefix(code: &str, site: &ErrorSite, name: &str, known: &Known) -> Option<String> {
    let line = code.lines().nth(site.line? - 1)?;
    let before: String = line.chars().take(site.column? - 1).collect();
    let before = before.trim_end();
    let prefix = [
        "torch.cuda.",
        "torch.nn.functional.",
        "torch.nn.",
        "torch.",
        "F.",
    ]
    .into_iter()
    .find(|p| before.ends_with(p))?;
    let suggestion = closest(name, &known.names)
        .map(|n| format!("; did you mean {n}?"))
        .unwrap_or_else(|| "; help() lists every name".into());
    Some(format!("torchlet has no {prefix}{name}{suggestion}"))
}

/// `x = …` for a name never declared: Rhai needs `let`.
fn assigned_without_let(code: &str, name: &str) -> Option<String> {
    let toks = tokens::code_tokens(code);
    let declared = toks
        .windows(2)
        .any(|w| matches!(w[0].text(code), "let" | "const") && w[1].is_ident(code, name));
    let assigned = (0..toks.len().saturating_sub(1)).find(|&k| {
        toks[k].is_ident(code, name)
            && toks[k + 1].is(code, "=")
            && (k == 0 || !matches!(toks[k - 1].text(code), "." | "let" | "const"))
    })?;
    if declared {
        return None;
    }
    let note = if inside_fn(code, &toks, assigned) {
        " (a function sees only its arguments and its own variables)"
    } else {
        ""
    };
    Some(format!(
        "a new variable is declared with let: let {name} = …{note}"
    ))
}

/// Whether token `k` lies in the body of a `fn`.
fn inside_fn(code: &str, toks: &[Token], k: usize) -> bool {
    toks.iter().enumerate().any(|(f, t)| {
        let Some(open) = (f..k)
            .find(|&o| toks[o].is(code, "{"))
            .filter(|_| t.is_ident(code, "fn"))
        else {
            return false;
        };
        closing(code, toks, open).is_none_or(|close| close > k)
    })
}

/// The known name closest to `name` in spelling, if close enough to be a likely slip.
fn closest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let limit = match name.chars().count() {
        0..=2 => 0,
        3..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    let len = name.chars().count();
    known
        .iter()
        .filter(|k| k.as_str() != name && !tokens::is_keyword(k))
        .map(|k| {
            let folded = k.to_lowercase() == name.to_lowercase();
            let d = if folded { 0 } else { distance(name, k) };
            let same_start = k.starts_with(name.get(..1).unwrap_or(""));
            (d, !same_start, k.chars().count().abs_diff(len), k.as_str())
        })
        .filter(|&(d, ..)| d <= limit)
        .min()
        .map(|(.., k)| k)
}

/// Edit distance with adjacent transpositions (a typo's usual shapes).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syntax(code: &str, line: usize, column: usize) -> Option<String> {
        let site = ErrorSite {
            kind: "SyntaxError",
            message: "Expecting ';' to terminate this statement",
            line: Some(line),
            column: Some(column),
        };
        hint(code, code, &site, &Known::default())
    }

    #[test]
    fn typos_find_the_closest_name() {
        let known: Vec<String> = ["randn", "rand", "zeros", "memory_allocated"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("randz", &known), Some("randn"));
        assert_eq!(
            closest("memroy_allocated", &known),
            Some("memory_allocated")
        );
        assert_eq!(closest("Zeros", &known), Some("zeros"));
        assert_eq!(closest("qqqqq", &known), None);
        assert_eq!(distance("ab", "ba"), 1);
    }

    #[test]
    fn python_blocks_get_their_braced_spelling() {
        assert_eq!(
            syntax("for i in range(3):\n  print(i)", 1, 18).unwrap(),
            "blocks are written with braces: for i in range(3) { … }"
        );
        assert!(syntax("def f(x: int, y=2):\n  return x", 1, 5)
            .unwrap()
            .ends_with("fn f(x, y) { … }"));
        assert!(syntax("x = [1, 2]\ny = 3", 2, 1)
            .unwrap()
            .contains("line 1 with ;"));
    }

    #[test]
    fn f_strings_become_back_tick_strings() {
        assert_eq!(
            interpolate("loss {loss:.3f} at {{step}} {i=}"),
            ("loss ${loss} at {step} ${i}".to_string(), true)
        );
    }

    #[test]
    fn slices_become_ranges() {
        let h = syntax("let y = x[:, 1:3]", 1, 11).unwrap();
        assert!(h.contains("x[[.., 1..3]]"), "{h}");
        let h = syntax("x[-1:]", 1, 3).unwrap();
        assert!(h.contains("x[-1..]"), "{h}");
        assert!(syntax("x[::2]", 1, 3).unwrap().contains("no counterpart"));
    }

    #[test]
    fn keyword_arguments_become_a_map() {
        let h = syntax(
            "let y = zeros(2, 3, dtype=\"float16\", device=\"cuda\")",
            1,
            26,
        )
        .unwrap();
        assert!(
            h.ends_with("zeros(2, 3, #{dtype: \"float16\", device: \"cuda\"})"),
            "{h}"
        );
    }
}
