//! The real GPU: kernels against the host, NVRTC compiles, and device faults.
#[path = "../common/mod.rs"]
mod common;

mod compile;
mod faults;
mod kernels;
