//! The raw device memory the caching allocator sits on: `cuMemAlloc`/`cuMemFree`/`cuMemGetInfo`.

/// A device address, as the driver hands it out.
pub type DevicePtr = u64;

/// Why the raw memory refused a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RawError {
    /// The device has no room (`CUDA_ERROR_OUT_OF_MEMORY`): the allocator may flush its cache and retry.
    #[error("out of memory")]
    OutOfMemory,
    /// The operation is not available on this memory (e.g. virtual memory management).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// Any other driver failure; raised to the user as it is.
    #[error("{0}")]
    Driver(String),
}

/// Raw bytes of one device, one call per segment. Implemented by the real GPU (cudarc) and by the
/// simulated GPU (host memory with a fixed capacity).
pub trait RawMemory: Send + 'static {
    /// Allocate `bytes` (a whole segment), like `cuMemAlloc`.
    fn allocate(&mut self, bytes: usize) -> Result<DevicePtr, RawError>;
    /// Return a segment obtained from `allocate`, like `cuMemFree`.
    fn free(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError>;
    /// `(free, total)` bytes of the whole device, like `cuMemGetInfo`.
    fn mem_get_info(&self) -> Result<(usize, usize), RawError>;
    /// Bytes this process holds on the device, when known (NVML's per-process figure on a real
    /// GPU); it feeds the "this process has … in use" part of the out-of-memory message.
    fn process_memory_in_use(&self) -> Option<usize> {
        None
    }

    /// Reserve `bytes` of address space with nothing behind it (`cuMemAddressReserve`), for
    /// expandable segments.
    fn reserve(&mut self, _bytes: usize) -> Result<DevicePtr, RawError> {
        Err(RawError::Unsupported("expandable segments".into()))
    }
    /// Give back a reservation made by `reserve` (everything in it must be unmapped).
    fn release_reservation(&mut self, _ptr: DevicePtr, _bytes: usize) -> Result<(), RawError> {
        Err(RawError::Unsupported("expandable segments".into()))
    }
    /// Back `[ptr, ptr+bytes)` inside a reservation with physical memory, readable and writable
    /// (`cuMemCreate` + `cuMemMap` + `cuMemSetAccess`). `bytes` is a multiple of the page size used.
    fn map(&mut self, _ptr: DevicePtr, _bytes: usize) -> Result<(), RawError> {
        Err(RawError::Unsupported("expandable segments".into()))
    }
    /// Release the physical memory behind `[ptr, ptr+bytes)` (`cuMemUnmap` + `cuMemRelease`).
    fn unmap(&mut self, _ptr: DevicePtr, _bytes: usize) -> Result<(), RawError> {
        Err(RawError::Unsupported("expandable segments".into()))
    }
}
