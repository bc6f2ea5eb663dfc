//! The real GPU: kernels against the host, NVRTC compiles, device faults; and the contiguous walk on the host.
#[path = "../common/mod.rs"]
mod common;

mod compile;
mod contig_walk;
mod faults;
mod kernels;
