//! The interactive line REPL (rustyline) over a `Session`.
//!
//! Map: this file reads lines and runs them; `prompt` (`>>> `, `... `, memory with `:prompt
//! mem`), `helper` (rustyline's completion from the session and hints from history), `echo`
//! (an outcome as the REPL shows it: PyTorch's format, an error under a caret), `history` (where
//! the history file lives), `interrupt` (Ctrl-C asks the session to stop).
mod echo;
mod helper;
mod history;
mod interrupt;
mod prompt;

use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};

use helper::ReplHelper;
use torchlet_session::{
    is_command, Action, Completeness, Reply, Session, SessionOptions, StdioFrontend,
};

/// Run the REPL until Ctrl-D or `:quit`; when stdin is not a terminal, run it as a script.
pub fn run() -> Result<ExitCode, String> {
    if !std::io::stdin().is_terminal() {
        return crate::runner::run_stdin();
    }
    Repl::new()?.run()
}

/// What one read of a whole input gave.
enum Read {
    /// A complete (or hopeless) input to run.
    Input(String),
    /// Ctrl-C: the input was dropped.
    Cancelled,
    /// Ctrl-D on an empty line.
    End,
}

struct Repl {
    session: Rc<RefCell<Session>>,
    /// Lines typed so far of an input that does not parse yet.
    pending: Rc<RefCell<String>>,
    editor: Editor<ReplHelper, FileHistory>,
    history: Option<PathBuf>,
    prompt_memory: bool,
    /// The status `exit(n)` asked for.
    status: u8,
}

impl Repl {
    fn new() -> Result<Repl, String> {
        let options = SessionOptions::default();
        let session = Rc::new(RefCell::new(Session::new(options, Rc::new(StdioFrontend))));
        if let Err(why) = interrupt::install(session.borrow().interrupt_handle()) {
            eprintln!("torchlet: {why}");
        }
        let config = Config::builder()
            .max_history_size(10_000)
            .and_then(|c| c.history_ignore_dups(true))
            .map_err(|e| format!("cannot configure the line editor: {e}"))?
            // Continuation lines are indented; they belong in the history like any other.
            .history_ignore_space(false)
            .auto_add_history(false)
            .completion_type(CompletionType::List)
            .build();
        let mut editor =
            Editor::with_config(config).map_err(|e| format!("cannot open the line editor: {e}"))?;
        let pending = Rc::new(RefCell::new(String::new()));
        editor.set_helper(Some(ReplHelper::new(session.clone(), pending.clone())));
        let history = history::path();
        if let Some(path) = &history {
            match history::prepare(path) {
                // A missing file is a first start, not an error.
                Ok(()) => drop(editor.load_history(path)),
                Err(why) => eprintln!("torchlet: {why}"),
            }
        }
        Ok(Repl {
            session,
            pending,
            editor,
            history,
            prompt_memory: false,
            status: 0,
        })
    }

    fn run(mut self) -> Result<ExitCode, String> {
        println!(
            "torchlet {} — :help lists commands and functions, Ctrl-D quits",
            env!("CARGO_PKG_VERSION")
        );
        loop {
            let input = match self.read_input()? {
                Read::Input(input) => input,
                Read::Cancelled => continue,
                Read::End => break,
            };
            if !self.handle(&input) {
                break;
            }
        }
        Ok(ExitCode::from(self.status))
    }

    /// Read lines until they make a whole input: one that parses, or one that never can.
    fn read_input(&mut self) -> Result<Read, String> {
        self.pending.borrow_mut().clear();
        let mut blank_lines = 0;
        loop {
            let prompt = if self.pending.borrow().is_empty() {
                prompt::first(self.prompt_memory)
            } else {
                prompt::MORE.to_string()
            };
            let line = match self.editor.readline(&prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => return Ok(Read::Cancelled),
                Err(ReadlineError::Eof) if self.pending.borrow().is_empty() => {
                    return Ok(Read::End)
                }
                Err(ReadlineError::Eof) => return Ok(Read::Cancelled),
                Err(e) => return Err(format!("cannot read the terminal: {e}")),
            };
            self.remember(&line);
            let mut pending = self.pending.borrow_mut();
            if pending.is_empty() && (line.trim().is_empty() || is_command(&line)) {
                return Ok(Read::Input(line));
            }
            pending.push_str(&line);
            pending.push('\n');
            // Two blank lines run an unfinished input anyway, so its error shows.
            blank_lines = if line.trim().is_empty() {
                blank_lines + 1
            } else {
                0
            };
            let whole = self.session.borrow().is_complete(&pending);
            if whole != Completeness::Incomplete || blank_lines >= 2 {
                return Ok(Read::Input(std::mem::take(&mut *pending)));
            }
        }
    }

    /// Add a line to the history and append it to the file at once, so a crash loses nothing.
    fn remember(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let _ = self.editor.add_history_entry(line);
        if let Some(path) = &self.history {
            let _ = self.editor.append_history(path);
        }
    }

    /// Run one input; `false` when the REPL should end.
    fn handle(&mut self, input: &str) -> bool {
        let text = input.trim();
        if text.is_empty() {
            return true;
        }
        let reply = self.session.borrow_mut().command(text);
        let outcome = match reply {
            Some(Reply::Show(outcome)) => outcome,
            Some(Reply::Act(action)) => return self.act(action),
            None => self.session.borrow_mut().execute(input),
        };
        if let Some((status, why)) = outcome.error.as_ref().and_then(|e| e.system_exit()) {
            if let Some(why) = why {
                eprintln!("{why}");
            }
            self.status = status;
            return false;
        }
        echo::show(&outcome, text.contains('\n'));
        true
    }

    /// Carry out what a command asked of the terminal; `false` when the REPL should end.
    fn act(&mut self, action: Action) -> bool {
        match action {
            Action::Quit => false,
            Action::PromptMemory(on) => {
                self.prompt_memory = on;
                true
            }
        }
    }
}
