//! Wire forms of session results: kernel_info, MIME bundles, errors with tracebacks, cursors.
use jupyter_protocol::{
    CodeMirrorMode, DebugReply, DebugRequest, ErrorOutput, ExpressionResult, HelpLink,
    KernelInfoReply, LanguageInfo, Media, MediaType, ReplyStatus,
};

use super::language::LanguageKind;
use torchlet_session::{Candidate, DisplayData, Outcome, ScriptError};

/// The protocol version torchlet speaks (the messages of jupyter-protocol carry 5.3 headers).
pub const PROTOCOL_VERSION: &str = "5.3";

/// The kernel_info_reply: Rhai (files end in `.rhai`) or Python.
pub fn kernel_info(kind: LanguageKind) -> KernelInfoReply {
    let python = kind == LanguageKind::Python;
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: PROTOCOL_VERSION.into(),
        implementation: "torchlet".into(),
        implementation_version: env!("CARGO_PKG_VERSION").into(),
        language_info: if python {
            python_language()
        } else {
            rhai_language()
        },
        banner: if python {
            format!(
                "torchlet {}: PyTorch programs as written, on a CUDA caching allocator that \
                 reproduces PyTorch's memory numbers. `import torch` is torchlet's.",
                env!("CARGO_PKG_VERSION")
            )
        } else {
            format!(
                "torchlet {}: tensors in Rhai over a CUDA caching allocator that reproduces \
                 PyTorch's memory numbers. help(name) or name? for documentation; %mem, %vars.",
                env!("CARGO_PKG_VERSION")
            )
        },
        help_links: vec![
            if python {
                HelpLink {
                    text: "torchlet's Python: what runs".into(),
                    url: "https://docs.python.org/3/".into(),
                }
            } else {
                HelpLink {
                    text: "Rhai language book".into(),
                    url: "https://rhai.rs/book/".into(),
                }
            },
            HelpLink {
                text: "PyTorch CUDA memory management (what torchlet reproduces)".into(),
                url: "https://pytorch.org/docs/stable/notes/cuda.html".into(),
            },
        ],
        // The variables panel (see `debugger`), served for Rhai; JupyterLab reads the
        // kernelspec's flag too.
        debugger: true,
        error: None,
    }
}

fn rhai_language() -> LanguageInfo {
    LanguageInfo {
        name: "rhai".into(),
        version: "1.27".into(),
        mimetype: Some("text/x-rhai".into()),
        file_extension: Some(".rhai".into()),
        // Neither Pygments nor CodeMirror knows Rhai. Rust's modes read `#` as the start of an
        // attribute, so `#{device: "cuda"}` coloured the rest of a cell as one token, and
        // they leave backtick strings plain. JavaScript's share Rhai's `let`, `//`, quotes,
        // backtick strings with `${…}`, and `#{` costs them one character.
        pygments_lexer: Some("javascript".into()),
        codemirror_mode: Some(CodeMirrorMode::Simple("javascript".into())),
        nbconvert_exporter: Some("script".into()),
    }
}

/// Python 3 as ipykernel describes it, so notebooks highlight, export and save as Python.
fn python_language() -> LanguageInfo {
    LanguageInfo {
        name: "python".into(),
        version: "3.13".into(),
        mimetype: Some("text/x-python".into()),
        file_extension: Some(".py".into()),
        pygments_lexer: Some("ipython3".into()),
        codemirror_mode: Some(CodeMirrorMode::ipython_code_mirror_mode()),
        nbconvert_exporter: Some("python".into()),
    }
}

/// The debug_reply to a debug_request sent on shell: the debugger is served on control (as
/// ipykernel serves it), so here every request is answered as failed, naming its command.
pub fn debug_reply(request: &DebugRequest) -> DebugReply {
    static SEQ: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);
    let content = &request.content;
    let command = content
        .get("command")
        .and_then(|c| c.as_str())
        .unwrap_or("");
    DebugReply {
        content: serde_json::json!({
            "seq": SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            "type": "response",
            "request_seq": content.get("seq").and_then(|s| s.as_i64()).unwrap_or(0),
            "success": false,
            "command": command,
            "message": "torchlet serves debug_request on the control channel",
        }),
    }
}

