//! What front ends show for a value or a report: plain text always, HTML where it adds something.

/// A value rendered for display: plain text always, HTML where it adds something.
#[derive(Clone, Debug, PartialEq)]
pub struct DisplayData {
    /// PyTorch-style text, as the REPL echoes it.
    pub plain: String,
    /// An HTML rendering for notebooks.
    pub html: Option<String>,
}

impl DisplayData {
    /// Plain text only.
    pub fn text(plain: impl Into<String>) -> Self {
        DisplayData {
            plain: plain.into(),
            html: None,
        }
    }

    /// Fixed-width text, with an HTML `<pre>` so a notebook keeps its columns aligned.
    pub fn preformatted(plain: impl Into<String>) -> Self {
        let plain = plain.into();
        let html = format!("<pre>{}</pre>", html_escape(&plain));
        DisplayData {
            plain,
            html: Some(html),
        }
    }
}

/// `text` with HTML's three special characters escaped.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
