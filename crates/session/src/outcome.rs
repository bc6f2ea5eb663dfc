//! What one `execute` gives back: the value to echo, or an error with its position.
use std::time::Duration;

use rhai::{EvalAltResult, ParseError, ParseErrorType, Position};

use super::traceback::{Frame, FunctionSources};
use torchlet_rhai::DisplayData;

/// The result of running one input.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The value of the last expression, unless it was `()`.
    pub value: Option<DisplayData>,
    /// Why the input failed, if it did.
    pub error: Option<ScriptError>,
    /// Wall time spent running.
    pub elapsed: Duration,
}

/// A failure with a PyTorch-like name, a message and, when known, where in the input it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptError {
    /// The error's kind, as Python would name it: `SyntaxError`, `NameError`, `RuntimeError`,
    /// `OutOfMemoryError`, `KeyboardInterrupt`.
    pub kind: String,
    /// What went wrong and what to do.
    pub message: String,
    /// Name of the source (file or cell), when there is one.
    pub source: Option<String>,
    /// 1-based line and column.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// The text of the offending line.
    pub source_line: Option<String>,
    /// The calls the error passed through, outermost first, when it happened inside a function
    /// (empty otherwise); `line`, `column` and `source_line` are the outermost frame's.
    pub frames: Vec<Frame>,
    /// What to type instead (the torchlet spelling of a Python habit, or a close name), shown on
    /// a `hint:` line after the message.
    pub hint: Option<String>,
}

impl ScriptError {
    fn at(kind: &str, message: String, pos: Position, code: &str, source: Option<&str>) -> Self {
        let line = pos.line();
        ScriptError {
            kind: kind.to_string(),
            message,
            source: source.map(str::to_string),
            line,
            column: pos.position(),
            source_line: line
                .and_then(|l| code.lines().nth(l - 1))
                .map(str::to_string),
            frames: Vec::new(),
            hint: None,
        }
    }

    /// An error with no position in the input (a command's, or torchlet's own).
    pub fn unplaced(kind: &str, message: String) -> Self {
        ScriptError {
            kind: kind.into(),
            message,
            source: None,
            line: None,
            column: None,
            source_line: None,
            frames: Vec::new(),
            hint: None,
        }
    }

    /// torchlet failing inside itself (a panic: a bug) while it ran an input; `what` is the panic's
    /// text.
    pub fn internal(what: &str) -> Self {
        Self::unplaced(
            "InternalError",
            format!(
                "torchlet failed inside itself while running this input ({what}); this is a bug, \
                 please report it. The session goes on, with the variables made before this input."
            ),
        )
    }

    /// A parse error of `code`.
    pub fn from_parse(error: &ParseError, code: &str, source: Option<&str>) -> Self {
        let mut message = error.err_type().to_string();
        if message.contains("'?'") {
            message += "; `name?` asks for help only as a whole input: write help(\"name\") here";
        }
        Self::at("SyntaxError", message, error.position(), code, source)
    }

    /// A run-time error of `code`; `functions` says where the functions it passed through live.
    pub fn from_eval(
        error: &EvalAltResult,
        code: &str,
        source: Option<&str>,
        functions: &FunctionSources,
    ) -> Self {
        let (mut kind, mut message) = torchlet_rhai::describe_error(error);
        let frames = super::traceback::frames(error, code, source, functions);
        // Rhai reports `f(t)` and `t.f()` alike; only the source tells a call from a method call.
        if let Some(name) = message.strip_prefix("'Tensor' object has no attribute '") {
            let innermost = frames.last();
            let line = innermost.and_then(|f| f.source_line.as_deref());
            let column = innermost.and_then(|f| f.column);
            if !after_dot(line, column) {
                kind = "NameError".into();
                message = format!("name '{}' is not defined", name.trim_end_matches('\''));
            }
        }
        let mut error_at = Self::at(&kind, message, error.position(), code, source);
        if frames.len() > 1 {
            error_at.frames = frames;
        }
        error_at
    }

    /// This error placed at `statement` (line, column of `code`) when it has no place of its own.
    pub fn or_at(mut self, statement: Option<(usize, usize)>, code: &str) -> Self {
        if let (None, Some((line, column))) = (self.line, statement) {
            self.line = Some(line);
            self.column = Some(column);
            self.source_line = code.lines().nth(line.saturating_sub(1)).map(str::to_string);
        }
        self
    }

    /// Python's traceback, innermost call last, then `Kind: message`; `None` when the error did
    /// not happen inside a function.
    pub fn traceback(&self) -> Option<String> {
        if self.frames.is_empty() {
            return None;
        }
        let mut text = String::from("Traceback (most recent call last):\n");
        for frame in &self.frames {
            text += &format!("  {}\n", frame.location());
            if let Some(caret) = frame.caret() {
                for line in caret.lines() {
                    text += &format!("    {line}\n");
                }
            }
        }
        text += &self.to_string();
        Some(text)
    }

