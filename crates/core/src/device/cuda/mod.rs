//! The real CUDA backend over cudarc: device discovery, raw memory for the caching allocator,
//! NVRTC-compiled kernels, cuBLAS matmul, cuRAND fills, peer copies and NCCL collectives; `probe`
//! wraps each GPU in a `Backend`.
//!
//! Map: `availability` checks for a usable CUDA installation before any cudarc call (cudarc
//! panics on a missing library); `context` is one device's properties, primary context and
//! stream, `device` everything held for one GPU (`CudaDevice`) and its host↔device copies,
//! `backend` the `Backend` trait over it (`CudaBackend`), `memory` the raw bytes and virtual
//! memory under the caching allocator, `scratch` the backend's own buffers beside it (address
//! ranges of their own); `error` turns CUDA failures into actionable values.
//! Kernels: `compile` compiles `kernels/` with NVRTC and caches the binaries on disk, `functors`
//! writes the op table's functors into that source, `module` loads the modules and launches,
//! `kernel_name` names kernels without building strings, `elem` maps each `DType` to its CUDA C
//! types, `layout` passes strided operands to kernels (merging dimensions), `rows` spreads a row
//! over registers for the row kernels. Launchers: `ops` (elementwise, casts, fills, scatter),
//! `reduce` (reductions, softmax, NLL loss), `indexing` (index and mask kernels), `norm` (layer
//! norm, dropout), `attention` (fused SDPA), `conv` (convolution, pooling, batch norm), `blas` (cuBLAS matmul with the workspace from the caching allocator), `rng`
//! (cuRAND fills). Between devices: `peer` (peer-to-peer copies) and `nccl` (collectives).
//! `fault` provokes a real kernel fault for the GPU tests.

pub mod attention;
pub mod availability;
pub mod backend;
pub mod blas;
pub mod compile;
pub mod context;
pub mod conv;
pub mod device;
pub mod elem;
pub mod error;
pub mod fault;
pub mod functors;
pub mod indexing;
pub mod kernel_name;
pub mod layout;
pub mod memory;
pub mod module;
pub mod nccl;
pub mod norm;
pub mod ops;
pub mod peer;
pub mod reduce;
pub mod rng;
pub mod rows;
pub mod scratch;

use std::sync::Arc;

pub use backend::CudaBackend;
pub use context::{context, devices, CudaContext, DeviceInfo};
pub use device::CudaDevice;
pub use elem::CudaDType;
pub use error::{CudaError, CudaResult};
pub use memory::CudaMemory;

use super::Backend;

/// Whether a real CUDA GPU can be used (driver and libraries load, at least one device).
pub fn is_available() -> bool {
    availability::check().is_ok()
}

/// Why CUDA is unavailable (what was looked for), or `None` when it is available.
pub fn unavailable_reason() -> Option<String> {
    availability::check().as_ref().err().cloned()
}

/// Number of real CUDA devices (0 without a driver).
pub fn device_count() -> usize {
    devices().map(|d| d.len()).unwrap_or(0)
}

/// The CUDA devices of this machine, each as a backend with its own caching allocator, or why
/// there are none (what was looked for; the registry adds how to simulate a GPU).
pub fn probe() -> Result<Vec<Arc<dyn Backend>>, String> {
    availability::check().clone()?;
    let config = torchlet_alloc::AllocConfig::from_env().map_err(|e| e.to_string())?;
    (0..device_count())
        .map(|i| {
            CudaBackend::new(i, config.clone())
                .map(|b| Arc::new(b) as Arc<dyn Backend>)
                .map_err(|e| format!("cuda:{i}: {e}"))
        })
        .collect()
}
