//! PyTorch's spellings read as torchlet's: a source rewrite that keeps every line and column.
//!
//! A PyTorch user types `import torch`, `torch.randn(…)`, `torch.cuda.empty_cache()`,
//! `dtype=torch.float16`, `None`, `x is not None and y`, `'cuda'` and `# comments`. Rhai parses
//! none of these, so before compiling, the session rewrites them into torchlet's spelling.
//!
//! Why a text rewrite, and why it never changes a column: Rhai reports every error as line and
//! column of the text it compiled, and the caret is drawn under the user's own line. Each rewrite
//! here replaces a span by text of the same number of characters (`torch.randn` becomes
//! `      randn`, `torch.cuda.` becomes `     cuda::`, `None` becomes `()  `), or adds text only
//! where nothing follows on the line, so the compiled text and the typed text share every
//! position. It works on tokens (see [`super::tokens`]), so strings and comments are never touched.
use std::collections::BTreeMap;

use super::tokens::{self, ends_operand, starts_operand, Kind, Token};

/// Which of PyTorch's modules a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    /// `torch`: its functions are torchlet's top-level functions, its dtypes dtype strings.
    Torch,
    /// `torch.cuda`: torchlet's `cuda::` module.
    Cuda,
    /// `torch.nn`: only a way to reach `torch.nn.functional`.
    Nn,
    /// `torch.nn.functional` (`F`): its functions are torchlet's top-level functions.
    Functional,
    /// `torch.distributed`: torchlet's `dist::` module.
    Distributed,
}

/// Names that stand for PyTorch's modules: `torch` and `F` from the start, and whatever
/// `import torch … as NAME` lines bind.
#[derive(Clone, Debug)]
pub struct Aliases(BTreeMap<String, Namespace>);

impl Default for Aliases {
    fn default() -> Self {
        let names = [("torch", Namespace::Torch), ("F", Namespace::Functional)];
        Aliases(names.iter().map(|&(n, ns)| (n.to_string(), ns)).collect())
    }
}

impl Aliases {
    /// The module `name` stands for, if any.
    pub fn get(&self, name: &str) -> Option<Namespace> {
        self.0.get(name).copied()
    }
}

/// One replacement of `start..end` (bytes) by `text`, of as many characters unless at a line end.
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

/// `code` in torchlet's spelling; `import` lines bind their names in `aliases`. Names for which
/// `is_variable` holds (and names the input itself declares) are left alone, so a variable `F`
/// stays a variable.
pub fn translate(code: &str, aliases: &mut Aliases, is_variable: impl Fn(&str) -> bool) -> String {
    let all = tokens::lex(code);
    let toks: Vec<Token> = all.iter().copied().filter(Token::is_code).collect();
    let declared = declared_names(code, &toks);
    let mut edits = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some(next) = import_statement(code, &toks, i, aliases, &mut edits) {
            i = next;
            continue;
        }
        let name = toks[i].text(code);
        let shadowed = |n: &str| is_variable(n) || declared.iter().any(|d| d == n);
        let is_path_start = !after_member_access(code, &toks, i);
        if let Some(ns) = aliases
            .get(name)
            .filter(|_| is_path_start && !shadowed(name))
        {
            if let Some(next) = module_path(code, &toks, i, ns, &mut edits) {
                i = next;
                continue;
            }
        }
        python_word(code, &toks, i, &mut edits);
        grad_block_end(code, &toks, i, &mut edits);
        if toks[i].kind == Kind::Quoted {
            single_quoted(code, &toks[i], &mut edits);
        }
        i += 1;
    }
    for t in all.iter().filter(|t| t.kind == Kind::HashComment) {
        // `# note` → `// note`: the comment's first character makes room for the second `/`.
        let first = code[t.start + 1..t.end].chars().next();
        let end = t.start + 1 + first.map_or(0, char::len_utf8);
        edits.push(Edit {
            start: t.start,
            end,
            text: "//".into(),
        });
    }
    apply(code, edits)
}

/// Whether the input's last code token is `;`: IPython's sign that its value is not to be shown.
pub fn ends_with_semicolon(code: &str) -> bool {
    tokens::code_tokens(code)
        .last()
        .is_some_and(|t| t.is(code, ";"))
}

