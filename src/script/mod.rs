//! The Rhai engine of the torchlet language: tensors, the `cuda` module, `del` and grad-mode blocks.
pub mod comparisons;
pub mod compound_assign;
pub mod convert;
pub mod creation;
pub mod cuda_module;
pub mod del;
pub mod distributed_module;
pub mod errors;
pub mod floordiv_hint;
pub mod globals;
pub mod help;
pub mod hints;
pub mod holders_api;
pub mod indexing;
pub mod leaks;
pub mod lifetimes;
pub mod memory_plot;
pub mod memory_timeline;
pub mod numbers;
pub mod operators;
pub mod output;
pub mod plot_api;
pub mod provenance;
pub mod python_builtins;
pub mod python_spelling;
pub mod scoping;
pub mod site_name;
pub mod snapshot_dump;
pub mod statement_names;
pub mod syntax;
pub mod tensor_api;
pub mod tokens;
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
    del::register(&mut engine);
    globals::register(&mut engine);
    holders_api::register(&mut engine);
    leaks::register(&mut engine, frontend.clone());
    provenance::register(&mut engine);
    lifetimes::register(&mut engine);
    plot_api::register(&mut engine, frontend.clone());
    output::register(&mut engine, frontend);
    python_builtins::register(&mut engine);
    tensor_api::register(&mut engine);
    indexing::register(&mut engine);
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
    if let Some(report) = value.read_lock::<holders_api::FreeReport>() {
        return Some(report.display());
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
