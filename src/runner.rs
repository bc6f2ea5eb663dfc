//! `torchlet run`: run a script file, a snippet, or standard input, and report errors as FILE:LINE:COL.
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::rc::Rc;

use torchlet_session::{Session, SessionOptions, StdioFrontend};

/// How `torchlet run` runs a script.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep the per-line ledger and print it after the run.
    pub ledger: bool,
    /// Record memory history from the start and dump it here at the end (`--snapshot`).
    pub snapshot: Option<std::path::PathBuf>,
}

/// Run a file (or `code`, if given) to the end; exit code 1 on error.
pub fn run(
    file: Option<&Path>,
    code: Option<&str>,
    args: &[String],
    options: RunOptions,
) -> Result<ExitCode, String> {
    let (source_name, text) = match (code, file) {
        (Some(code), _) => ("<-e>".to_string(), code.to_string()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            (path.display().to_string(), text)
        }
        (None, None) => return Err("run: give a FILE or -e CODE".into()),
    };
    Ok(run_source(&source_name, &text, args, options))
}

/// Read all of standard input and run it as one script.
pub fn run_stdin() -> Result<ExitCode, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read standard input: {e}"))?;
    Ok(run_source("<stdin>", &text, &[], RunOptions::default()))
}

fn run_source(source_name: &str, text: &str, args: &[String], run: RunOptions) -> ExitCode {
    let options = SessionOptions {
        source_name: Some(source_name.to_string()),
        ..Default::default()
    };
    let mut session = Session::new(options, Rc::new(StdioFrontend));
    session.set_args(args);
    if let Some(path) = &run.snapshot {
        if let Err(e) = torchlet_session::snapshot_dump::record_everywhere() {
            eprintln!("torchlet: --snapshot {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    let outcome = if run.ledger {
        let (outcome, lines) = session.execute_with_ledger(text);
        let device = torchlet_session::current_device();
        println!("\nledger of {source_name} (cuda:{device}, bytes):");
        println!("{}", torchlet_session::ledger::table(&lines, text).plain);
        outcome
    } else {
        session.execute(text)
    };
    // Written also when the script failed: the snapshot then shows the memory up to the failure.
    let dumped = run.snapshot.as_deref().is_none_or(write_snapshot);
    let Some(error) = outcome.error else {
        return if dumped {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    };
    match error.system_exit() {
        Some((status, text)) => {
            if let Some(text) = text {
                eprintln!("{text}");
            }
            ExitCode::from(status)
        }
        None => {
            match error.traceback() {
                Some(traceback) => eprintln!("{traceback}"),
                None => eprintln!("{}", error.located()),
            }
            ExitCode::FAILURE
        }
    }
}

/// `--snapshot PATH`: dump every device's history; whether it was written (a message says if not).
pub fn write_snapshot(path: &Path) -> bool {
    match torchlet_session::snapshot_dump::dump(&path.to_string_lossy()) {
        Ok(events) => {
            eprintln!(
                "torchlet: wrote {} ({events} events) for PyTorch's memory viewer",
                path.display()
            );
            true
        }
        Err(e) => {
            eprintln!("torchlet: --snapshot: {e}");
            false
        }
    }
}
