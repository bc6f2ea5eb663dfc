//! Cells the kernel answers before Rhai sees them: `%magics` that mirror the REPL's commands, and `name?` help.
use std::time::{Duration, Instant};

use torchlet_session::{DisplayData, Outcome, Session, COMMANDS};

/// Run one cell: a magic, a help request, or Rhai code. The second value is text for the pager.
///
/// A magic is the first line of a cell, `%name args`, and runs the REPL's `:name args`; code on
/// the following lines then runs as usual, so `%trace on` can head the cell it traces.
pub fn run_cell(session: &mut Session, code: &str) -> (Outcome, Option<String>) {
    let trimmed = code.trim();
    let asked = session.help_query(trimmed).or_else(|| help_call(trimmed));
    if let Some(topic) = asked {
        // Variables are described with their type; names of the language by its own help.
        let text = match session.describe(&topic) {
            Some(text) if session.variable_names().contains(&topic) => text,
            _ => session.help_text(&topic),
        };
        return (ok(None), Some(text));
    }
    // `%%ledger` heads a cell whose whole body runs with the per-line ledger.
    if let Some(body) = trimmed.strip_prefix("%%ledger") {
        let body = body
            .trim_start_matches([' ', '\t'])
            .strip_prefix('\n')
            .unwrap_or(body);
        return (magic(session, "ledger", body), None);
    }
    let Some(line) = trimmed.strip_prefix('%') else {
        return (session.execute(code), None);
    };
    let (first, rest) = line.split_once('\n').unwrap_or((line, ""));
    let (name, args) = first.split_once(' ').unwrap_or((first, ""));
    let (name, args) = (name.trim(), args.trim());
    if name == "time" && !matches!(args, "on" | "off") {
        return (time(session, &format!("{args}\n{rest}")), None);
    }
    let mut outcome = magic(session, name, args);
    if name == "help" && args.is_empty() {
        if let Some(value) = outcome.value.as_mut() {
            value.plain = notebook_help(&value.plain);
        }
    }
    if rest.trim().is_empty() || outcome.error.is_some() {
        return (outcome, None);
    }
    if let Some(value) = &outcome.value {
        session.frontend().display(value);
    }
    (session.execute(rest), None)
}

/// The REPL commands that mean nothing in a notebook: its prompt, and leaving it.
const REPL_ONLY: [&str; 2] = ["prompt", "quit"];

/// `%help`'s index as a notebook has it: no REPL-only command, and the cell magics added.
fn notebook_help(index: &str) -> String {
    let mut out = String::new();
    for line in index.lines() {
        let command = line
            .trim_start()
            .strip_prefix('%')
            .and_then(|l| l.split(' ').next());
        if command.is_some_and(|c| REPL_ONLY.contains(&c)) {
            continue;
        }
        out += line;
        out.push('\n');
        if command == Some("ledger") {
            let usage = "%%ledger (first line)";
            out += &format!("  {usage:<22} run the rest of the cell with the per-line ledger\n");
        }
        if command == Some("time") {
            let usage = "%time CODE";
            out += &format!("  {usage:<22} run CODE and print its wall time\n");
        }
    }
    out.trim_end().to_string()
}

/// `%name args`: the REPL's `:name args`, with its messages speaking of `%` magics.
fn magic(session: &mut Session, name: &str, args: &str) -> Outcome {
    let mut outcome = session
        .run_command(&format!(":{name} {args}"))
        .unwrap_or_else(|| ok(None));
    if let Some(error) = outcome.error.as_mut() {
        error.message = as_magics(&error.message, name);
    }
    if let Some(value) = outcome.value.as_mut() {
        value.plain = as_magics(&value.plain, name);
    }
    outcome
}

/// Rewrite `:command` mentions as `%command` (the kernel's spelling).
fn as_magics(text: &str, name: &str) -> String {
    let mut text = text.replace(&format!("':{name}'"), &format!("'%{name}'"));
    for command in COMMANDS {
        text = text.replace(
            &format!(":{} ", command.name),
            &format!("%{} ", command.name),
        );
        text = text.replace(
            &format!(":{}\n", command.name),
            &format!("%{}\n", command.name),
        );
        if text.ends_with(&format!(":{}", command.name)) {
            text.truncate(text.len() - command.name.len() - 1);
            text.push_str(&format!("%{}", command.name));
        }
    }
    text
}

/// `%time CODE`: run the code and print its wall time, as IPython's `%time` does.
fn time(session: &mut Session, code: &str) -> Outcome {
    let started = Instant::now();
    let outcome = session.execute(code);
    session.frontend().stdout(&format!(
        "Wall time: {}\n",
        format_duration(started.elapsed())
    ));
    outcome
}

/// A cell that is only `help(name)`, `help("name")` or `help()` asks for the pager too.
fn help_call(cell: &str) -> Option<String> {
    let inner = cell
        .trim_end_matches(';')
        .trim_end()
        .strip_prefix("help(")?
        .strip_suffix(')')?
        .trim();
    if inner.starts_with('"') {
        return serde_json::from_str(inner).ok();
    }
    let name = inner
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '.'));
    name.then(|| inner.to_string())
}

fn ok(value: Option<DisplayData>) -> Outcome {
    Outcome {
        value,
        error: None,
        elapsed: Duration::ZERO,
    }
}

/// Wall time as `%time` prints it: µs, ms or s with three significant figures.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1e-3 {
        format!("{:.1} µs", secs * 1e6)
    } else if secs < 1.0 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{secs:.2} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_cell_help_calls_page() {
        assert_eq!(help_call("help(zeros)").as_deref(), Some("zeros"));
        assert_eq!(help_call("help(\"cuda\");").as_deref(), Some("cuda"));
        assert_eq!(help_call("help()").as_deref(), Some(""));
        assert_eq!(help_call("help(1 + 2)"), None);
        assert_eq!(help_call("let h = help(zeros)"), None);
    }

    #[test]
    fn command_mentions_become_magics() {
        assert_eq!(
            as_magics(
                "unknown command ':frob'; type :help to list the commands",
                "frob"
            ),
            "unknown command '%frob'; type %help to list the commands"
        );
        assert_eq!(
            as_magics(":trace takes on or off, e.g. :trace on", "trace"),
            "%trace takes on or off, e.g. %trace on"
        );
        assert_eq!(
            as_magics("see cuda::memory_allocated", "mem"),
            "see cuda::memory_allocated"
        );
    }

    #[test]
    fn help_in_a_notebook_lists_only_what_a_notebook_runs() {
        let (mut session, _) = Session::captured("<test>");
        let (outcome, _) = run_cell(&mut session, "%help");
        let text = outcome.value.expect("the index").plain;
        assert!(text.contains("  %mem "), "{text}");
        assert!(text.contains("  %%ledger "), "{text}");
        assert!(text.contains("  %time CODE "), "{text}");
        for repl_only in ["%prompt", "%quit", ":prompt", ":quit"] {
            assert!(!text.contains(repl_only), "{repl_only}: {text}");
        }
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(format_duration(Duration::from_micros(12)), "12.0 µs");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1.50 ms");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.50 s");
    }
}
