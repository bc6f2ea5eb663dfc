//! The front ends as users run them: the command line, the REPL, the Jupyter kernel, JupyterLab, the scripts.
#[path = "../common/mod.rs"]
mod common;

mod browser;
mod cli;
mod fit;
mod jupyter_venv;
mod kernel_install;
mod kernel_jupyter;
mod kernel_python;
mod kernel_wire;
mod python;
mod python_explain;
mod repl_commands;
mod repl_complete;
mod repl_terminal;
mod scripts;
mod self_contained;
mod snapshot_viewer;
