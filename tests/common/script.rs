//! Running code in a session from a test: its value as text, its error as a value, or both.
use rhai::{Array, Dynamic};
use torchlet_session::{Outcome, ScriptError, Session};

/// A captured session named `name` that has run `setup`, which must succeed.
pub fn session_with(name: &str, setup: &str) -> Session {
    let (mut s, _) = Session::captured(name);
    run(&mut s, setup);
    s
}

/// Run `code`, which must succeed; an error fails the test with its place.
pub fn run(s: &mut Session, code: &str) {
    if let Some(e) = s.execute(code).error {
        panic!("{code}: {}", e.located());
    }
}

/// An outcome's value as plain text ("()" when there is none); an error fails the test with its place.
pub fn value(outcome: Outcome) -> String {
    match (outcome.value, outcome.error) {
        (Some(v), None) => v.plain,
        (None, None) => "()".into(),
        (_, Some(e)) => panic!("unexpected error: {}", e.located()),
    }
}

/// Run `code` and give its value as [`value`] does.
pub fn eval(s: &mut Session, code: &str) -> String {
    value(s.execute(code))
}

/// Run `code`, which must succeed, and give its value as plain text: empty when there is none.
pub fn plain(s: &mut Session, code: &str) -> String {
    let outcome = s.execute(code);
    if let Some(e) = outcome.error {
        panic!("{code}: {}", e.located());
    }
    outcome.value.map(|v| v.plain).unwrap_or_default()
}

/// Run `code`, which must fail, and give its error.
pub fn error(s: &mut Session, code: &str) -> ScriptError {
    s.execute(code)
        .error
        .unwrap_or_else(|| panic!("{code} should fail"))
}

/// Run `code`: its value as plain text (empty when there is none), or its error's kind and message.
pub fn outcome(s: &mut Session, code: &str) -> Result<String, (String, String)> {
    let outcome = s.execute(code);
    match outcome.error {
        Some(e) => Err((e.kind, e.message)),
        None => Ok(outcome.value.map(|v| v.plain).unwrap_or_default()),
    }
}

/// What the expression `code` evaluates to, as the script holds it.
pub fn dynamic(s: &mut Session, code: &str) -> Dynamic {
    run(s, &format!("let __value = {{ {code} }};"));
    s.scope()
        .get_value::<Dynamic>("__value")
        .expect("the value just bound")
}

/// The int the expression `code` evaluates to.
pub fn int(s: &mut Session, code: &str) -> i64 {
    dynamic(s, code)
        .as_int()
        .unwrap_or_else(|t| panic!("{code} gave {t}, not an int"))
}

/// What a REPL command printed, which must succeed ("" when it printed no value).
pub fn command_text(outcome: Option<Outcome>) -> String {
    let outcome = outcome.expect("a command");
    if let Some(error) = outcome.error {
        panic!("command failed: {error}");
    }
    outcome.value.map(|v| v.plain).unwrap_or_default()
}

/// The tensor `expr` evaluates to: its flat elements (as the script holds them), shape, dtype and
/// device.
pub fn tensor_facts(s: &mut Session, expr: &str) -> (Array, Vec<i64>, String, String) {
    let code =
        format!("let r = {expr}; let out = [r.flatten().tolist(), r.shape, r.dtype, r.device];");
    let outcome = s.execute(&code);
    assert!(outcome.error.is_none(), "{expr}: {:?}", outcome.error);
    let out: Array = s.scope().get_value("out").expect("out");
    let elements = out[0].clone().into_array().unwrap();
    let shape = out[1]
        .clone()
        .into_array()
        .unwrap()
        .iter()
        .map(|d| d.as_int().unwrap())
        .collect();
    (elements, shape, out[2].to_string(), out[3].to_string())
}
