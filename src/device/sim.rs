//! The simulated CUDA device: memory from a caching allocator over host memory, host kernels
//! (reductions through the staging memory an H200's plan gives them).

use std::sync::{Arc, OnceLock};

use crate::alloc::{AllocConfig, CachingAllocator, DeviceAllocator, DevicePtr, SimulatedMemory};
use crate::device::backend::{
    Backend, BinaryOp, Distribution, Operand, ReduceOp, ReduceOut, UnaryOp,
};
use crate::device::blas_handle::{self, BlasHandle, Workspace, HANDLES};
use crate::device::reduce_plan::DeviceProps;
use crate::device::Device;
use crate::host_kernel_methods;
use crate::types::{Result, Scalar};

/// A GPU of a fixed capacity simulated in host memory; the allocator's numbers are PyTorch's.
pub struct SimBackend {
    index: usize,
    capacity: u64,
    allocator: Arc<CachingAllocator<SimulatedMemory>>,
    /// The cuBLAS-like workspace of each handle, allocated at the handle's first matrix product
    /// and kept, as PyTorch does.
    workspaces: [OnceLock<DevicePtr>; HANDLES],
}

/// PyTorch's cuBLAS workspace on Hopper GPUs (reference §3): 32 MiB, taken from the caching allocator.
pub const CUBLAS_WORKSPACE_BYTES: usize = 32 << 20;

impl SimBackend {
    /// Simulated `cuda:index` with `capacity` bytes.
    pub fn new(index: usize, capacity: u64, config: AllocConfig) -> SimBackend {
        let memory = SimulatedMemory::new(capacity as usize);
        SimBackend {
            index,
            capacity,
            allocator: Arc::new(CachingAllocator::new(index, memory, config)),
            workspaces: Default::default(),
        }
    }
}

impl SimBackend {
    /// The current cuBLAS handle's workspace, taken from the allocator at its first matmul.
    pub(crate) fn take_workspace(&self) -> Result<()> {
        let workspace = &self.workspaces[blas_handle::current() as usize];
        if workspace.get().is_none() {
            let ptr = self.allocator.malloc(CUBLAS_WORKSPACE_BYTES, 0, None)?;
            if workspace.set(ptr).is_err() {
                // Another thread made the workspace first; keep one, as a device has one handle.
                let _ = self.allocator.free(ptr);
            }
        }
        Ok(())
    }
}

impl Backend for SimBackend {
    fn device(&self) -> Device {
        Device::Cuda(self.index)
    }
    fn name(&self) -> String {
        format!(
            "torchlet simulated GPU ({:.2} GiB)",
            self.capacity as f64 / (1u64 << 30) as f64
        )
    }
    fn allocator(&self) -> Option<Arc<dyn DeviceAllocator>> {
        Some(self.allocator.clone())
    }
    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let site = crate::alloc::site::current();
        Ok(self.allocator.malloc_tagged(bytes, 0, site)?)
    }
    fn free(&self, ptr: DevicePtr, _bytes: usize) {
        // A pointer this storage got from malloc cannot be unknown to the allocator.
        let _ = self.allocator.free(ptr);
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn props(&self) -> Option<DeviceProps> {
        // The allocator's numbers are an H200's, so are its reductions' staging buffers.
        Some(DeviceProps::H200)
    }
    fn blas_workspaces(&self) -> Vec<Workspace> {
        [BlasHandle::Caller, BlasHandle::Autograd]
            .into_iter()
            .filter_map(|handle| {
                let ptr = *self.workspaces[handle as usize].get()?;
                Some(Workspace {
                    handle,
                    ptr,
                    bytes: CUBLAS_WORKSPACE_BYTES as u64,
                })
            })
            .collect()
    }
    fn matmul(&self, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
        self.take_workspace()?;
        crate::device::cpu::kernels::matmul(lhs, rhs, dst)
    }
    host_kernel_methods!();
}
