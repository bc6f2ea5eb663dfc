//! A small lexer of script source, so rewrites and hints never touch strings or comments.
//!
//! It does not need to be Rhai's: it splits source into names, numbers, strings, comments and
//! symbols with their byte spans and lines, tolerating unfinished input (an open string runs to
//! the end) because the REPL asks about inputs still being typed. Code inside a back-tick
//! string's `${…}` is lexed as code, so rewrites reach it too.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A name or keyword: `randn`, `let`, `torch`.
    Ident,
    /// A number: `3`, `1.5e-3`, `0xff`.
    Number,
    /// A `"…"` string.
    Str,
    /// A part of a back-tick string (the text around its `${…}` parts).
    Backtick,
    /// A `'…'` literal: Rhai's character, or Python's single-quoted string.
    Quoted,
    /// A `//` or `/* … */` comment (or a first-line `#!`).
    Comment,
    /// A Python `#` comment, to the end of its line.
    HashComment,
    /// Punctuation or an operator: `(`, `..=`, `::`, `#{`.
    Symbol,
}

/// One token: its kind, byte span and 0-based line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past it.
    pub end: usize,
    /// 0-based line of its first character.
    pub line: usize,
}

impl Token {
    /// Its text in `code`.
    pub fn text<'a>(&self, code: &'a str) -> &'a str {
        &code[self.start..self.end]
    }

    /// Whether it is code rather than a comment.
    pub fn is_code(&self) -> bool {
        !matches!(self.kind, Kind::Comment | Kind::HashComment)
    }

    /// Whether it is the symbol `s`.
    pub fn is(&self, code: &str, s: &str) -> bool {
        self.kind == Kind::Symbol && self.text(code) == s
    }

    /// Whether it is the name (or keyword) `s`.
    pub fn is_ident(&self, code: &str, s: &str) -> bool {
        self.kind == Kind::Ident && self.text(code) == s
    }
}

/// Symbols of more than one character, longest first so the longest match wins.
const SYMBOLS: &[&str] = &[
    "..=", "...", "**=", "<<=", ">>=", "::", "..", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=",
    "-=", "*=", "/=", "%=", "&=", "|=", "^=", "**", "<<", ">>", "?.", "?[", "??", "->", "#{",
];

/// The tokens of `code`, comments included, whitespace left out.
pub fn lex(code: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        code,
        at: 0,
        line: 0,
        out: Vec::new(),
    };
    lexer.code_until_close(false);
    lexer.out
}

/// The tokens of `code` that are code (comments dropped).
pub fn code_tokens(code: &str) -> Vec<Token> {
    lex(code).into_iter().filter(Token::is_code).collect()
}

struct Lexer<'a> {
    code: &'a str,
    at: usize,
    line: usize,
    out: Vec<Token>,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.code[self.at..].chars().next()
    }

    fn peek2(&self) -> Option<char> {
        self.code[self.at..].chars().nth(1)
    }

    /// Step over one character, counting lines.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn push(&mut self, kind: Kind, start: usize, line: usize) {
        self.out.push(Token {
            kind,
            start,
            end: self.at,
            line,
        });
    }

    /// Lex code; with `in_interpolation`, stop after the `}` that closes a `${`.
    fn code_until_close(&mut self, in_interpolation: bool) {
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            let (start, line) = (self.at, self.line);
            if c.is_whitespace() {
                self.bump();
            } else if c == '/' && self.peek2() == Some('/') {
                self.skip_line();
                self.push(Kind::Comment, start, line);
            } else if c == '/' && self.peek2() == Some('*') {
                self.block_comment();
                self.push(Kind::Comment, start, line);
            } else if c == '#' && start == 0 && self.peek2() == Some('!') {
                self.skip_line();
                self.push(Kind::Comment, start, line);
            } else if c == '#' && self.peek2() != Some('{') {
                self.skip_line();
                self.push(Kind::HashComment, start, line);
            } else if c == '"' {
                self.bump();
                self.string_body('"');
                self.push(Kind::Str, start, line);
            } else if c == '\'' {
                self.bump();
                self.string_body('\'');
                self.push(Kind::Quoted, start, line);
            } else if c == '`' {
                self.backtick();
            } else if c.is_ascii_digit() {
                self.number(start);
                self.push(Kind::Number, start, line);
            } else if c.is_alphabetic() || c == '_' {
                while self.peek().is_some_and(is_word) {
                    self.bump();
                }
                self.push(Kind::Ident, start, line);
            } else if in_interpolation && c == '}' && depth == 0 {
                self.bump();
                return;
            } else {
                self.symbol();
                match &self.code[start..self.at] {
                    "{" | "#{" => depth += 1,
                    "}" => depth = depth.saturating_sub(1),
                    _ => {}
                }
                self.push(Kind::Symbol, start, line);
            }
        }
    }

    fn skip_line(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.bump();
        }
    }

    /// `/* … */`, nested as Rhai nests them; an unclosed one runs to the end.
    fn block_comment(&mut self) {
        self.bump();
        self.bump();
        let mut depth = 1;
        while depth > 0 {
            match (self.peek(), self.peek2()) {
                (Some('*'), Some('/')) => {
                    self.bump();
                    self.bump();
                    depth -= 1;
                }
                (Some('/'), Some('*')) => {
                    self.bump();
                    self.bump();
                    depth += 1;
                }
                (Some(_), _) => {
                    self.bump();
                }
                (None, _) => return,
            }
        }
    }

    /// The rest of a quoted literal after its opening `quote`: to the closing one, or to the end
    /// of the line when it is never closed (a `\` before the line break continues it).
    fn string_body(&mut self, quote: char) {
        while let Some(c) = self.peek() {
            match c {
                '\\' => {
                    self.bump();
                    self.bump();
                }
                '\n' => return,
                c => {
                    self.bump();
                    if c == quote {
                        return;
                    }
                }
            }
        }
    }

    /// A back-tick string: its text parts as `Backtick` tokens, its `${…}` parts as code.
    fn backtick(&mut self) {
        let (mut start, mut line) = (self.at, self.line);
        self.bump();
        while let Some(c) = self.peek() {
            if c == '`' {
                self.bump();
                break;
            }
            if c == '\\' {
                self.bump();
                self.bump();
                continue;
            }
            if c == '$' && self.peek2() == Some('{') {
                self.bump();
                self.bump();
                self.push(Kind::Backtick, start, line);
                self.code_until_close(true);
                (start, line) = (self.at, self.line);
                continue;
            }
            self.bump();
        }
        self.push(Kind::Backtick, start, line);
    }

    fn number(&mut self, start: usize) {
        while let Some(c) = self.peek() {
            let so_far = &self.code[start..self.at];
            let exponent_sign =
                matches!(c, '+' | '-') && so_far.ends_with(['e', 'E']) && !so_far.starts_with("0x");
            let decimal_point = c == '.' && self.peek2().is_some_and(|d| d.is_ascii_digit());
            if c.is_ascii_alphanumeric() || c == '_' || exponent_sign || decimal_point {
                self.bump();
            } else {
                return;
            }
        }
    }

    fn symbol(&mut self) {
        let rest = &self.code[self.at..];
        let len = SYMBOLS.iter().find(|s| rest.starts_with(*s)).map_or_else(
            || rest.chars().next().map_or(0, char::len_utf8),
            |s| s.len(),
        );
        let end = self.at + len;
        while self.at < end {
            self.bump();
        }
    }
}

