//! The Rhai engine of the torchlet language: tensors, the `cuda` module, `del` and grad-mode blocks.
pub mod comparisons;
pub mod compound_assign;
pub mod convert;
pub mod creation;
pub mod cuda_module;
pub mod distributed_module;
pub mod errors;
pub mod floordiv_hint;
pub mod help;
pub mod lifetimes;
pub mod numbers;
pub mod operators;
pub mod output;
pub mod syntax;
pub mod tensor_api;
pub mod truth;

use std::rc::Rc;

use crate::session::{DisplayData, Frontend, InterruptHandle};

pub use errors::Exception;
pub use lifetimes::Lifetimes;

/// A Rhai engine with the whole torchlet language registered, printing to `frontend`.
pub fn new_engine(frontend: Rc<dyn Frontend>, interrupt: InterruptHandle) -> rhai::Engine {
    let mut engine = rhai::Engine::new();
    // Random constructors must run every time they are reached: no constant folding at all.
    engine.set_optimization_level(rhai::OptimizationLevel::None);
    // Rhai's fast operators run its built-in `7 / 2` (3) and `%` before any registered function;
    // off, the registered ones win and numbers divide as in Python (see `numbers`).
    engine.set_fast_operators(false);
    let out = frontend.clone();
    engine.on_print(move |s| out.stdout(&format!("{s}\n")));
    let err = frontend.clone();
    engine.on_debug(move |s, _, _| err.stderr(&format!("{s}\n")));
    engine.on_progress(move |_| interrupt.is_set().then(|| "interrupted".into()));
    errors::register(&mut engine);
    syntax::register(&mut engine);
    lifetimes::register(&mut engine);
    output::register(&mut engine, frontend);
    tensor_api::register(&mut engine);
    creation::register(&mut engine);
    operators::register(&mut engine);
    comparisons::register(&mut engine);
    compound_assign::register(&mut engine);
    numbers::register(&mut engine);
    truth::register(&mut engine);
    cuda_module::register(&mut engine);
    engine
}

/// How a script value echoes, for values with a richer form than Rhai's `to_string`.
pub fn display_of(value: &rhai::Dynamic) -> Option<DisplayData> {
    if let Some(t) = value.read_lock::<crate::tensor::Tensor>() {
        let plain = t.to_string();
        let html = format!("<pre>{}</pre>", html_escape(&plain));
        return Some(DisplayData {
            plain,
            html: Some(html),
        });
    }
    if let Some(e) = value.read_lock::<Exception>() {
        return Some(DisplayData::text(e.to_string()));
    }
    None
}

/// A run-time error's Python-style kind and message.
pub fn describe_error(error: &rhai::EvalAltResult) -> (String, String) {
    errors::describe(error)
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
