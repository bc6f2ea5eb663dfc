//! Autograd: grad mode (thread-local, RAII guards), graph nodes with saved tensors, `backward`.

pub mod checkpoint;
mod engine;
mod graph;
mod mode;

pub use engine::backward;
pub use graph::{forget_unclaimed_saves, Edge, Node, SavedTensor};
pub(crate) use graph::{needs_grad, record, record_multi};
pub use mode::{
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode, no_grad, set_grad_enabled,
    GradModeGuard,
};
