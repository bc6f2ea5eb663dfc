//! Scratch buffers outside the caching allocator, each in an address range of its own: growing one
//! maps more pages behind it, so the backend never frees a range the driver would give a segment.

use cudarc::driver::sys;

use super::error::{driver, CudaError, CudaResult};

/// The driver's page for mapped memory (what `cuMemCreate` rounds to on an H200).
const PAGE: usize = 2 << 20;

// Note [scratch placement]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The driver hands each `cuMemAlloc` the lowest free range that fits, and reuses freed ranges
// first (Note [segment placement] in torchlet-alloc's `placement.rs`; `tests/data/
// driver_placement.json`, experiment `scratch/bare`: a freed 128 KiB scratch buffer's page is where
// the next 2 MiB segment goes, below the segments made before it). A scratch buffer that grew by
// `cuMemFree` + `cuMemAlloc` therefore moved the caching allocator's later segments below its earlier
// ones, which PyTorch's process never does, and changed which of two equal free blocks a request
// took. `cuMemAddressReserve` takes its ranges from a region of its own, far from `cuMemAlloc`'s
// (experiment `reserve/bare`), and growing maps pages after those already mapped, so scratch takes
// no range of the segments' heap and the buffer keeps its address.

/// One scratch buffer: a reservation, and the pages mapped from its start.
#[derive(Default)]
pub struct Scratch {
    base: sys::CUdeviceptr,
    reserved: usize,
    /// Bytes mapped from `base` upward.
    mapped: usize,
    /// The physical allocations behind them, kept for the life of the process.
    handles: Vec<sys::CUmemGenericAllocationHandle>,
}

impl Scratch {
    /// The buffer's address with at least `bytes` mapped behind it, reserving up to `span` bytes
    /// of addresses on first use. The caller has bound the context of `device`.
    pub fn ensure(
        &mut self,
        device: sys::CUdevice,
        span: usize,
        bytes: usize,
    ) -> CudaResult<sys::CUdeviceptr> {
        if bytes <= self.mapped && self.base != 0 {
            return Ok(self.base);
        }
        if self.base == 0 {
            let size = span.max(PAGE).div_ceil(PAGE) * PAGE;
            let mut ptr: sys::CUdeviceptr = 0;
            // SAFETY: reserves address space only.
            unsafe { sys::cuMemAddressReserve(&mut ptr, size, PAGE, 0, 0) }
                .result()
                .map_err(|e| driver("cuMemAddressReserve (scratch)", e))?;
            self.base = ptr;
            self.reserved = size;
        }
        let doubled = bytes
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(usize::MAX);
        let want = doubled.max(PAGE).min(self.reserved);
        if want < bytes {
            return Err(CudaError::OutOfMemory(format!(
                "a scratch buffer of {bytes} bytes is larger than the device's memory"
            )));
        }
        let grow = want - self.mapped;
        let handle = map(device, self.base + self.mapped as u64, grow)?;
        self.handles.push(handle);
        self.mapped = want;
        Ok(self.base)
    }
}

/// Back `[ptr, ptr+bytes)` (unmapped, inside a reservation) with fresh device memory, readable
/// and writable; on failure nothing stays mapped.
fn map(
    device: sys::CUdevice,
    ptr: sys::CUdeviceptr,
    bytes: usize,
) -> CudaResult<sys::CUmemGenericAllocationHandle> {
    // SAFETY: an all-zero prop is the documented default; then the fields that matter are set.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    let mut handle: sys::CUmemGenericAllocationHandle = 0;
    // SAFETY: `prop` describes pinned memory of this device.
    unsafe { sys::cuMemCreate(&mut handle, bytes, &prop, 0) }
        .result()
        .map_err(|e| driver("cuMemCreate (scratch)", e))?;
    // SAFETY: the range lies in a reservation of ours and is unmapped.
    if let Err(e) = unsafe { sys::cuMemMap(ptr, bytes, 0, handle, 0) }.result() {
        unsafe { sys::cuMemRelease(handle) };
        return Err(driver("cuMemMap (scratch)", e));
    }
    let access = sys::CUmemAccessDesc {
        location: prop.location,
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: the range was just mapped.
    if let Err(e) = unsafe { sys::cuMemSetAccess(ptr, bytes, &access, 1) }.result() {
        unsafe {
            sys::cuMemUnmap(ptr, bytes);
            sys::cuMemRelease(handle);
        }
        return Err(driver("cuMemSetAccess (scratch)", e));
    }
    Ok(handle)
}
