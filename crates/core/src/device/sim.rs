//! The simulated CUDA device: memory from a caching allocator over host memory, host kernels
//! (reductions through the staging memory an H200's plan gives them).

use std::sync::Arc;

use crate::device::backend::{
    Backend, BinaryOp, Distribution, Operand, ReduceOp, ReduceOut, UnaryOp,
};
use crate::device::blas_handle::{Workspace, WorkspaceSlots};
use crate::device::reduce_plan::DeviceProps;
use crate::device::Device;
use crate::host_kernel_methods;
use torchlet_alloc::types::{Result, Scalar};
use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, DevicePtr, SimulatedMemory};

/// A GPU of a fixed capacity simulated in host memory; the allocator's numbers are PyTorch's.
pub struct SimBackend {
    index: usize,
    capacity: u64,
    allocator: Arc<CachingAllocator<SimulatedMemory>>,
    /// The cuBLAS-like workspace of each handle, allocated at the handle's first matrix product
    /// and kept, as PyTorch does.
    workspaces: WorkspaceSlots,
    /// The cuBLASLt workspace of each handle, taken at its first addmm with a bias epilogue.
    lt_workspaces: WorkspaceSlots,
}

/// PyTorch's cuBLAS workspace on Hopper GPUs: 32 MiB, taken from the caching allocator.
///
/// Note [cuBLAS workspace]: PyTorch allocates it through the caching allocator at a handle's
/// first matrix product, so it shows in `memory_allocated()` (+32 MiB on an H200) and stays
/// through `del` and `empty_cache()`; only clearing the workspaces frees it.
pub const CUBLAS_WORKSPACE_BYTES: usize = 32 << 20;

/// PyTorch's cuBLASLt workspace (`CUBLASLT_WORKSPACE_SIZE`, 1024 KiB by default), one per handle.
pub const CUBLASLT_WORKSPACE_BYTES: usize = 1 << 20;

impl SimBackend {
    /// Simulated `cuda:index` with `capacity` bytes.
    pub fn new(index: usize, capacity: u64, config: AllocConfig) -> SimBackend {
        let memory = SimulatedMemory::new(capacity as usize);
        SimBackend {
            index,
            capacity,
            allocator: Arc::new(CachingAllocator::new(index, memory, config)),
            workspaces: Default::default(),
            lt_workspaces: Default::default(),
        }
    }

    /// The stream this thread's work on this device goes to now.
    fn stream(&self) -> torchlet_alloc::StreamId {
        torchlet_alloc::stream::current(self.index)
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
        let site = torchlet_alloc::site::current();
        Ok(self.allocator.malloc_tagged(bytes, self.stream(), site)?)
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
        let kinds = [
            (&self.workspaces, CUBLAS_WORKSPACE_BYTES),
            (&self.lt_workspaces, CUBLASLT_WORKSPACE_BYTES),
        ];
        kinds
            .into_iter()
            .flat_map(|(slots, bytes)| {
                slots.all().into_iter().map(move |(handle, ptr)| Workspace {
                    handle,
                    ptr,
                    bytes: bytes as u64,
                })
            })
            .collect()
    }
    fn clear_blas_workspaces(&self) {
        for ptr in self
            .workspaces
            .clear()
            .into_iter()
            .chain(self.lt_workspaces.clear())
        {
            let _ = self.allocator.free(ptr);
        }
    }
    fn matmul(&self, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
        self.take_workspace()?;
        crate::device::cpu::kernels::matmul(lhs, rhs, dst)
    }
    fn addmm(
        &self,
        bias: Operand,
        lhs: Operand,
        rhs: Operand,
        dst: Operand,
        lt: bool,
    ) -> Result<()> {
        self.take_addmm_workspaces(lt)?;
        crate::device::cpu::kernels::addmm(bias, lhs, rhs, dst)
    }
    host_kernel_methods!();
}

impl SimBackend {
    /// The current cuBLAS handle's workspace, taken from the allocator at its first matmul.
    pub(crate) fn take_workspace(&self) -> Result<()> {
        self.workspace(&self.workspaces, CUBLAS_WORKSPACE_BYTES)
    }

    /// An addmm's workspaces: PyTorch takes the cuBLAS handle's first, then cuBLASLt's.
    pub(crate) fn take_addmm_workspaces(&self, lt: bool) -> Result<()> {
        self.take_workspace()?;
        if lt {
            self.workspace(&self.lt_workspaces, CUBLASLT_WORKSPACE_BYTES)?;
        }
        Ok(())
    }

    /// The current handle's workspace in `slots`, allocated (and kept) on its first use.
    fn workspace(&self, slots: &WorkspaceSlots, bytes: usize) -> Result<()> {
        // Tagged with the statement, so a peak it makes (and its snapshot block) names one.
        slots.ensure(self.stream(), || {
            let site = torchlet_alloc::site::current();
            let ptr = self.allocator.malloc_tagged(bytes, self.stream(), site)?;
            self.allocator
                .set_role(ptr, torchlet_alloc::Role::Workspace);
            Ok(ptr)
        })
    }
}
