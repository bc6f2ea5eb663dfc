//! Tracebacks: where an error happened, call by call, as Python prints them.
use std::collections::HashMap;

use rhai::{EvalAltResult, Position};

/// One call in a traceback: `FILE:LINE:COL in NAME`.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// The function's name, `<module>` for the input itself.
    pub name: String,
    /// The source the frame's text came from (a file, a cell), when it has a name.
    pub source: Option<String>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The text of that line.
    pub source_line: Option<String>,
}

impl Frame {
    /// `FILE:LINE:COL in NAME`.
    pub fn location(&self) -> String {
        let file = self.source.as_deref().unwrap_or("<input>");
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("{file}:{l}:{c} in {}", self.name),
            (Some(l), None) => format!("{file}:{l} in {}", self.name),
            _ => format!("{file} in {}", self.name),
        }
    }

    /// The frame's line, without its indentation as Python prints it, with a caret under the
    /// column, when both are known.
    pub fn caret(&self) -> Option<String> {
        let text = self.source_line.as_ref()?;
        let col = self.column?;
        let trimmed = text.trim_start();
        let indent = text.chars().count() - trimmed.chars().count();
        let pad = " ".repeat(col.saturating_sub(1).saturating_sub(indent));
        Some(format!("{trimmed}\n{pad}^"))
    }
}

/// Where each script function was defined: the source's name and its whole text.
#[derive(Clone, Debug, Default)]
pub struct FunctionSources(HashMap<String, (Option<String>, String)>);

impl FunctionSources {
    /// Remember that the functions of `ast` were defined in `code`.
    pub fn record(&mut self, ast: &rhai::AST, source: Option<&str>, code: &str) {
        for f in ast.iter_functions() {
            self.0.insert(
                f.name.to_string(),
                (source.map(str::to_string), code.to_string()),
            );
        }
    }

    /// Forget every function.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// The frames of a run-time error, outermost first; one frame when it did not happen in a call.
pub fn frames(
    error: &EvalAltResult,
    code: &str,
    source: Option<&str>,
    functions: &FunctionSources,
) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut name = "<module>".to_string();
    let mut text = (source.map(str::to_string), code.to_string());
    let mut error = error;
    loop {
        match error {
            EvalAltResult::ErrorInFunctionCall(callee, _, inner, pos) => {
                frames.push(frame(&name, &text, *pos));
                name = callee.clone();
                text = functions
                    .0
                    .get(callee)
                    .cloned()
                    .unwrap_or((None, String::new()));
                error = inner;
            }
            EvalAltResult::ErrorInModule(_, inner, _) => error = inner,
            innermost => {
                frames.push(frame(&name, &text, innermost.position()));
                return frames;
            }
        }
    }
}

fn frame(name: &str, (source, code): &(Option<String>, String), pos: Position) -> Frame {
    let line = pos.line();
    Frame {
        name: name.to_string(),
        source: source.clone(),
        line,
        column: pos.position(),
        source_line: line
            .and_then(|l| code.lines().nth(l - 1))
            .map(str::to_string),
    }
}
