//! What a session says about a name: `help(topic)` text, `name?`, and the kernel's inspect.
use super::Session;
use torchlet_core::tensor::Tensor;
use torchlet_rhai::surface::{help, output};

/// Rhai keywords, described as such when nothing else is known of the name.
const RHAI_KEYWORDS: &[&str] = &[
    "let", "const", "fn", "if", "else", "while", "loop", "for", "in", "do", "until", "break",
    "continue", "return", "throw", "try", "catch", "switch", "true", "false", "print", "debug",
];

/// One function the engine knows: `namespace::name`, its signature and doc comment.
struct FnDoc {
    name: String,
    signature: String,
    doc: String,
}

impl Session {
    /// What `help(topic)` prints: the overview for `""`, a table for `Tensor` or `cuda`, else
    /// one name's doc.
    pub fn help_text(&self, topic: &str) -> String {
        output::help_text(topic)
    }

    /// The name a whole input of the form `name?` (or `?name`) asks help for.
    pub fn help_query(&self, input: &str) -> Option<String> {
        let call = output::rewrite_help_query(input)?;
        let quoted = call.strip_prefix("help(")?.strip_suffix(')')?;
        serde_json::from_str(quoted).ok()
    }

    /// Documentation of `name`: a variable's type and value, the language's doc of a name, the
    /// signatures and doc comments of an engine function, or the user's function's signature.
    pub fn describe(&self, name: &str) -> Option<String> {
        if let Some(text) = self.describe_variable(name) {
            return Some(text);
        }
        if let Some(doc) = help::doc(name) {
            return Some(doc.to_string());
        }
        if let Some(text) = self.describe_function(name) {
            return Some(text);
        }
        // The user's own functions, with the first line of their `///` doc comment.
        let defined = self.signatures(name);
        if !defined.is_empty() {
            return Some(defined.join("\n"));
        }
        RHAI_KEYWORDS
            .contains(&name)
            .then(|| format!("{name}: a Rhai keyword (see https://rhai.rs/book/)"))
    }

    /// Help on `receiver.name(`: the tensor method's when the receiver is a tensor or unknown,
    /// else the engine's functions of that name (whose first parameter is the receiver).
    pub fn describe_member(&self, receiver: &str, name: &str) -> Option<String> {
        let value = self.scope().get(receiver).filter(|_| !receiver.is_empty());
        let tensor = value.is_none_or(|v| v.is::<Tensor>());
        let documented = tensor
            .then(|| help::doc(&format!("Tensor.{name}")))
            .flatten();
        match documented {
            Some(doc) => Some(doc.to_string()),
            None => self.describe(name),
        }
    }

    /// A variable's type (a tensor's shape, dtype, device and bytes) and its value.
    fn describe_variable(&self, name: &str) -> Option<String> {
        if !self.variable_names().iter().any(|v| v == name) {
            return None;
        }
        let value = self.scope().get(name)?;
        let shown =
            torchlet_rhai::surface::display::of_value(value).map_or("()".to_string(), |d| d.plain);
        if let Some(t) = value.read_lock::<Tensor>() {
            return Some(format!(
                "{name}: Tensor of shape {:?}, dtype {}, on {}, {} bytes ({} in its storage){}\n{shown}",
                t.shape(),
                t.dtype(),
                t.device(),
                t.nbytes(),
                t.storage_nbytes(),
                if t.requires_grad() { ", requires grad" } else { "" },
            ));
        }
        Some(format!(
            "{name}: variable of type {}\n{shown}",
            self.engine().map_type_name(value.type_name())
        ))
    }

    /// Every signature of the engine function `name`, then each distinct doc comment.
    fn describe_function(&self, name: &str) -> Option<String> {
        let docs: Vec<FnDoc> = self
            .engine_functions()
            .into_iter()
            .filter(|f| f.name == name)
            .collect();
        if docs.is_empty() {
            return None;
        }
        let mut text = String::new();
        for f in &docs {
            text.push_str(&f.signature);
            text.push('\n');
        }
        let mut seen = Vec::new();
        for f in &docs {
            if !f.doc.is_empty() && !seen.contains(&f.doc) {
                text.push('\n');
                text.push_str(&f.doc);
                text.push('\n');
                seen.push(f.doc.clone());
            }
        }
        Some(text.trim_end().to_string())
    }

    fn engine_functions(&self) -> Vec<FnDoc> {
        self.engine().collect_fn_metadata(
            None,
            |info| {
                let m = info.metadata;
                let prefix = if info.namespace.is_empty() {
                    String::new()
                } else {
                    format!("{}::", info.namespace)
                };
                Some(FnDoc {
                    name: format!("{prefix}{}", m.name),
                    signature: format!("{prefix}{}", m.gen_signature(|s| s.into())),
                    doc: help::comment_text(&m.comments),
                })
            },
            true,
        )
    }

    /// Signatures of the functions named `name`, the user's first, each with its doc's first line.
    pub(crate) fn signatures(&self, name: &str) -> Vec<String> {
        let with_doc = |signature: String, doc: Option<String>| match doc {
            Some(doc) => format!("{signature}\n    {doc}"),
            None => signature,
        };
        let mut found: Vec<String> = self
            .functions
            .iter_functions()
            .filter(|f| f.name == name)
            .map(|f| {
                let signature = format!("fn {}({})", f.name, f.params.join(", "));
                with_doc(signature, f.comments.iter().find_map(|c| first_doc_line(c)))
            })
            .collect();
        let mut native = self.engine.collect_fn_metadata(
            None,
            |f| {
                let shown = f
                    .metadata
                    .name
                    .trim_start_matches("get$")
                    .trim_start_matches("set$");
                let qualified = match f.namespace.is_empty() {
                    true => shown.to_string(),
                    false => format!("{}::{shown}", f.namespace),
                };
                if shown != name && qualified != name {
                    return None;
                }
                let mut signature = f.metadata.gen_signature(|t| t.into());
                if !f.namespace.is_empty() {
                    signature = format!("{}::{signature}", f.namespace);
                }
                let doc = f.metadata.comments.iter().find_map(|c| first_doc_line(c));
                Some(with_doc(signature, doc))
            },
            true,
        );
        native.sort();
        native.dedup();
        found.extend(native);
        found
    }
}

/// The first non-empty line of a `///` or `/**` doc comment, without its markers.
fn first_doc_line(comment: &str) -> Option<String> {
    let line = comment
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("///")
                .trim_start_matches("/**")
                .trim()
        })
        .find(|l| !l.is_empty())?;
    Some(line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_queries_are_single_names() {
        let (s, _) = Session::captured("<test>");
        assert_eq!(s.help_query("zeros?").as_deref(), Some("zeros"));
        let asked = s.help_query("?cuda::empty_cache");
        assert_eq!(asked.as_deref(), Some("cuda::empty_cache"));
        assert_eq!(s.help_query("t.sum?").as_deref(), Some("Tensor.sum"));
        assert_eq!(s.help_query("a + b?"), None);
        assert_eq!(s.help_query("?"), None);
    }
}
