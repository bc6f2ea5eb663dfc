//! The language's surface: the values, functions, methods and modules a script calls.
//!
//! Map: values: `tensor_api` (the `Tensor` type: properties, methods, printing, the reductions),
//! `creation`, `operators` (one loop over the binary table), `comparisons`, `compound_assign`,
//! `indexing`, `numbers` (Python's division and `int`/`float`), `truth` (Python's `bool(x)`),
//! `convert` (script values ↔ tensor arguments). Ops: `nn_api` (`linear`, `layer_norm`, …), `conv_api`
//! (`conv2d`, pooling, `batch_norm`, `nll_loss`, `scaled_dot_product_attention`), `loss_api`
//! (`l1_loss`, `huber_loss`, the binary cross-entropies, `kl_div`, losses' keywords), `scatter_api`
//! (`scatter_add`, `index_add`, `roll`) and
//! `shape_api` (`cat`, `where`, `gather`, …), `sorting_api` (`sort`, `topk`, `cumsum`,
//! `multinomial`, …) and `elementwise_api` (`maximum`, `%`, `lerp`, `norm`, …), as functions and
//! methods; `checkpoint` (activation
//! checkpointing). Modules: `cuda_module`, `distributed_module` (collectives over devices), `process_group`
//! (the `dist` module: one rank of a world), `optim_module`
//! (optimizers from the option table), `nn_module`. Memory: `holders_api` (`memory_holders`,
//! `explain_free`), `plot_api` (`plot_memory()`), `view` (what the explanations see of a value).
//! Output: `output` (`eprint`, `display`, `input`, `help`), `display` (a value's richest form),
//! `python_builtins` (`range`, `print(a, b)`, `exit()`), `script_args` (`ARGS`, `arg`,
//! `fit_value`), `errors` (Python's error kinds). Help: each function registers with its help line
//! (`documented`), and `help` reads them back.

pub mod checkpoint;
pub mod comparisons;
pub mod compound_assign;
pub mod conv_api;
pub mod convert;
pub mod creation;
pub mod cuda_module;
pub mod display;
pub mod distributed_module;
pub mod documented;
pub mod elementwise_api;
pub mod errors;
pub mod help;
pub mod holders_api;
pub mod indexing;
pub mod loss_api;
pub mod nn_api;
pub mod nn_module;
pub mod numbers;
pub mod operators;
pub mod optim_module;
pub mod output;
pub mod plot_api;
pub mod process_group;
pub mod python_builtins;
pub mod scatter_api;
pub mod script_args;
pub mod shape_api;
pub mod sorting_api;
pub mod tensor_api;
pub mod truth;
pub mod view;