/// The MIME bundle of a displayed value: text/plain always, text/html when the value has one.
pub fn media(data: &DisplayData) -> Media {
    let mut content = vec![MediaType::Plain(data.plain.clone())];
    if let Some(html) = &data.html {
        content.push(MediaType::Html(html.clone()));
    }
    Media::new(content)
}

/// The MIME bundle of a picture (text/plain and image/svg+xml) and its display id.
pub fn picture_media(picture: &torchlet_session::Picture) -> (Media, Option<String>) {
    let content = vec![
        MediaType::Plain(picture.plain.clone()),
        MediaType::Svg(picture.svg.clone()),
    ];
    (Media::new(content), picture.display_id.clone())
}

/// A traceback that points at the failing line of cell `In[count]`, ending with `Kind: message`.
pub fn traceback(error: &ScriptError, count: usize) -> Vec<String> {
    if !error.frames.is_empty() {
        return call_traceback(error, count);
    }
    let mut lines = Vec::new();
    let place = match (error.line, error.column) {
        (Some(l), Some(c)) => format!("Cell In[{count}], line {l}, column {c}:"),
        (Some(l), None) => format!("Cell In[{count}], line {l}:"),
        _ => format!("Cell In[{count}]:"),
    };
    lines.push(place);
    if let (Some(text), Some(line)) = (&error.source_line, error.line) {
        let gutter = format!("{line:>4} | ");
        lines.push(format!("{gutter}{text}"));
        if let Some(col) = error.column {
            // "     | " is as wide as the gutter, so the caret sits under column `col`.
            let pad = " ".repeat(col.saturating_sub(1));
            lines.push(format!("     | {pad}\x1b[1;31m^\x1b[0m"));
        }
    }
    lines.push(format!(
        "\x1b[0;31m{}\x1b[0m: {}",
        error.kind, error.message
    ));
    lines.extend(error.hint_line());
    lines
}

/// The traceback of an error raised inside a function: every call, innermost last, each with
/// its line and a caret, as IPython prints one.
fn call_traceback(error: &ScriptError, count: usize) -> Vec<String> {
    let mut lines = vec!["Traceback (most recent call last):".to_string()];
    for (i, frame) in error.frames.iter().enumerate() {
        // The input's own frame is shown as IPython shows a cell; earlier cells keep their `In[n]`.
        let place = match (i, frame.line, frame.column) {
            (0, Some(l), Some(c)) => format!("Cell In[{count}], line {l}, column {c}, in <module>"),
            _ => frame.location(),
        };
        lines.push(place);
        if let (Some(text), Some(line)) = (&frame.source_line, frame.line) {
            lines.push(format!("{line:>4} | {text}"));
            if let Some(col) = frame.column {
                let pad = " ".repeat(col.saturating_sub(1));
                lines.push(format!("     | {pad}\x1b[1;31m^\x1b[0m"));
            }
        }
    }
    lines.push(format!(
        "\x1b[0;31m{}\x1b[0m: {}",
        error.kind, error.message
    ));
    lines
}

/// The iopub `error` output of a failed cell.
pub fn error_output(error: &ScriptError, count: usize) -> ErrorOutput {
    ErrorOutput {
        ename: error.kind.clone(),
        evalue: error.message.clone(),
        traceback: traceback(error, count),
    }
}

/// A user_expression's result: its display bundle, or its error.
pub fn expression_result(outcome: &Outcome) -> ExpressionResult {
    match (&outcome.error, &outcome.value) {
        (Some(e), _) => ExpressionResult::Error {
            ename: e.kind.clone(),
            evalue: e.message.clone(),
            traceback: vec![e.to_string()],
        },
        (None, Some(value)) => ExpressionResult::Ok {
            data: media(value),
            metadata: Default::default(),
        },
        (None, None) => ExpressionResult::Ok {
            data: media(&DisplayData::text("()")),
            metadata: Default::default(),
        },
    }
}

