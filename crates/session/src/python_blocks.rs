//! A Python block typed into the Rhai language (`with torch.no_grad():` and its body): refused whole, and the indented inputs after a refused header refused too.
//!
//! Note [Python blocks]: Rhai cannot parse a `:` block, and a front end that ran the header's
//! error and then the indented lines one by one would run the body outside the block (under
//! grad, say) without a word. So a front end reads the body with the header (`is_complete` says
//! `Incomplete` until a blank or unindented line), the whole input is refused with the Rhai
//! spelling and the Python front end named, and an indented input right after a refused block
//! (a notebook's next cell, a paste the front end split) is refused as its body.
use super::ScriptError;
use torchlet_rhai::source::hints;

/// How a Python block runs as written: the Python front end.
const AS_PYTHON: &str =
    "Python runs as written with torchlet run FILE.py, or in the Python REPL: torchlet python";

/// The block refused last: its header and hint, until an unindented input arrives.
#[derive(Default)]
pub(crate) struct RefusedBlock(Option<(String, Option<String>)>);

impl RefusedBlock {
    /// Refuse `typed` when it is indented right after a refused block: it is that block's body.
    #[allow(clippy::result_large_err)] // as the session's `run`
    pub(crate) fn check(&mut self, typed: &str) -> Result<(), ScriptError> {
        let first = typed.lines().find(|l| !l.trim().is_empty());
        let indented = first.is_some_and(|l| l.starts_with([' ', '\t']));
        let Some((header, hint)) = self.0.as_ref().filter(|_| indented) else {
            self.0 = None;
            return Ok(());
        };
        let line = first.unwrap_or_default();
        let mut error = ScriptError::unplaced(
            "IndentationError",
            format!(
                "unexpected indent: this is the body of `{header}`, the Python block refused \
                 above, and it does not run outside that block"
            ),
        );
        error.line = Some(typed.lines().position(|l| l == line).unwrap_or(0) + 1);
        error.column = Some(line.len() - line.trim_start().len() + 1);
        error.source_line = Some(line.to_string());
        error.hint = Some(with_python(hint.as_deref()));
        Err(error)
    }

    /// `error` of `typed` as a refused Python block when `typed` opens one; remembers the block.
    pub(crate) fn refuse(&mut self, mut error: ScriptError, typed: &str) -> ScriptError {
        let block = hints::python_block(typed).filter(|_| error.kind == "SyntaxError");
        let Some((line, header)) = block else {
            self.0 = None;
            return error;
        };
        let text = typed.lines().nth(line).unwrap_or_default();
        error.message = format!(
            "`{header}` opens a Python block, which the Rhai language cannot run: \
             none of this input ran, its indented body included"
        );
        error.line = Some(line + 1);
        error.column = Some(text.len() - text.trim_start().len() + 1);
        error.source_line = Some(text.to_string());
        error.frames.clear();
        self.0 = Some((header, error.hint.clone()));
        error.hint = Some(with_python(error.hint.as_deref()));
        error
    }

    /// An input ran: no block is refused any more.
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }
}

/// The Rhai spelling (when there is one), then the Python front end.
fn with_python(hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{hint}; {AS_PYTHON}"),
        None => AS_PYTHON.to_string(),
    }
}
