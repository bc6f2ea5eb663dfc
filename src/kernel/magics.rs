//! Cells the kernel answers before Rhai sees them: `%magics` that mirror the REPL's commands, and `name?` help.
use std::cell::Cell;
use std::time::{Duration, Instant};

use super::introspect;
use crate::script::output;
use crate::session::{DisplayData, Outcome, ScriptError, Session};

thread_local! {
    /// `%time on`: report each cell's wall time after it runs.
    static TIMING: Cell<bool> = const { Cell::new(false) };
}

/// Run one cell: a magic, a help request, or Rhai code. The second value is text for the pager.
pub fn run_cell(session: &mut Session, code: &str) -> (Outcome, Option<String>) {
    let trimmed = code.trim();
    if let Some(topic) = help_request(trimmed) {
        // Variables are described by the kernel; names of the language by its own help.
        let text = match introspect::help(session, &topic) {
            Some(text) if session.variable_names().contains(&topic) => text,
            _ => output::help_text(&topic),
        };
        return (ok(None, Duration::ZERO), Some(text));
    }
    if let Some(line) = trimmed.strip_prefix('%') {
        let (first, rest) = line.split_once('\n').unwrap_or((line, ""));
        let (name, args) = first.split_once(' ').unwrap_or((first, ""));
        return (magic(session, name.trim(), args.trim(), rest), None);
    }
    let outcome = session.execute(code);
    if TIMING.with(Cell::get) {
        session.frontend().stdout(&format!(
            "Wall time: {}\n",
            format_duration(outcome.elapsed)
        ));
    }
    (outcome, None)
}

/// `name?` or `?name` asks for help on `name` (as the language's help rewrite reads it).
fn help_request(cell: &str) -> Option<String> {
    let call = output::rewrite_help_query(cell)?;
    let quoted = call.strip_prefix("help(")?.strip_suffix(')')?;
    serde_json::from_str(quoted).ok()
}

fn ok(value: Option<DisplayData>, elapsed: Duration) -> Outcome {
    Outcome {
        value,
        error: None,
        elapsed,
    }
}

fn failed(message: String) -> Outcome {
    Outcome {
        value: None,
        error: Some(ScriptError {
            kind: "UsageError".into(),
            message,
            source: None,
            line: None,
            column: None,
            source_line: None,
        }),
        elapsed: Duration::ZERO,
    }
}

const MAGICS_HELP: &str = "%vars (variables), %time on|off or %time CODE (wall time)";

fn magic(session: &mut Session, name: &str, args: &str, body: &str) -> Outcome {
    match name {
        "vars" => ok(Some(vars_table(session)), Duration::ZERO),
        "time" => match args {
            "on" | "off" if body.trim().is_empty() => {
                TIMING.with(|t| t.set(args == "on"));
                ok(None, Duration::ZERO)
            }
            _ => {
                let code = format!("{args}\n{body}");
                let started = Instant::now();
                let outcome = session.execute(&code);
                session.frontend().stdout(&format!(
                    "Wall time: {}\n",
                    format_duration(started.elapsed())
                ));
                outcome
            }
        },
        _ => failed(format!(
            "unknown magic %{name}; the kernel knows {MAGICS_HELP}"
        )),
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The variables in scope as plain text and as an HTML table.
fn vars_table(session: &Session) -> DisplayData {
    let mut rows = Vec::new();
    for name in session.variable_names() {
        let Some(value) = session.scope().get(&name) else {
            continue;
        };
        let type_name = session
            .engine()
            .map_type_name(value.type_name())
            .to_string();
        let shown = DisplayData::of_value(value).map_or("()".to_string(), |d| d.plain);
        let mut first = shown.lines().next().unwrap_or("").to_string();
        if first.chars().count() > 60 || shown.lines().count() > 1 {
            first = first.chars().take(57).collect::<String>() + "...";
        }
        rows.push((name, type_name, first));
    }
    if rows.is_empty() {
        return DisplayData {
            plain: "No variables defined.".into(),
            html: Some("<p>No variables defined.</p>".into()),
        };
    }
    let mut plain = String::from("name\ttype\tvalue\n");
    let mut html = String::from(
        "<table><thead><tr><th>name</th><th>type</th><th>value</th></tr></thead><tbody>",
    );
    for (name, type_name, value) in &rows {
        plain.push_str(&format!("{name}\t{type_name}\t{value}\n"));
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(name),
            escape(type_name),
            escape(value)
        ));
    }
    html.push_str("</tbody></table>");
    DisplayData {
        plain: plain.trim_end().to_string(),
        html: Some(html),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_requests_are_single_names() {
        assert_eq!(help_request("zeros?"), Some("zeros"));
        assert_eq!(
            help_request("?cuda::empty_cache"),
            Some("cuda::empty_cache")
        );
        assert_eq!(help_request("a + b?"), None);
        assert_eq!(help_request("?"), None);
    }

    #[test]
    fn durations_pick_a_unit() {
        assert_eq!(format_duration(Duration::from_micros(12)), "12.0 µs");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1.50 ms");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.50 s");
    }
}
