//! How the REPL shows an outcome: the value in PyTorch's format, an error under a caret.
use torchlet_session::{Outcome, ScriptError};

/// Print the value to stdout, or the error (with its caret) to stderr.
pub fn show(outcome: &Outcome, multiline: bool) {
    if let Some(value) = &outcome.value {
        println!("{}", value.plain);
    }
    if let Some(error) = &outcome.error {
        eprintln!("{}", error_text(error, multiline));
    }
}

/// The offending line with a caret under the position, then `Kind: message`.
pub fn error_text(error: &ScriptError, multiline: bool) -> String {
    if let Some(traceback) = error.traceback() {
        return traceback;
    }
    let mut text = String::new();
    if let Some(caret) = error.caret() {
        if let (true, Some(line), None) = (multiline, error.line, &error.source) {
            text += &format!("  line {line}:\n");
        }
        if let (Some(source), Some(line)) = (&error.source, error.line) {
            text += &format!("  {source}, line {line}:\n");
        }
        for l in caret.lines() {
            text += &format!("    {l}\n");
        }
    }
    text.push_str(&error.to_string());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(source: Option<&str>) -> ScriptError {
        ScriptError {
            kind: "SyntaxError".into(),
            message: "Unexpected ')'".into(),
            source: source.map(str::to_string),
            line: Some(2),
            column: Some(9),
            source_line: Some("let y = )".into()),
            frames: Vec::new(),
            hint: None,
        }
    }

    #[test]
    fn caret_sits_under_the_column() {
        let text = error_text(&error(None), false);
        assert_eq!(
            text,
            "    let y = )\n            ^\nSyntaxError: Unexpected ')'"
        );
    }

    #[test]
    fn multiline_inputs_and_files_name_the_line() {
        assert!(error_text(&error(None), true).starts_with("  line 2:\n"));
        let text = error_text(&error(Some("a.rhai")), false);
        assert!(text.starts_with("  a.rhai, line 2:\n"), "{text}");
    }
}
