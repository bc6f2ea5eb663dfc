//! `CudaMemory`: the real GPU's raw bytes for the caching allocator, through `cuMemAlloc`/`cuMemFree`
//! and, for expandable segments, the virtual memory API (`cuMemAddressReserve`, `cuMemCreate`,
//! `cuMemMap`, `cuMemSetAccess`).

use std::collections::BTreeMap;
use std::sync::Arc;

use cudarc::driver::{result, sys};

use super::context::{context, CudaContext};
use super::error::{driver, CudaResult};
use torchlet_alloc::{DevicePtr, RawError, RawMemory};

/// Raw memory of one real CUDA device. Every byte the tensors use goes through here, via the
/// caching allocator; nothing uses cudarc's stream-ordered pool (it would hide memory from the
/// statistics).
pub struct CudaMemory {
    ctx: Arc<CudaContext>,
    /// Physical pages mapped into reservations: start address → (handle, bytes).
    mapped: BTreeMap<DevicePtr, (sys::CUmemGenericAllocationHandle, usize)>,
}

/// Large-pool pages are 20 MiB, as PyTorch's expandable segments use; small-pool pages 2 MiB.
const LARGE_PAGE: usize = 20 << 20;

impl CudaMemory {
    /// The raw memory of device `index` (creating its context if needed).
    pub fn new(index: usize) -> CudaResult<Self> {
        Ok(Self {
            ctx: context(index)?,
            mapped: BTreeMap::new(),
        })
    }

    /// The context this memory belongs to.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    fn prop(&self) -> sys::CUmemAllocationProp {
        // SAFETY: an all-zero prop is the documented default; then the fields that matter are set.
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = self.ctx.device;
        prop
    }

    /// Map one page of `bytes` at `ptr`; on failure nothing stays mapped.
    fn map_page(&mut self, ptr: DevicePtr, bytes: usize) -> CudaResult<()> {
        let prop = self.prop();
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: `prop` describes pinned device memory of this context's device.
        unsafe { sys::cuMemCreate(&mut handle, bytes, &prop, 0) }
            .result()
            .map_err(|e| driver("cuMemCreate", e))?;
        // SAFETY: `ptr..ptr+bytes` lies in a reservation of ours and is unmapped.
        if let Err(e) = unsafe { sys::cuMemMap(ptr, bytes, 0, handle, 0) }.result() {
            unsafe { sys::cuMemRelease(handle) };
            return Err(driver("cuMemMap", e));
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
            return Err(driver("cuMemSetAccess", e));
        }
        self.mapped.insert(ptr, (handle, bytes));
        Ok(())
    }

    fn unmap_range(&mut self, ptr: DevicePtr, bytes: usize) -> CudaResult<()> {
        let end = ptr + bytes as u64;
        let pages: Vec<_> = self
            .mapped
            .range(ptr..end)
            .map(|(&p, &(h, n))| (p, h, n))
            .collect();
        let covered: usize = pages.iter().map(|&(_, _, n)| n).sum();
        if covered != bytes || pages.last().is_some_and(|&(p, _, n)| p + n as u64 > end) {
            return Err(super::error::CudaError::Unsupported(format!(
                "unmap of {bytes} bytes at {ptr:#x} does not cover whole mapped pages"
            )));
        }
        // cuMemUnmap does not wait for kernels still reading the pages.
        self.ctx.synchronize()?;
        for (p, handle, n) in pages {
            // SAFETY: (p, n) was mapped by map_page with `handle`, and the stream is idle.
            unsafe { sys::cuMemUnmap(p, n) }
                .result()
                .map_err(|e| driver("cuMemUnmap", e))?;
            unsafe { sys::cuMemRelease(handle) }
                .result()
                .map_err(|e| driver("cuMemRelease", e))?;
            self.mapped.remove(&p);
        }
        Ok(())
    }
}

impl RawMemory for CudaMemory {
    fn allocate(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        self.ctx.bind()?;
        // SAFETY: a plain device allocation in the bound context.
        Ok(unsafe { result::malloc_sync(bytes) }
            .map_err(|e| driver(&format!("cuMemAlloc of {bytes} bytes"), e))?)
    }

    fn free(&mut self, ptr: DevicePtr, _bytes: usize) -> Result<(), RawError> {
        self.ctx.bind()?;
        // cuMemFree may return before queued kernels that use the segment finish on a
        // non-blocking stream; wait for them first.
        self.ctx.synchronize()?;
        // SAFETY: `ptr` came from `allocate` and the allocator frees each segment once.
        Ok(unsafe { result::free_sync(ptr) }.map_err(|e| driver("cuMemFree", e))?)
    }

    fn mem_get_info(&self) -> Result<(usize, usize), RawError> {
        Ok(self.ctx.mem_get_info()?)
    }

    fn reserve(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        self.ctx.bind()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // Align to the large page so both pools' pages tile the range.
        let size = bytes.div_ceil(2 << 20) * (2 << 20);
        // SAFETY: reserves address space only.
        unsafe { sys::cuMemAddressReserve(&mut ptr, size, 2 << 20, 0, 0) }
            .result()
            .map_err(|e| driver("cuMemAddressReserve", e))?;
        Ok(ptr)
    }

    fn release_reservation(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.ctx.bind()?;
        let size = bytes.div_ceil(2 << 20) * (2 << 20);
        let end = ptr + size as u64;
        let inside: Vec<(DevicePtr, usize)> = self
            .mapped
            .range(ptr..end)
            .map(|(&p, &(_, n))| (p, n))
            .collect();
        for (p, n) in inside {
            self.unmap_range(p, n)?;
        }
        // SAFETY: the reservation came from `reserve` with the same rounding.
        Ok(unsafe { sys::cuMemAddressFree(ptr, size) }
            .result()
            .map_err(|e| driver("cuMemAddressFree", e))?)
    }

    fn map(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.ctx.bind()?;
        // One physical handle per page, so any page can later be unmapped on its own.
        let page = if bytes.is_multiple_of(LARGE_PAGE) {
            LARGE_PAGE
        } else {
            2 << 20
        };
        if !bytes.is_multiple_of(page) {
            return Err(RawError::Unsupported(format!(
                "map of {bytes} bytes: not a whole number of 2 MiB pages"
            )));
        }
        let mut done = 0;
        while done < bytes {
            if let Err(e) = self.map_page(ptr + done as u64, page) {
                if done > 0 {
                    self.unmap_range(ptr, done)?;
                }
                return Err(e.into());
            }
            done += page;
        }
        Ok(())
    }

    fn unmap(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.ctx.bind()?;
        Ok(self.unmap_range(ptr, bytes)?)
    }
}
