//! The language a kernel speaks, Rhai (a `Session`) or Python, as one interface the shell asks.
use serde_json::Value;

use super::{debugger, introspect, magics};
use torchlet_session::{Completeness, Completion, Outcome, Session};

/// Which language the kernel runs, chosen by its kernelspec (`--language`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LanguageKind {
    /// torchlet's Rhai language: the article scripts, magics, the variables panel.
    #[default]
    Rhai,
    /// PyTorch programs as written, on torchlet's Python.
    Python,
}

/// What running one cell gave, besides what it published while it ran.
pub struct Ran {
    /// Its value and error.
    pub outcome: Outcome,
    /// Text for the pager (`name?`), if the cell asked for help.
    pub page: Option<String>,
    /// The error's traceback lines as the language writes them, when it writes its own
    /// (Python's); `None` lets the kernel write one from the error's place.
    pub traceback: Option<Vec<String>>,
}

/// What the kernel asks of the language, on the interpreter thread.
pub trait Language {
    /// Run `code` as cell `In[count]`.
    fn run_cell(&mut self, code: &str, count: usize) -> Ran;
    /// Evaluate one expression for its value alone (a request's user_expressions).
    fn evaluate(&mut self, expression: &str) -> Outcome;
    /// Completion candidates for the word ending at byte `cursor`.
    fn complete(&self, code: &str, cursor: usize) -> Completion;
    /// Help on the name at byte `cursor` (inspect_request), if it names something.
    fn inspect(&self, code: &str, cursor: usize) -> Option<String>;
    /// Whether `code` runs as it stands, needs more lines, or never will.
    fn is_complete(&self, code: &str) -> Completeness;
    /// The debugger's variables requests (`inspectVariables`, `variables`, `richInspectVariables`).
    fn variables(&self, command: &str, arguments: &Value) -> Result<Value, String>;
}

impl Language for Session {
    fn run_cell(&mut self, code: &str, count: usize) -> Ran {
        self.set_source_name(&format!("In[{count}]"));
        let (outcome, page) = magics::run_cell(self, code);
        Ran {
            outcome,
            page,
            traceback: None,
        }
    }

    fn evaluate(&mut self, expression: &str) -> Outcome {
        self.execute(expression)
    }

    fn complete(&self, code: &str, cursor: usize) -> Completion {
        introspect::complete(self, code, cursor)
    }

    fn inspect(&self, code: &str, cursor: usize) -> Option<String> {
        introspect::inspect(self, code, cursor)
    }

    fn is_complete(&self, code: &str) -> Completeness {
        Session::is_complete(self, code)
    }

    fn variables(&self, command: &str, arguments: &Value) -> Result<Value, String> {
        debugger::vars_answer(self, command, arguments)
    }
}
