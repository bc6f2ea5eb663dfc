//! The interactive line REPL (rustyline) over a `Session`.
use std::process::ExitCode;

/// Run the REPL until Ctrl-D or `:quit`; when stdin is not a terminal, run it as a script.
pub fn run() -> Result<ExitCode, String> {
    crate::runner::run_stdin()
}