fn apply(code: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| e.start);
    let mut out = String::with_capacity(code.len() + 8);
    let mut at = 0;
    for e in edits {
        if e.start < at {
            continue; // overlapping rewrites cannot happen; if one did, the first one wins
        }
        out.push_str(&code[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&code[at..]);
    out
}

/// `text` right-aligned in the span `start..end`, padded with spaces; `None` if it does not fit.
fn padded(code: &str, start: usize, end: usize, text: &str) -> Option<Edit> {
    let room = code[start..end].chars().count();
    let len = text.chars().count();
    (len <= room && !code[start..end].contains('\n')).then(|| Edit {
        start,
        end,
        text: format!("{}{text}", " ".repeat(room - len)),
    })
}

/// Blank `start..end`, keeping its line breaks.
fn blank(code: &str, start: usize, end: usize) -> Edit {
    let text = code[start..end]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    Edit { start, end, text }
}

/// Whether token `i` follows `.`, `?.` or `::` (a member, not a name of its own).
fn after_member_access(code: &str, toks: &[Token], i: usize) -> bool {
    i > 0 && matches!(toks[i - 1].text(code), "." | "?." | "::")
}

/// Names the input declares with `let`, `const`, `for` or as `fn` parameters.
fn declared_names(code: &str, toks: &[Token]) -> Vec<String> {
    let mut names = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let binds = matches!(t.text(code), "let" | "const" | "for") && t.kind == Kind::Ident;
        if binds {
            if let Some(next) = toks.get(i + 1).filter(|n| n.kind == Kind::Ident) {
                names.push(next.text(code).to_string());
            }
        }
        if t.is_ident(code, "fn") {
            let params = toks[i + 1..]
                .iter()
                .skip_while(|p| !p.is(code, "("))
                .take_while(|p| !p.is(code, ")"));
            names.extend(
                params
                    .filter(|p| p.kind == Kind::Ident)
                    .map(|p| p.text(code).to_string()),
            );
        }
    }
    names
}

/// Whether token `i` starts a statement: the first token, or the first after `;` or on its line.
fn starts_statement(code: &str, toks: &[Token], i: usize) -> bool {
    i == 0 || toks[i - 1].is(code, ";") || toks[i - 1].line < toks[i].line
}

/// `import torch…` / `from torch… import …` at token `i`: blanked (a no-op), its names bound.
/// Returns the index of the token after the statement. Other modules are left for the parser
/// to reject, with a hint.
fn import_statement(
    code: &str,
    toks: &[Token],
    i: usize,
    aliases: &mut Aliases,
    edits: &mut Vec<Edit>,
) -> Option<usize> {
    let word = toks[i].text(code);
    if toks[i].kind != Kind::Ident || !matches!(word, "import" | "from") {
        return None;
    }
    if !starts_statement(code, toks, i) {
        return None;
    }
    let mut p = ImportParser {
        code,
        toks,
        at: i + 1,
        bound: Vec::new(),
    };
    if word == "import" {
        p.import_list()?;
    } else {
        p.imported_names()?;
    }
    let end = p.at;
    // The statement must end here: at `;`, at the end of its line, or at the end of the input.
    if let Some(next) = toks.get(end) {
        if !(next.is(code, ";") || next.line > toks[end - 1].line) {
            return None;
        }
    }
    for (name, ns) in p.bound {
        aliases.0.insert(name, ns);
    }
    edits.push(blank(code, toks[i].start, toks[end - 1].end));
    Some(end)
}

/// Reads the rest of an import statement, remembering the names it binds to torch's modules.
struct ImportParser<'a> {
    code: &'a str,
    toks: &'a [Token],
    at: usize,
    bound: Vec<(String, Namespace)>,
}

