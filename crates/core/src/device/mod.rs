//! Devices (`cpu`, `cuda:N`), the registry of devices, and their backends.
//!
//! Map: `backend` is the trait every device implements (memory, copies, elementwise ops,
//! reductions, matmul, softmax, losses); `ops` is the elementwise op table — one row per op gives
//! `UnaryOp`/`BinaryOp`, the host formulas, the kernel names and the CUDA functors. `cpu` runs the
//! kernels on the host, `sim` is a CUDA-like device in host memory (the CPU kernels over a
//! simulated caching allocator), `cuda` the real GPU through cudarc (kernels compiled by NVRTC at
//! run time from `cuda/kernels` plus the table's functors), `shapes` the shapes-only simulated GPU
//! of `torchlet fit` (every allocation, no math). `storage` is one device allocation shared by a
//! tensor and its views, freed with its last handle. `registry` owns the process's devices;
//! `reduce_plan` is PyTorch's reduction launch plan (its staging memory shows in the allocator),
//! `cub_scratch` the temporary storage of CUB's sorts and scans;
//! `reduction` is the vocabulary of a reduction's row (fold, finish, dtype rule, partials), whose
//! `ReduceOp` the table in `tensor/reduce_list.rs` declares;
//! `peer`, `collective` and `blas_handle` cover cross-device copies, NCCL-style collectives and
//! cuBLAS workspaces. Below this module is only `torchlet_alloc` (the allocator and `types`), and
//! of `tensor` only the reduction table's `ReduceOp`.

pub mod backend;
pub mod blas_handle;
pub mod collective;
pub mod cpu;
pub mod cub_scratch;
pub mod cuda;
pub mod ops;
pub mod peer;
pub mod reduce_plan;
pub mod reduction;
mod registry;
pub mod shapes;
pub mod sim;
mod storage;

use std::fmt;
use std::sync::Arc;

pub use backend::{
    Backend, BinaryOp, Distribution, Operand, ReduceOp, ReduceOut, StagingMemory, UnaryOp,
};
pub use registry::{
    backend, blas_workspaces, clear_blas_workspaces, cuda_allocator, cuda_device_count,
    cuda_is_available, current_device, get_device_name, init_shapes_only, is_simulated, parse_size,
    set_device, shapes_only, started_cuda_allocator, started_cuda_allocators, synchronize,
};
pub use storage::Storage;

use torchlet_alloc::types::{Result, TensorError};

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// CUDA device `index` (real or simulated).
    Cuda(usize),
    /// PyTorch's `meta` device: shapes and dtypes, no memory and no values (Note [meta device]).
    Meta,
}

impl Device {
    /// Parse "cpu", "cuda" (the current device), "cuda:N".
    pub fn parse(s: &str) -> Result<Device> {
        let s = s.trim();
        match s {
            "cpu" => return Ok(Device::Cpu),
            "cuda" => return Ok(Device::Cuda(current_device())),
            _ => {}
        }
        if let Some(n) = s.strip_prefix("cuda:") {
            if let Ok(i) = n.parse::<usize>() {
                return Ok(Device::Cuda(i));
            }
        }
        if let Some(n) = s.strip_prefix("cpu:") {
            if n == "0" {
                return Ok(Device::Cpu);
            }
        }
        if s == "meta" || s == "meta:0" {
            return Ok(Device::Meta);
        }
        Err(TensorError::runtime(format!(
            "Expected one of cpu, cuda, meta device type at start of device string: {s}"
        )))
    }

    /// Whether this is a CUDA device.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => write!(f, "cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Meta => write!(f, "meta"),
        }
    }
}

/// Set up the device registry once per process; `simulate` is `--simulate-cuda`'s value
/// ("16GiB,8GiB" gives simulated cuda:0 and cuda:1). Calling it again with the same value is a no-op.
pub fn init(simulate: Option<&str>) -> std::result::Result<(), String> {
    registry::init(simulate)
}

/// The CPU backend.
pub fn cpu_backend() -> Arc<dyn Backend> {
    registry::cpu()
}
