//! The Rhai engine of the torchlet language: tensors, the `cuda` module, `del` and grad-mode blocks.
//!
//! Map: `new_engine` below registers everything. Values: `tensor_api` (the `Tensor` type),
//! `creation`, `operators`, `comparisons`, `compound_assign`, `indexing`, `numbers`, `truth`,
//! `convert` (script values ↔ tensor arguments). Ops: `nn_api` (`linear`, `bmm`, `layer_norm`,
//! `dropout`, `relu_`) and `shape_api` (`cat`, `split`, `where`, `gather`, `embedding`…), as
//! functions and methods; `checkpoint` (activation checkpointing, running `f` again in backward).
//! Statements and Python's spellings: `syntax` (grad-mode blocks), `autocast_block` (mixed
//! precision), `del`, `globals`, `scoping`, `python_builtins`, `python_spelling`, `tokens`,
//! `hints`, `floordiv_hint`, `errors`; `script_args` (`ARGS`, `arg(name, default)`, `fit_value`).
//! Lifetimes: `lifetimes` (CPython's temporaries), `provenance` (naming each statement for the
//! allocations it makes), `site_name` and `statement_names` (reading those names back as frames
//! and variables), `ledger`, `leaks`. Memory: `cuda_module`, `distributed_module`, `holders`,
//! `explain_free` and their script face `holders_api`; `snapshot_dump` (`cuda::dump_snapshot` in
//! PyTorch's viewer's form); `memory_timeline` (memory by variable after each statement, replayed
//! from the history), `memory_plot` (its chart and sparkline) and `plot_api` (`plot_memory()`).
//! What the language hands up: `frontend` (the output sink), `display` (rich values), `picture`
//! (charts), `interrupt` (the stop flag), `output` (`print`, `help`…). Training: `optim_module`
//! (`optim::SGD`, `Adam`, `AdamW`) and `nn_module` (`nn::linear_params`, `nn::parameters`).
//! Help: each function registers with its help line (`documented`), and `help` reads them back.
//! Nothing here imports `session` or a front end.

pub mod autocast_block;
pub mod callee;
pub mod checkpoint;
pub mod comparisons;
pub mod compound_assign;
pub mod convert;
pub mod creation;
pub mod cuda_module;
pub mod del;
pub mod display;
pub mod distributed_module;
pub mod documented;
pub mod errors;
pub mod floordiv_hint;
pub mod frontend;
pub mod globals;
pub mod help;
pub mod hints;
pub mod holders_api;
pub mod indexing;
pub mod interrupt;
pub mod leaks;
pub mod lifetimes;
pub mod nn_api;
pub mod nn_module;
pub mod numbers;
pub mod operators;
pub mod optim_module;
pub mod output;
pub mod plot_api;
pub mod provenance;
pub mod python_builtins;
pub mod python_spelling;
pub mod scoping;
pub mod script_args;
pub mod shape_api;
pub mod state;
pub mod syntax;
pub mod tensor_api;
pub mod tokens;
pub mod truth;
pub mod view;

use std::rc::Rc;

pub use errors::Exception;
pub use frontend::{CapturedOutput, Frontend, OutputEvent, StdioFrontend};
pub use interrupt::InterruptHandle;
pub use lifetimes::Lifetimes;
pub use state::{LanguageState, State};
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
    errors::register(&mut engine);
    syntax::register(&mut engine, state);
    autocast_block::register(&mut engine);
    del::register(&mut engine);
    globals::register(&mut engine, state);
    holders_api::register(&mut engine);
    leaks::register(&mut engine, frontend.clone(), state);
    provenance::register(&mut engine, state);
    lifetimes::register(&mut engine, state);
    plot_api::register(&mut engine, frontend.clone());
    output::register(&mut engine, frontend);
    python_builtins::register(&mut engine);
    tensor_api::register(&mut engine);
    nn_api::register(&mut engine);
    indexing::register(&mut engine);
    shape_api::register(&mut engine);
    creation::register(&mut engine);
    checkpoint::register(&mut engine);
    script_args::register(&mut engine, state);
    operators::register(&mut engine);
    comparisons::register(&mut engine);
    compound_assign::register(&mut engine);
    numbers::register(&mut engine);
    truth::register(&mut engine);
    cuda_module::register(&mut engine, state);
    optim_module::register(&mut engine);
    nn_module::register(&mut engine);
    engine
}

/// A run-time error's Python-style kind and message.
pub fn describe_error(error: &rhai::EvalAltResult) -> (String, String) {
    errors::describe(error)
}
