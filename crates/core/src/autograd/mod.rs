//! Autograd: grad mode (thread-local, RAII guards), graph nodes with saved tensors, `backward`.
//!
//! Map: `mode` is grad mode (whether ops record a graph), switched by guards that restore on drop;
//! `graph` holds the nodes (one backward function per op, edges to its inputs' nodes, saved
//! tensors); `engine` walks the graph back from a scalar and accumulates leaves' `.grad`;
//! `capture` is what `autograd.grad` asks of a pass (the inputs' gradients, only what leads there);
//! `checkpoint` leaves saved tensors out of the forward and makes them again when backward needs
//! them (PyTorch's non-reentrant `checkpoint`); `hooks` are gradient hooks, nodes whose backward
//! the caller gives (`autograd.Function`) and callbacks at the end of a pass.

mod capture;
pub mod checkpoint;
mod engine;
mod graph;
pub mod hooks;
mod mode;

pub use engine::{backward, backward_from, backward_many, backward_to, grad};
pub use graph::{forget_unclaimed_saves, Edge, MultiGradFn, Node, SavedTensor};
pub(crate) use graph::{needs_grad, record, record_multi, GradFn};
pub use mode::{
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode, no_grad, set_grad_enabled,
    GradModeGuard,
};
