//! A caching allocator of its own for a test, over simulated memory.
use torchlet_alloc::{AllocConfig, CachingAllocator, SimulatedMemory};

/// A new allocator for device 0 over simulated memory, with the default settings.
pub fn fresh_allocator() -> CachingAllocator<SimulatedMemory> {
    CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default())
}