impl ImportParser<'_> {
    fn ident(&mut self) -> Option<&str> {
        let t = self.toks.get(self.at).filter(|t| t.kind == Kind::Ident)?;
        self.at += 1;
        Some(t.text(self.code))
    }

    fn symbol(&mut self, s: &str) -> bool {
        let found = self.toks.get(self.at).is_some_and(|t| t.is(self.code, s));
        if found {
            self.at += 1;
        }
        found
    }

    /// A dotted module path under `torch`, on one line.
    fn torch_path(&mut self) -> Option<Vec<String>> {
        let line = self.toks.get(self.at)?.line;
        let mut path = vec![self.ident()?.to_string()];
        while self.toks.get(self.at).is_some_and(|t| t.line == line) && self.symbol(".") {
            path.push(self.ident()?.to_string());
        }
        (path[0] == "torch").then_some(path)
    }

    /// `as NAME`, if present.
    fn alias(&mut self) -> Option<Option<String>> {
        if self
            .toks
            .get(self.at)
            .is_some_and(|t| t.is_ident(self.code, "as"))
        {
            self.at += 1;
            return Some(Some(self.ident()?.to_string()));
        }
        Some(None)
    }

    /// `import PATH [as NAME] (, PATH [as NAME])*`
    fn import_list(&mut self) -> Option<()> {
        loop {
            let path = self.torch_path()?;
            match self.alias()? {
                Some(name) => {
                    if let Some(ns) = namespace_of(&path) {
                        self.bound.push((name, ns));
                    }
                }
                None => self.bound.push(("torch".into(), Namespace::Torch)),
            }
            if !self.symbol(",") {
                return Some(());
            }
        }
    }

    /// `from PATH import NAME [as NAME] (, …)*`, also in parentheses, or `*`.
    fn imported_names(&mut self) -> Option<()> {
        let path = self.torch_path()?;
        if !self.toks.get(self.at)?.is_ident(self.code, "import") {
            return None;
        }
        self.at += 1;
        if self.symbol("*") {
            return Some(());
        }
        let parenthesised = self.symbol("(");
        loop {
            let name = self.ident()?.to_string();
            let bound = self.alias()?.unwrap_or_else(|| name.clone());
            let mut full = path.clone();
            full.push(name);
            // `from torch import cuda` would need `cuda.x` → `cuda::x`, one column more; the
            // `cuda::` and `dist::` modules need no import anyway.
            let module = |ns: &Namespace| matches!(ns, Namespace::Cuda | Namespace::Distributed);
            if let Some(ns) = namespace_of(&full).filter(|ns| !module(ns)) {
                self.bound.push((bound, ns));
            }
            if !self.symbol(",") {
                break;
            }
        }
        if parenthesised && !self.symbol(")") {
            return None;
        }
        Some(())
    }
}

fn namespace_of(path: &[String]) -> Option<Namespace> {
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path.as_slice() {
        ["torch"] => Some(Namespace::Torch),
        ["torch", "cuda"] => Some(Namespace::Cuda),
        ["torch", "distributed"] => Some(Namespace::Distributed),
        ["torch", "nn"] => Some(Namespace::Nn),
        ["torch", "nn", "functional"] => Some(Namespace::Functional),
        _ => None,
    }
}

/// `torch.NAME`, `torch.cuda.NAME`, `F.NAME`, `torch.float16` … starting at token `i`, which names
/// module `ns`. Returns the index of the member's token when rewritten.
fn module_path(
    code: &str,
    toks: &[Token],
    i: usize,
    mut ns: Namespace,
    edits: &mut Vec<Edit>,
) -> Option<usize> {
    let mut j = i;
    let member = loop {
        let dot = toks.get(j + 1).filter(|t| t.is(code, "."))?;
        let name = toks.get(j + 2).filter(|t| t.kind == Kind::Ident)?;
        if dot.line != toks[i].line || name.line != toks[i].line {
            return None;
        }
        ns = match (ns, name.text(code)) {
            (Namespace::Torch, "cuda") => Namespace::Cuda,
            (Namespace::Torch, "distributed") => Namespace::Distributed,
            (Namespace::Torch, "nn") => Namespace::Nn,
            (Namespace::Nn, "functional") => Namespace::Functional,
            _ => break j + 2,
        };
        j += 2;
    };
    let start = toks[i].start;
    let m = &toks[member];
    let called = toks.get(member + 1).is_some_and(|t| t.is(code, "("));
    let dtype = torchlet_core::tensor::DType::parse(m.text(code)).filter(|_| !called);
    let edit = match ns {
        Namespace::Cuda => padded(code, start, m.start, "cuda::")?,
        Namespace::Distributed => padded(code, start, m.start, "dist::")?,
        Namespace::Torch if dtype.is_some() => {
            let quoted = format!("\"{}\"", dtype?.name());
            padded(code, start, m.end, &quoted)?
        }
        // `torch.nn.NAME` has no torchlet counterpart; the name alone gets a "not defined" hint.
        _ => padded(code, start, m.start, "")?,
    };
    edits.push(edit);
    Some(member + 1)
}

