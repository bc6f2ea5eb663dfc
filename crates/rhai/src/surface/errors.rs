//! Errors as a script sees them: Python-style kinds (`RuntimeError`, `NameError` …) over Rhai's errors.
use rhai::{Dynamic, EvalAltResult, Position};

/// An error raised by torchlet code, catchable in a script: `catch (e) { print(e.kind) }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Exception {
    /// Python's name for it: `RuntimeError`, `OutOfMemoryError`, `TypeError` …
    pub kind: String,
    /// What went wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for Exception {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// A Rhai error carrying an `Exception` of `kind`; the engine fills in the position.
pub fn raise(kind: &str, message: impl Into<String>) -> Box<EvalAltResult> {
    let exception = Exception {
        kind: kind.to_string(),
        message: message.into(),
    };
    EvalAltResult::ErrorRuntime(Dynamic::from(exception), Position::NONE).into()
}

/// Shorthand for a `TypeError`: the arguments have the wrong type or form.
pub fn type_error(message: impl Into<String>) -> Box<EvalAltResult> {
    raise("TypeError", message)
}

/// Shorthand for a `ValueError`: right type, unusable value.
pub fn value_error(message: impl Into<String>) -> Box<EvalAltResult> {
    raise("ValueError", message)
}

/// Register the `Exception` type so caught errors read well: `e.kind`, `e.message`, `print(e)`.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine
        .register_type_with_name::<Exception>("Exception")
        .register_get("kind", |e: &mut Exception| e.kind.clone())
        .register_get("message", |e: &mut Exception| e.message.clone())
        .register_fn("to_string", |e: &mut Exception| e.to_string())
        .register_fn("to_debug", |e: &mut Exception| e.to_string());
}

/// A run-time error's Python-style kind and message.
pub fn describe(error: &EvalAltResult) -> (String, String) {
    use EvalAltResult as E;
    let pair = |kind: &str, message: String| (kind.to_string(), message);
    match error {
        E::ErrorInFunctionCall(_, _, inner, _) | E::ErrorInModule(_, inner, _) => describe(inner),
        E::ErrorRuntime(value, _) => match value.read_lock::<Exception>() {
            Some(e) => (e.kind.clone(), e.message.clone()),
            None if value.is_unit() => pair("RuntimeError", "exception thrown".into()),
            None => pair("RuntimeError", value.to_string()),
        },
        E::ErrorTerminated(_, _) => pair("KeyboardInterrupt", "execution interrupted".into()),
        E::ErrorVariableNotFound(name, _) => pair("NameError", not_defined(name)),
        E::ErrorFunctionNotFound(signature, _) => describe_missing_function(signature),
        E::ErrorPropertyNotFound(name, _) => pair(
            "AttributeError",
            format!("no property '{name}' here; help(\"Tensor\") lists a tensor's properties"),
        ),
        E::ErrorDotExpr(message, _) => pair("AttributeError", attribute_message(message)),
        // Conditions at top level go through `bool()` (see `lifetimes`); fn bodies are not
        // rewritten, so there a condition must be a bool already.
        E::ErrorMismatchDataType(want, got, _) if want == "bool" => pair(
            "TypeError",
            format!(
                "expected bool, got {}: inside a fn, write the condition as bool(x)",
                plain_type(got)
            ),
        ),
        E::ErrorMismatchDataType(want, got, _) | E::ErrorMismatchOutputType(want, got, _) => pair(
            "TypeError",
            format!("expected {}, got {}", plain_type(want), plain_type(got)),
        ),
        E::ErrorIndexingType(ty, _) => {
            pair("TypeError", format!("cannot index {}", plain_type(ty)))
        }
        E::ErrorArrayBounds(len, index, _) => pair(
            "IndexError",
            format!("index {index} is out of bounds for an array of length {len}"),
        ),
        E::ErrorStringBounds(len, index, _) => pair(
            "IndexError",
            format!("index {index} is out of bounds for a string of length {len}"),
        ),
        E::ErrorIndexNotFound(key, _) => pair("KeyError", key.to_string()),
        E::ErrorFor(_) => pair("TypeError", "a `for` loop needs an array or range".into()),
        E::ErrorArithmetic(message, _) if message.contains("zero") => {
            pair("ZeroDivisionError", message.clone())
        }
        E::ErrorAssignmentToConstant(name, _) => {
            pair("TypeError", format!("cannot assign to constant '{name}'"))
        }
        E::ErrorStackOverflow(_) => {
            pair("RecursionError", "maximum recursion depth exceeded".into())
        }
        E::ErrorParsing(kind, _) => pair("SyntaxError", kind.to_string()),
        other => pair("RuntimeError", without_position(&other.to_string())),
    }
}

