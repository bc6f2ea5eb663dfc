//! torchlet's tensor engine: devices and their backends, tensors, autograd, optimizers and `nn`.
//!
//! Map: `device` (the `Device` registry and one backend per device: `cpu`, `cuda`, `sim`, `shapes`),
//! `tensor` (tensors, views and ops over a backend), `autograd` (the graph and the engine that runs
//! it backwards), `optim` (SGD, Adam, AdamW), `nn` (parameter initialisation PyTorch's way).
//! Below it sits `torchlet_alloc`; nothing here knows a language or a front end.

pub mod autograd;
pub mod device;
pub mod nn;
pub mod optim;
pub mod tensor;
