//! How a script value is shown: plain text always, HTML where it adds something.
use super::holders_api::FreeReport;
use super::Exception;
use torchlet_core::tensor::Tensor;

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

    /// How a value echoes; `None` for `()`.
    pub fn of_value(value: &rhai::Dynamic) -> Option<DisplayData> {
        if value.is_unit() {
            return None;
        }
        if let Some(data) = rich(value) {
            return Some(data);
        }
        Some(DisplayData::text(value.to_string()))
    }
}

/// How a value echoes when it has a richer form than Rhai's `to_string`.
fn rich(value: &rhai::Dynamic) -> Option<DisplayData> {
    if let Some(t) = value.read_lock::<Tensor>() {
        return Some(DisplayData::preformatted(t.to_string()));
    }
    if let Some(report) = value.read_lock::<FreeReport>() {
        return Some(report.display());
    }
    if let Some(e) = value.read_lock::<Exception>() {
        return Some(DisplayData::text(e.to_string()));
    }
    None
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