/// Byte offset of the `chars`-th character (Jupyter cursors count Unicode code points).
pub fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(byte, _)| byte)
}

/// Number of characters before byte offset `byte`.
pub fn char_offset(text: &str, byte: usize) -> usize {
    let byte = byte.min(text.len());
    text.char_indices().take_while(|(b, _)| *b < byte).count()
}

/// complete_reply's metadata: every candidate's kind (and signature) under ipykernel's
/// `_jupyter_types_experimental` key, which JupyterLab shows as badges; `start`/`end` in code points.
pub fn completion_types(
    items: &[Candidate],
    start: usize,
    end: usize,
) -> serde_json::Map<String, serde_json::Value> {
    let types: Vec<serde_json::Value> = items
        .iter()
        .map(|c| {
            let mut entry = serde_json::json!({
                "start": start,
                "end": end,
                "text": c.text,
                "type": c.kind.name(),
            });
            if let Some(signature) = &c.signature {
                entry["signature"] = signature.clone().into();
            }
            entry
        })
        .collect();
    let mut metadata = serde_json::Map::new();
    metadata.insert("_jupyter_types_experimental".into(), types.into());
    metadata
}

/// The indent for the next line of incomplete `code`: four spaces per bracket still open.
pub fn continuation_indent(code: &str) -> String {
    let mut depth: usize = 0;
    let mut in_string: Option<char> = None;
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match in_string {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    in_string = None;
                }
            }
            None => match c {
                '"' | '`' | '\'' => in_string = Some(c),
                '/' if chars.peek() == Some(&'/') => {
                    while chars.peek().is_some_and(|&c| c != '\n') {
                        chars.next();
                    }
                }
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    if depth == 0 && torchlet_session::python_block(code).is_some() {
        // A Python block's body (read whole, then refused): indent under its header.
        let last = code.lines().last().unwrap_or("");
        let indent = &last[..last.len() - last.trim_start().len()];
        let deeper = if last.trim_end().ends_with(':') {
            "    "
        } else {
            ""
        };
        return format!("{indent}{deeper}");
    }
    "    ".repeat(depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_block_indents_under_its_header() {
        assert_eq!(continuation_indent("with torch.no_grad():"), "    ");
        assert_eq!(
            continuation_indent("for i in range(3):\n    print(i)"),
            "    "
        );
        assert_eq!(continuation_indent("let m = #{a: 1,"), "    ");
    }

    #[test]
    fn cursors_count_characters_not_bytes() {
        let text = "é = 1; é";
        assert_eq!(byte_offset(text, 1), 2);
        assert_eq!(char_offset(text, 2), 1);
        assert_eq!(byte_offset(text, 100), text.len());
        assert_eq!(char_offset(text, text.len()), text.chars().count());
    }

    #[test]
    fn indent_follows_open_brackets_outside_strings() {
        assert_eq!(continuation_indent("fn f() {"), "    ");
        assert_eq!(continuation_indent("if a {\n  if b { [1,"), "            ");
        assert_eq!(continuation_indent("let s = \"{\"; f(1,"), "    ");
        assert_eq!(continuation_indent("let x = 1 + // {\n"), "");
    }

    #[test]
    fn traceback_points_at_the_column() {
        let error = ScriptError {
            kind: "NameError".into(),
            message: "name 'z' is not defined".into(),
            source: None,
            line: Some(2),
            column: Some(9),
            source_line: Some("let y = z + 1;".into()),
            frames: Vec::new(),
            hint: None,
        };
        let tb = traceback(&error, 3);
        assert_eq!(tb[0], "Cell In[3], line 2, column 9:");
        assert_eq!(tb[1], "   2 | let y = z + 1;");
        let caret = tb[2].find('\x1b').unwrap();
        assert_eq!(caret, tb[1].find('z').unwrap());
        assert!(tb[3].contains("NameError") && tb[3].ends_with("name 'z' is not defined"));
        assert_eq!(tb.len(), 4);
        let hinted = ScriptError {
            hint: Some("did you mean y?".into()),
            ..error
        };
        assert_eq!(traceback(&hinted, 3)[4], "hint: did you mean y?");
    }
}
