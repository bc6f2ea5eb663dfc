//! Ctrl-C while code runs: a SIGINT handler that asks the session to stop.
use torchlet_session::InterruptHandle;

/// Route SIGINT to `handle` for the rest of the process.
///
/// At the prompt rustyline keeps the terminal raw, so Ctrl-C arrives as a key (clearing the
/// line) and never as a signal; only while code runs does the terminal turn it into SIGINT.
pub fn install(handle: InterruptHandle) -> Result<(), String> {
    ctrlc::set_handler(move || handle.interrupt())
        .map_err(|e| format!("Ctrl-C will not interrupt running code: {e}"))
}
