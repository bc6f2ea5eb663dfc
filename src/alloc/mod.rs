//! The CUDA caching allocator, exactly as PyTorch's behaves, generic over raw device memory.

mod raw;

pub use raw::{DevicePtr, RawError, RawMemory};