/// `None`, `True`, `False`, `and`, `or`, `not`, `is None`, `is not None` at token `i`.
fn python_word(code: &str, toks: &[Token], i: usize, edits: &mut Vec<Edit>) {
    let t = &toks[i];
    if t.kind != Kind::Ident || after_member_access(code, toks, i) {
        return;
    }
    let prev = i.checked_sub(1).map(|p| &toks[p]);
    let next = toks.get(i + 1);
    // `#{None: 1}` keeps its key; `let and = 1` its name.
    let is_key = next.is_some_and(|n| n.is(code, ":"));
    let is_declared = prev.is_some_and(|p| matches!(p.text(code), "let" | "const" | "fn"));
    if is_key || is_declared {
        return;
    }
    let after_operand = prev.is_some_and(|p| ends_operand(code, p));
    let before_operand = next.is_some_and(|n| starts_operand(code, n));
    let is_none = |k: usize| toks.get(k).is_some_and(|n| n.is_ident(code, "None"));
    let text = match t.text(code) {
        "None" => "()  ",
        "True" => "true",
        "False" => "false",
        "and" if after_operand && before_operand => "&& ",
        "or" if after_operand && before_operand => "||",
        "not" if !after_operand && before_operand => "!  ",
        "is" if after_operand && is_none(i + 1) => "==",
        "is" if after_operand
            && next.is_some_and(|n| n.is_ident(code, "not"))
            && is_none(i + 2) =>
        {
            edits.push(blank(code, toks[i + 1].start, toks[i + 1].end));
            "!="
        }
        _ => return,
    };
    edits.push(Edit {
        start: t.start,
        end: t.end,
        text: text.into(),
    });
}

/// After a grad-mode or autocast block that closes at the end of its line, a `;` ends the
/// statement, so a next line that starts with `[`, `(`, `-` or `.` begins a new statement, as in
/// Python.
fn grad_block_end(code: &str, toks: &[Token], i: usize, edits: &mut Vec<Edit>) {
    let t = &toks[i];
    let keyword = matches!(
        t.text(code),
        "no_grad" | "enable_grad" | "inference_mode" | "autocast"
    );
    if t.kind != Kind::Ident || !keyword || after_member_access(code, toks, i) {
        return;
    }
    let Some(open) = block_start(code, toks, i) else {
        return;
    };
    let mut depth = 0usize;
    for (k, b) in toks.iter().enumerate().skip(open) {
        match b.text(code) {
            "{" | "#{" if b.kind == Kind::Symbol => depth += 1,
            "}" if b.kind == Kind::Symbol => {
                depth -= 1;
                if depth == 0 {
                    let continues = toks.get(k + 1).is_some_and(|n| {
                        n.line > b.line
                            && n.kind == Kind::Symbol
                            && crate::runtime::syntax::CONTINUATIONS.contains(&n.text(code))
                    });
                    if continues {
                        edits.push(Edit {
                            start: b.end,
                            end: b.end,
                            text: ";".into(),
                        });
                    }
                    return;
                }
            }
            _ => {}
        }
    }
}

