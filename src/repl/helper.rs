//! The rustyline helper: Tab completion from the session, hints from history, dimmed hints.
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use rustyline::completion::{Completer, FilenameCompleter};
use rustyline::highlight::Highlighter;
use rustyline::hint::{Hinter, HistoryHinter};
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use torchlet_session::{command_with_argument, Completes, Session};

/// Completes against the live session; `pending` holds the lines of an unfinished input.
pub struct ReplHelper {
    session: Rc<RefCell<Session>>,
    pending: Rc<RefCell<String>>,
    hinter: HistoryHinter,
    files: FilenameCompleter,
}

impl ReplHelper {
    /// A helper over `session`, aware of the unfinished input in `pending`.
    pub fn new(session: Rc<RefCell<Session>>, pending: Rc<RefCell<String>>) -> Self {
        ReplHelper {
            session,
            pending,
            hinter: HistoryHinter::new(),
            files: FilenameCompleter::new(),
        }
    }
}

impl Completer for ReplHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let argument = command_with_argument(line).map(|c| c.completes);
        if argument == Some(Completes::FileNames) {
            let (start, found) = self.files.complete(line, pos, ctx)?;
            return Ok((start, found.into_iter().map(|p| p.replacement).collect()));
        }
        // Earlier lines of the input take part, so a variable or `fn` defined above completes.
        let pending = self.pending.borrow();
        let code = format!("{pending}{line}");
        let found = self.session.borrow().complete(&code, pending.len() + pos);
        let start = found.start.saturating_sub(pending.len());
        Ok((start, found.matches()))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, ctx: &Context<'_>) -> Option<String> {
        self.hinter.hint(line, pos, ctx)
    }
}

impl Highlighter for ReplHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
    }
}

/// Inputs are judged whole by the REPL loop, line by line, so rustyline validates nothing.
impl Validator for ReplHelper {}

impl Helper for ReplHelper {}
