//! `torchlet python`: PyTorch programs in Python, as `python` runs them: a file
//! (`torchlet python FILE.py ARGS`, also `torchlet run FILE.py`), a snippet (`-c CODE`), or the
//! Python REPL, whose indented blocks continue until a blank line as in CPython's, with
//! torchlet's magics (`%mem`, `%vars`, `%holders`, `%why x`, `%trace on`, `%memplot on`; `%help` lists them).
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use torchlet_python::{Python, PythonError};

use crate::runner::RunOptions;
use torchlet_session::python_magics::{split_magics, PythonMagics};

/// Run `path` as `__main__` with `args` in `sys.argv`; exit code 1 (or `SystemExit`'s) on error.
/// `torchlet run`'s options apply: the per-line ledger printed after the run, the memory
/// history written for PyTorch's viewer (also when the program failed).
pub fn run_file(path: &Path, args: &[String], options: &RunOptions) -> Result<ExitCode, String> {
    let python = Python::new()?;
    if let Some(out) = &options.snapshot {
        torchlet_session::snapshot_dump::record_everywhere()
            .map_err(|e| format!("--snapshot {}: {e}", out.display()))?;
    }
    let name = path.display().to_string();
    let result = match options.ledger {
        true => {
            let device = torchlet_session::current_device();
            let (result, lines) = python.with_ledger(&name, device, || python.run_file(path, args));
            let text = std::fs::read_to_string(path).unwrap_or_default();
            println!("\nledger of {name} (cuda:{device}, bytes):");
            println!("{}", torchlet_session::ledger::table(&lines, &text).plain);
            result
        }
        false => python.run_file(path, args),
    };
    let dumped = options
        .snapshot
        .as_deref()
        .is_none_or(crate::runner::write_snapshot);
    let code = match (exit_code(result), dumped) {
        (code, true) => code,
        (_, false) => ExitCode::FAILURE,
    };
    eprint!("{}", torchlet_session::fit::estimate_note_now());
    Ok(code)
}

/// Run one snippet (`-c CODE`).
pub fn run_code(code: &str) -> Result<ExitCode, String> {
    let python = Python::new()?;
    Ok(exit_code(python.run_source(code, "<string>", false)))
}

/// The Python REPL until Ctrl-D or `exit()`; standard input that is not a terminal runs as a file.
pub fn repl() -> Result<ExitCode, String> {
    let python = Python::new()?;
    if !std::io::stdin().is_terminal() {
        let mut code = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut code)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        return Ok(exit_code(python.run_source(&code, "<stdin>", false)));
    }
    let mut editor =
        DefaultEditor::new().map_err(|e| format!("cannot open the line editor: {e}"))?;
    println!(
        "torchlet {} — Python with PyTorch's memory. Ctrl-D exits.",
        env!("CARGO_PKG_VERSION")
    );
    let mut pending = String::new();
    let mut magics = PythonMagics::default();
    loop {
        let prompt = if pending.is_empty() { ">>> " } else { "... " };
        match editor.readline(prompt) {
            Ok(line) => {
                pending.push_str(&line);
                pending.push('\n');
                if python.needs_more(&pending) {
                    continue;
                }
                let _ = editor.add_history_entry(pending.trim_end());
                let input = std::mem::take(&mut pending);
                if let Some(status) = run_input(&python, &mut magics, &input) {
                    return Ok(ExitCode::from(status as u8));
                }
            }
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                println!("KeyboardInterrupt");
            }
            Err(ReadlineError::Eof) => return Ok(ExitCode::SUCCESS),
            Err(e) => return Err(format!("cannot read a line: {e}")),
        }
    }
}

/// Run one REPL input: its leading magics (`%mem`), then its Python, with what `%trace on` and
/// `%time on` print after it; `Some(status)` when it raised `SystemExit`.
fn run_input(python: &Python, magics: &mut PythonMagics, input: &str) -> Option<u32> {
    let (lines, code) = split_magics(input);
    for line in lines {
        match magics.run(python, line) {
            Ok(shown) => println!("{}", shown.plain),
            Err(refusal) => eprintln!("{refusal}"),
        }
    }
    if code.trim().is_empty() {
        return None;
    }
    let before = magics.before_input();
    let started = std::time::Instant::now();
    let result = python.run_source(&code, "<stdin>", true);
    let after = magics.after_input(before, started.elapsed());
    for line in after.lines {
        println!("{line}");
    }
    if let Some(picture) = after.picture {
        println!("{}", picture.plain);
    }
    match result {
        Err(error) if error.exit_status.is_some() => error.exit_status,
        Err(error) => {
            eprintln!("{}", error.traceback);
            None
        }
        Ok(()) => None,
    }
}

/// `torchlet fit FILE.py` in a child: run the program once on the devices `fit` set up and
/// report its peaks, with where it stopped when it failed (the innermost line of the program's
/// own file in the traceback).
pub fn fit_run(path: &Path, args: &[String]) -> Result<serde_json::Value, String> {
    let started = std::time::Instant::now();
    let python = Python::new()?;
    let error = match python.run_file(path, args) {
        Ok(())
        | Err(PythonError {
            exit_status: Some(0),
            ..
        }) => None,
        Err(e) => Some(serde_json::json!({
            "kind": e.kind,
            "message": e.message,
            "at": innermost_site(&e.traceback, path),
            "oom": e.kind == "OutOfMemoryError",
        })),
    };
    let report = torchlet_session::fit::report(started, error);
    drop(python);
    Ok(report)
}

/// `FILE:LINE` of the last traceback frame outside torchlet's own `torch` package (the program's
/// innermost line), else `FILE:0`.
fn innermost_site(traceback: &str, path: &Path) -> String {
    let site = traceback
        .lines()
        .filter_map(|l| l.trim().strip_prefix("File \""))
        .filter(|l| !l.starts_with("<torchlet>"))
        .filter_map(|l| {
            let (file, rest) = l.split_once("\", line ")?;
            let line: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            Some(format!("{file}:{line}"))
        })
        .last();
    site.unwrap_or_else(|| format!("{}:0", path.display()))
}

/// The process's exit code for how a run ended, the traceback printed when it failed.
fn exit_code(result: Result<(), PythonError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(PythonError {
            exit_status: Some(status),
            ..
        }) => ExitCode::from(status as u8),
        Err(error) => {
            eprintln!("{}", error.traceback);
            ExitCode::FAILURE
        }
    }
}