/// Whether `c` may be part of a name (`randn`, `x_1`, `ä`).
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether the token ends an operand, so a binary operator may follow it.
pub fn ends_operand(code: &str, token: &Token) -> bool {
    match token.kind {
        Kind::Number | Kind::Str | Kind::Backtick | Kind::Quoted => true,
        // Python's word operators (read as `&&`, `||`, `!`, `==`) end no operand either.
        Kind::Ident => {
            let word = token.text(code);
            !is_keyword(word) && !matches!(word, "and" | "or" | "not" | "is")
        }
        Kind::Symbol => matches!(token.text(code), ")" | "]"),
        Kind::Comment | Kind::HashComment => false,
    }
}

/// Whether the token can start an operand.
pub fn starts_operand(code: &str, token: &Token) -> bool {
    match token.kind {
        Kind::Number | Kind::Str | Kind::Backtick | Kind::Quoted => true,
        Kind::Ident => !is_keyword(token.text(code)) || is_value_keyword(token.text(code)),
        Kind::Symbol => matches!(token.text(code), "(" | "[" | "-" | "!" | "#{" | "|" | ".."),
        Kind::Comment | Kind::HashComment => false,
    }
}

/// Rhai's statement and operator keywords (not names a value can have).
pub fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "let"
            | "const"
            | "fn"
            | "if"
            | "else"
            | "while"
            | "loop"
            | "for"
            | "in"
            | "do"
            | "until"
            | "break"
            | "continue"
            | "return"
            | "throw"
            | "try"
            | "catch"
            | "switch"
            | "import"
            | "export"
            | "as"
            | "private"
            | "global"
    )
}

fn is_value_keyword(word: &str) -> bool {
    matches!(word, "if" | "switch" | "fn")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(code: &str) -> Vec<(Kind, &str)> {
        lex(code).iter().map(|t| (t.kind, t.text(code))).collect()
    }

    #[test]
    fn strings_and_comments_are_single_tokens() {
        assert_eq!(
            kinds("x = \"a // b\" // c\n# d\n'ef'"),
            vec![
                (Kind::Ident, "x"),
                (Kind::Symbol, "="),
                (Kind::Str, "\"a // b\""),
                (Kind::Comment, "// c"),
                (Kind::HashComment, "# d"),
                (Kind::Quoted, "'ef'"),
            ]
        );
    }

    #[test]
    fn interpolations_are_code() {
        assert_eq!(
            kinds("`a ${torch.x + #{b: 1}.b} c`"),
            vec![
                (Kind::Backtick, "`a ${"),
                (Kind::Ident, "torch"),
                (Kind::Symbol, "."),
                (Kind::Ident, "x"),
                (Kind::Symbol, "+"),
                (Kind::Symbol, "#{"),
                (Kind::Ident, "b"),
                (Kind::Symbol, ":"),
                (Kind::Number, "1"),
                (Kind::Symbol, "}"),
                (Kind::Symbol, "."),
                (Kind::Ident, "b"),
                (Kind::Backtick, " c`"),
            ]
        );
    }

    #[test]
    fn numbers_stop_before_ranges_and_symbols_take_the_longest_match() {
        assert_eq!(
            kinds("1..=3 1.5e-3..x::y"),
            vec![
                (Kind::Number, "1"),
                (Kind::Symbol, "..="),
                (Kind::Number, "3"),
                (Kind::Number, "1.5e-3"),
                (Kind::Symbol, ".."),
                (Kind::Ident, "x"),
                (Kind::Symbol, "::"),
                (Kind::Ident, "y"),
            ]
        );
    }

    #[test]
    fn lines_are_counted_and_open_strings_end_at_the_line() {
        let code = "a\n\"open\nb /* x\n y */ c";
        let toks = lex(code);
        let lines: Vec<_> = toks.iter().map(|t| (t.text(code), t.line)).collect();
        assert_eq!(
            lines,
            vec![
                ("a", 0),
                ("\"open", 1),
                ("b", 2),
                ("/* x\n y */", 2),
                ("c", 3)
            ]
        );
    }
}
