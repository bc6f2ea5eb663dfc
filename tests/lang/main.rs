//! The script language, one module per feature: del, no_grad, scoping, operators, printing, errors, Python spellings.
#[path = "../common/mod.rs"]
mod common;

mod checkpoint;
mod comparisons;
mod compound_assign;
mod cuda_module;
mod del;
mod echo_semicolon;
mod edge_arguments;
mod errors;
mod globals;
mod grad_mode;
mod hints;
mod interrupts;
mod lifetimes;
mod numbers;
mod operators;
mod printing;
mod python_spelling;
mod scoping;
mod size_overflow;
mod surface;
mod traceback;