    /// `FILE:LINE:COL: message`, as the script runner prints it.
    pub fn located(&self) -> String {
        let name = self.source.as_deref().unwrap_or("<input>");
        let place = match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{name}:{l}:{c}"),
            (Some(l), None) => format!("{name}:{l}"),
            _ => name.to_string(),
        };
        format!("{place}: {self}")
    }

    /// The `hint:` line, when there is a hint.
    pub fn hint_line(&self) -> Option<String> {
        self.hint.as_ref().map(|h| format!("hint: {h}"))
    }

    /// For `exit()`/`quit()` (Python's `SystemExit`): the status the process ends with, and text
    /// to print first (`exit("why")` prints it and ends with 1, as Python does).
    pub fn system_exit(&self) -> Option<(u8, Option<&str>)> {
        if self.kind != "SystemExit" {
            return None;
        }
        let text = self.message.trim();
        Some(match text.parse::<i64>() {
            _ if text.is_empty() => (0, None),
            Ok(code) => ((code & 0xff) as u8, None),
            Err(_) => (1, Some(text)),
        })
    }

    /// The offending line with a caret under the column, when both are known.
    pub fn caret(&self) -> Option<String> {
        let text = self.source_line.as_ref()?;
        let col = self.column?;
        Some(format!("{text}\n{}^", " ".repeat(col.saturating_sub(1))))
    }
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        match self.hint_line() {
            Some(hint) => write!(f, "\n{hint}"),
            None => Ok(()),
        }
    }
}

/// Whether the text before `column` of `line` ends with a `.` (a method call or property access).
fn after_dot(line: Option<&str>, column: Option<usize>) -> bool {
    let (Some(text), Some(column)) = (line, column) else {
        return false;
    };
    let before: String = text.chars().take(column.saturating_sub(1)).collect();
    before.trim_end().ends_with('.')
}

/// Whether an input is ready to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completeness {
    /// It parses: run it.
    Complete,
    /// It could parse once more lines arrive.
    Incomplete,
    /// No continuation can make it parse.
    Invalid,
}

/// Parse errors that more input could cure: `code` ended inside something still open.
///
/// The parser reports such errors where it met the end of the input, so an error anywhere before
/// the end (say `f(1))`) can never be cured by typing more, and is reported at once.
pub(crate) fn is_incomplete(error: &ParseError, code: &str) -> bool {
    match error.err_type() {
        ParseErrorType::UnexpectedEOF => true,
        ParseErrorType::BadInput(rhai::LexError::UnterminatedString) => {
            open_string_continues(error.position(), code)
        }
        ParseErrorType::BadInput(_) => false,
        _ => error.position().is_none() || at_end(error.position(), code),
    }
}

/// Whether `pos` lies at the end of `code`, past trailing blanks and `//` comments.
fn at_end(pos: Position, code: &str) -> bool {
    byte_offset(pos, code).is_some_and(|at| only_blanks_and_comments(&code[at..]))
}

/// Whether the string opened at `pos` may go on on the next line: a back-tick string always may,
/// a `"` string only after a line-continuation `\` (a bare line break inside it is an error).
fn open_string_continues(pos: Position, code: &str) -> bool {
    let Some(at) = byte_offset(pos, code) else {
        return false;
    };
    let rest = &code[at..];
    if rest.starts_with('`') {
        return true;
    }
    rest.starts_with('"') && !rest.contains('\n') && rest.ends_with('\\')
}

/// The byte offset of a 1-based line/column position (columns count characters), if inside `code`.
fn byte_offset(pos: Position, code: &str) -> Option<usize> {
    let (line, column) = (pos.line()?, pos.position().unwrap_or(1));
    let mut start = 0;
    for _ in 1..line {
        start += code[start..].find('\n')? + 1;
    }
    let text = &code[start..];
    let text = &text[..text.find('\n').unwrap_or(text.len())];
    match text.char_indices().nth(column - 1) {
        Some((i, _)) => Some(start + i),
        None => Some(start + text.len()),
    }
}

fn only_blanks_and_comments(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|line| line.is_empty() || line.starts_with("//"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(code: &str) -> &'static str {
        match rhai::Engine::new().compile(code) {
            Ok(_) => "complete",
            Err(e) if is_incomplete(&e, code) => "incomplete",
            Err(_) => "invalid",
        }
    }

    #[test]
    fn open_constructs_wait_for_more_lines() {
        for code in [
            "let x = ",
            "1 +\n",
            "fn f(a) {",
            "fn f(a) {\n  a + 1",
            "if x {\n",
            "[1, 2",
            "#{a: 1,",
            "foo(1,",
            "let x = (1",
            "x[1",
            "while true",
            "if x { 1 } else",
            "let s = `abc",
            "let s = \"abc\\",
            "x.",
            "let x = 1 +  // more to come",
        ] {
            assert_eq!(verdict(code), "incomplete", "{code:?}");
        }
    }

    #[test]
    fn errors_before_the_end_are_reported_at_once() {
        for code in [
            "let x = )",
            "x = 1 1",
            "f(1))",
            "foo(1 2",
            "1 ++",
            "let x = 1;\nlet y = )\nfoo(",
            "let s = \"abc",
            "x = '",
            "let = 3",
        ] {
            assert_eq!(verdict(code), "invalid", "{code:?}");
        }
    }

    #[test]
    fn byte_offsets_count_characters_and_lines() {
        let code = "é = 1\nab";
        assert_eq!(byte_offset(Position::new(1, 2), code), Some(2));
        assert_eq!(byte_offset(Position::new(2, 3), code), Some(code.len()));
        assert_eq!(byte_offset(Position::new(3, 1), code), None);
        assert_eq!(byte_offset(Position::new(2, 1), "a\n"), Some(2));
    }
}