/// The index of the `{` that opens the block of the statement keyword at `i`: the next token,
/// or for `autocast(…) { … }` the one after the options' closing parenthesis.
fn block_start(code: &str, toks: &[Token], i: usize) -> Option<usize> {
    let mut open = i + 1;
    if toks[i].text(code) == "autocast" && toks.get(open).is_some_and(|n| n.is(code, "(")) {
        let mut depth = 0usize;
        for (k, b) in toks.iter().enumerate().skip(open) {
            match b.text(code) {
                "(" if b.kind == Kind::Symbol => depth += 1,
                ")" if b.kind == Kind::Symbol => {
                    depth -= 1;
                    if depth == 0 {
                        open = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    toks.get(open)
        .is_some_and(|n| n.is(code, "{"))
        .then_some(open)
}

/// Python's `'text'` → `"text"`; a one-character `'c'` stays Rhai's character literal.
fn single_quoted(code: &str, t: &Token, edits: &mut Vec<Edit>) {
    let text = t.text(code);
    let Some(inner) = text
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .filter(|_| text.len() >= 2)
    else {
        return;
    };
    let one_char = inner.chars().count() == 1 || (inner.starts_with('\\') && inner.len() == 2);
    if one_char || inner.contains('"') || inner.contains("\\'") {
        return;
    }
    for at in [t.start, t.end - 1] {
        edits.push(Edit {
            start: at,
            end: at + 1,
            text: "\"".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(code: &str) -> String {
        translate(code, &mut Aliases::default(), |_| false)
    }

    #[test]
    fn every_line_keeps_its_length() {
        for code in [
            "import torch\nx = torch.randn(3, dtype=torch.float16)",
            "torch.cuda.empty_cache()",
            "y = None if x is not None and not z else True",
            "F.relu(x) # why",
            "print('cuda')",
        ] {
            let out = spelled(code);
            let lengths = |s: &str| s.lines().map(|l| l.chars().count()).collect::<Vec<_>>();
            assert_eq!(lengths(&out), lengths(code), "{code:?} → {out:?}");
        }
    }

    #[test]
    fn torch_names_become_torchlets() {
        assert_eq!(spelled("torch.randn(3)"), "      randn(3)");
        assert_eq!(
            spelled("torch.cuda.memory_allocated()"),
            "     cuda::memory_allocated()"
        );
        assert_eq!(
            spelled("torch.distributed.get_rank()"),
            "            dist::get_rank()"
        );
        assert_eq!(
            spelled("torch.nn.functional.relu(x)"),
            format!("{}relu(x)", " ".repeat(20))
        );
        assert_eq!(spelled("x.to(torch.float16)"), "x.to(    \"float16\")");
        assert_eq!(spelled("torch.long"), "   \"int64\"");
        assert_eq!(
            spelled("import torch\ntorch.ones(1)"),
            "            \n      ones(1)"
        );
    }

    #[test]
    fn strings_comments_and_members_are_left_alone() {
        for code in [
            "\"torch.randn None\"",
            "// torch.randn and None",
            "x.torch.randn",
            "`torch.x`",
        ] {
            assert_eq!(spelled(code), code);
        }
        assert_eq!(spelled("`${torch.ones(1)}`"), "`${      ones(1)}`");
    }

    #[test]
    fn imports_bind_aliases_and_a_variable_wins_over_an_alias() {
        let mut aliases = Aliases::default();
        let out = translate(
            "import torch.nn.functional as G\nG.relu(x)",
            &mut aliases,
            |_| false,
        );
        assert_eq!(out, format!("{}\n  relu(x)", " ".repeat(31)));
        assert_eq!(aliases.get("G"), Some(Namespace::Functional));
        assert_eq!(
            translate("F.sum()", &mut Aliases::default(), |n| n == "F"),
            "F.sum()"
        );
        assert_eq!(spelled("let F = x; F.sum()"), "let F = x; F.sum()");
        assert_eq!(spelled("import numpy as np"), "import numpy as np");
    }

    #[test]
    fn python_words_and_literals() {
        assert_eq!(spelled("a and not b or c"), "a &&  !   b || c");
        assert_eq!(spelled("x is None"), "x == ()  ");
        assert_eq!(spelled("x is not None"), "x !=     ()  ");
        assert_eq!(spelled("#{None: True}"), "#{None: true}");
        assert_eq!(spelled("x.to('cuda')"), "x.to(\"cuda\")");
        assert_eq!(spelled("'c'"), "'c'");
        assert_eq!(spelled("#x\n# y\n#"), "//\n//y\n//");
        assert_eq!(spelled("#{a: 1}"), "#{a: 1}");
    }

    #[test]
    fn a_grad_block_at_a_line_end_ends_its_statement() {
        assert_eq!(
            spelled("no_grad { let z = #{a: 1}; }\n[z]"),
            "no_grad { let z = #{a: 1}; };\n[z]"
        );
        assert_eq!(
            spelled("no_grad { z }\nlet y = 1;"),
            "no_grad { z }\nlet y = 1;"
        );
        assert_eq!(spelled("no_grad { z } [1]"), "no_grad { z } [1]");
        assert_eq!(
            spelled("autocast(#{dtype: \"bfloat16\"}) { let z = 1; }\n[z]"),
            "autocast(#{dtype: \"bfloat16\"}) { let z = 1; };\n[z]"
        );
        assert_eq!(spelled("autocast { z }\n-z"), "autocast { z };\n-z");
    }

    #[test]
    fn a_trailing_semicolon_is_seen_past_comments() {
        assert!(ends_with_semicolon("x; // quiet\n  "));
        assert!(!ends_with_semicolon("x // ;"));
        assert!(!ends_with_semicolon("\";\""));
    }
}
