//! torchlet: a Rhai tensor language over a PyTorch-exact CUDA caching allocator.
//!
//! Data flows one way: front end → `session` → `script` → `optim`/`nn` → `tensor`/`autograd` →
//! `device` → `alloc`
//! and `types`, the shared vocabulary (dtype, scalar, layout, error) at the bottom.

pub mod alloc;
pub mod autograd;
pub mod device;
pub mod fit;
pub mod kernel;
pub mod nn;
pub mod optim;
pub mod repl;
pub mod runner;
pub mod script;
pub mod session;
pub mod tensor;
pub mod types;

#[cfg(test)]
mod layers;
