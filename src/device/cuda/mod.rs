//! The real CUDA backend over cudarc: device discovery, raw memory for the caching allocator,
//! NVRTC-compiled kernels, cuBLAS matmul and cuRAND fills.

pub mod blas;
pub mod compile;
pub mod context;
pub mod device;
pub mod elem;
pub mod error;
pub mod layout;
pub mod memory;
pub mod module;
pub mod ops;
pub mod probe;
pub mod reduce;
pub mod rng;

pub use context::{context, devices, CudaContext, DeviceInfo};
pub use device::CudaDevice;
pub use elem::Elem;
pub use error::{CudaError, CudaResult};
pub use memory::CudaMemory;

/// Whether a real CUDA GPU can be used (driver and libraries load, at least one device).
pub fn is_available() -> bool {
    probe::probe().is_ok()
}

/// Why CUDA is unavailable (what was looked for and how to simulate a GPU), or `None` when it is.
pub fn unavailable_reason() -> Option<String> {
    probe::probe().as_ref().err().cloned()
}

/// Number of real CUDA devices (0 without a driver).
pub fn device_count() -> usize {
    devices().map(|d| d.len()).unwrap_or(0)
}
