//! The simulated CUDA device: memory from a caching allocator over host memory, host kernels.

use std::sync::Arc;

use crate::alloc::{AllocConfig, CachingAllocator, DeviceAllocator, DevicePtr, SimulatedMemory};
use crate::device::backend::{Backend, BinaryOp, Distribution, Operand, ReduceOp, UnaryOp};
use crate::device::Device;
use crate::host_kernel_methods;
use crate::tensor::{Result, Scalar};

/// A GPU of a fixed capacity simulated in host memory; the allocator's numbers are PyTorch's.
pub struct SimBackend {
    index: usize,
    capacity: u64,
    allocator: Arc<CachingAllocator<SimulatedMemory>>,
}

impl SimBackend {
    /// Simulated `cuda:index` with `capacity` bytes.
    pub fn new(index: usize, capacity: u64, config: AllocConfig) -> SimBackend {
        let memory = SimulatedMemory::new(capacity as usize);
        SimBackend {
            index,
            capacity,
            allocator: Arc::new(CachingAllocator::new(index, memory, config)),
        }
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
        Ok(self.allocator.malloc(bytes, 0, None)?)
    }
    fn free(&self, ptr: DevicePtr, _bytes: usize) {
        // A pointer this storage got from malloc cannot be unknown to the allocator.
        let _ = self.allocator.free(ptr);
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    host_kernel_methods!();
}
