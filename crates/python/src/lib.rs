//! torchlet's Python language: PyTorch programs, as written, on torchlet's engine.
//!
//! Python runs on RustPython (`docs/python-frontend.md` says why), whose objects are reference
//! counted as CPython's are, so a tensor is freed when CPython would free it. `torch` is
//! torchlet's own: Python modules that keep PyTorch's signatures and classes (`nn.Module`,
//! `optim.AdamW`, `no_grad` …) over a native module, `torch._C`, that runs them on torchlet's
//! tensors, autograd and caching allocator.
//!
//! Map: `interpreter` (one interpreter and its `__main__`: run a file or snippets, errors as
//! tracebacks), `cell` (what a notebook kernel adds: cells with a last value, output to a sink,
//! interrupts), `introspect` (what a notebook asks between cells: completeness, completion, help on
//! a name), `watch` (the trace
//! function behind the per-line ledger and the leak warnings), `package` (the `torch` package's sources, part of the binary, and the finder that
//! imports them), `explanations` (the
//! variables walked for the front ends' magics), `native` (`torch._C`), `named_values` (the program's variables as the explanations see them).

mod cell;
mod explanations;
mod interpreter;
mod introspect;
mod named_values;
mod native;
mod package;
mod watch;

pub use cell::{Interrupter, OutputSink, Shown};
pub use interpreter::{Python, PythonError};
pub use introspect::{CellState, Completions};
pub use named_values::Walked;
