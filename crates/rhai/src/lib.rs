//! The Rhai engine of the torchlet language: tensors, the `cuda` module, `del` and grad-mode blocks.
//!
//! Map: `new_engine` below registers everything, from three rooms. `surface` is what a script
//! calls: the `Tensor` type, creation, operators, indexing, the model and shape ops, the `cuda`,
//! `optim` and `nn` modules, output and help, and `view` (script values as the explanations of
//! `torchlet_explain` see them). `source` reads the text before Rhai does: the lexer, PyTorch's
//! spellings, Python's scoping, the floor-division hint and the hints for Python habits, and the
//! call open at a cursor. `runtime` is how statements run: CPython's lifetimes, `del` and the
//! grad-mode blocks, autocast, globals inside functions, statement names for the allocator, leak
//! watches, the output sink and interrupt flag, and `state`, what one session's hooks keep.
//! Nothing here imports `session` or a front end.

pub mod runtime;
pub mod source;
pub mod surface;

use std::rc::Rc;

pub use runtime::frontend::{CapturedOutput, Frontend, OutputEvent, StdioFrontend};
pub use runtime::interrupt::InterruptHandle;
pub use runtime::lifetimes::Lifetimes;
pub use runtime::state::{LanguageState, State};
pub use surface::errors::Exception;
pub use torchlet_explain::{DisplayData, Picture};

/// A Rhai engine with the whole torchlet language registered, printing to `frontend`, its hooks
/// keeping their state in the session's `state`.
pub fn new_engine(
    frontend: Rc<dyn Frontend>,
    interrupt: InterruptHandle,
    state: &State,
) -> rhai::Engine {
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
    surface::errors::register(&mut engine);
    runtime::syntax::register(&mut engine, state);
    runtime::autocast_block::register(&mut engine);
    runtime::del::register(&mut engine);
    runtime::globals::register(&mut engine, state);
    surface::holders_api::register(&mut engine);
    runtime::leaks::register(&mut engine, frontend.clone(), state);
    runtime::provenance::register(&mut engine, state);
    runtime::lifetimes::register(&mut engine, state);
    surface::plot_api::register(&mut engine, frontend.clone());
    surface::output::register(&mut engine, frontend);
    surface::python_builtins::register(&mut engine);
    surface::tensor_api::register(&mut engine);
    surface::nn_api::register(&mut engine);
    surface::conv_api::register(&mut engine);
    surface::loss_api::register(&mut engine);
    surface::scatter_api::register(&mut engine);
    surface::indexing::register(&mut engine);
    surface::shape_api::register(&mut engine);
    surface::sorting_api::register(&mut engine);
    surface::elementwise_api::register(&mut engine);
    surface::creation::register(&mut engine);
    surface::checkpoint::register(&mut engine);
    surface::script_args::register(&mut engine, state);
    surface::operators::register(&mut engine);
    surface::comparisons::register(&mut engine);
    surface::compound_assign::register(&mut engine);
    surface::numbers::register(&mut engine);
    surface::truth::register(&mut engine);
    surface::cuda_module::register(&mut engine, state);
    surface::optim_module::register(&mut engine);
    surface::nn_module::register(&mut engine);
    surface::process_group::register(&mut engine);
    engine
}

/// A run-time error's Python-style kind and message.
pub fn describe_error(error: &rhai::EvalAltResult) -> (String, String) {
    surface::errors::describe(error)
}
