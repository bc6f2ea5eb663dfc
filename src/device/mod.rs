//! Devices (`cpu`, `cuda:N`), the registry of devices, and their backends.

pub mod backend;
pub mod blas_handle;
pub mod collective;
pub mod cpu;
pub mod cuda;
pub mod peer;
pub mod reduce_plan;
mod registry;
pub mod sim;
mod storage;

use std::fmt;
use std::sync::Arc;

pub use backend::{
    Backend, BinaryOp, Distribution, Operand, ReduceOp, ReduceOut, StagingMemory, UnaryOp,
};
pub use registry::{
    backend, blas_workspaces, cuda_allocator, cuda_device_count, cuda_is_available, current_device,
    get_device_name, is_simulated, parse_size, set_device, started_cuda_allocator,
    started_cuda_allocators, synchronize,
};
pub use storage::Storage;

use crate::tensor::{Result, TensorError};

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// CUDA device `index` (real or simulated).
    Cuda(usize),
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
        Err(TensorError::runtime(format!(
            "Expected one of cpu, cuda device type at start of device string: {s}"
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