/// A type as the language names it: `int`, `float`, `range`, never a Rust path such as
/// `core::ops::range::Range<i64>`.
fn plain_type(name: &str) -> String {
    let words = [
        ("core::ops::range::RangeInclusive<i64>", "range"),
        ("core::ops::range::Range<i64>", "range"),
        ("RangeInclusive<i64>", "range"),
        ("Range<i64>", "range"),
        ("rhai::types::immutable_string::ImmutableString", "string"),
        ("ImmutableString", "string"),
        ("alloc::string::String", "string"),
        ("&str", "string"),
        ("i64", "int"),
        ("f64", "float"),
    ];
    let mut text = name.to_string();
    for (rust, plain) in words {
        text = text.replace(rust, plain);
    }
    // Whatever path is left (a type of torchlet's own): its last segment.
    text.split(' ')
        .map(|w| w.rsplit("::").next().unwrap_or(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rhai's message without the " (line 1, position 5)" it appends; positions are shown separately.
fn without_position(text: &str) -> String {
    match text.rfind(" (line ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text.to_string(),
    }
}

/// Python's wording for Rhai's "Unknown property 'x' - a getter is not registered for type 'T'"
/// and "No writable property 'x' - a setter is not registered for type 'T' …".
fn attribute_message(message: &str) -> String {
    let quoted: Vec<&str> = message.split('\'').skip(1).step_by(2).collect();
    match quoted.as_slice() {
        [name, ty, ..] if message.starts_with("Unknown property") => {
            format!("'{ty}' object has no attribute '{name}'")
        }
        [name, ty, ..] if message.starts_with("No writable property") => {
            format!("attribute '{name}' of '{ty}' objects is not writable")
        }
        _ => message.to_string(),
    }
}

/// Python's wording for an unknown name.
pub fn not_defined(name: &str) -> String {
    format!("name '{name}' is not defined")
}

/// An unknown function is a `NameError`; a known one called with unusable arguments, a `TypeError`.
fn describe_missing_function(signature: &str) -> (String, String) {
    let name = signature.split('(').next().unwrap_or(signature).trim();
    let args = signature
        .strip_prefix(name)
        .unwrap_or("")
        .trim()
        .replace("rhai::", "")
        .replace("torchlet::tensor::", "")
        .replace("&mut ", "")
        .replace("&str | ImmutableString | String", "string")
        .replace("&str | string | String", "string")
        .replace("ImmutableString", "string")
        .replace("i64", "int")
        .replace("f64", "float");
    let method = args
        .trim_start_matches('(')
        .split([',', ')'])
        .next()
        .map(str::trim)
        .filter(|first| *first == "Tensor");
    if super::help::is_known(name) {
        let what = if method.is_some() {
            format!("Tensor.{name}")
        } else {
            format!("{name}()")
        };
        let hint = super::help::doc(name)
            .map(|d| format!("; usage: {d}"))
            .unwrap_or_default();
        (
            "TypeError".into(),
            format!("{what} received an invalid combination of arguments {args}{hint}"),
        )
    } else if method.is_some() {
        (
            "AttributeError".into(),
            format!("'Tensor' object has no attribute '{name}'"),
        )
    } else {
        ("NameError".into(), not_defined(name))
    }
}
