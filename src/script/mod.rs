//! The Rhai engine of the torchlet language: tensors, the `cuda` module, `del` and grad-mode blocks.
use std::rc::Rc;

use crate::session::{DisplayData, Frontend, InterruptHandle};

/// A Rhai engine with the whole torchlet language registered, printing to `frontend`.
pub fn new_engine(frontend: Rc<dyn Frontend>, interrupt: InterruptHandle) -> rhai::Engine {
    let mut engine = rhai::Engine::new();
    let out = frontend.clone();
    engine.on_print(move |s| out.stdout(&format!("{s}\n")));
    let err = frontend;
    engine.on_debug(move |s, _, _| err.stderr(&format!("{s}\n")));
    engine.on_progress(move |_| interrupt.is_set().then(|| "interrupted".into()));
    engine
}

/// How a script value echoes, for values with a richer form than Rhai's `to_string`.
pub fn display_of(_value: &rhai::Dynamic) -> Option<DisplayData> {
    None
}

/// A run-time error's Python-style kind and message.
pub fn describe_error(error: &rhai::EvalAltResult) -> (String, String) {
    use rhai::EvalAltResult as E;
    match error {
        E::ErrorTerminated(_, _) => ("KeyboardInterrupt".into(), "execution interrupted".into()),
        E::ErrorVariableNotFound(name, _) => {
            ("NameError".into(), format!("name '{name}' is not defined"))
        }
        other => ("RuntimeError".into(), other.to_string()),
    }
}
