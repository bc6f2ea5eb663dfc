//! `CudaMemory`: the real GPU's raw bytes for the caching allocator, through the driver's virtual
//! memory API (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`).

use std::collections::BTreeMap;
use std::sync::Arc;

use cudarc::driver::sys;

use super::context::{context, CudaContext};
use super::error::{driver, CudaResult};
use torchlet_alloc::{DevicePtr, Placement, RawError, RawMemory, GRANULE};

// Note [segments in a range of their own]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Best fit breaks ties between equal free blocks by address, so the order of the segments'
// addresses decides which block a request reuses (Note [segment placement] in torchlet-alloc's
// `placement.rs`). Under `cuMemAlloc` that order is the driver's, and the driver puts torchlet's
// segments between the memory torchlet's own process takes beside them (its kernel modules,
// cuBLAS's and cuDNN's), which is not the memory PyTorch's process takes: ResNet-50's training step
// reused a block of another segment at event 4155 on an H100 where PyTorch made a new segment,
// while the simulated GPU, which places segments by the model of the driver, gave every event.
// So a segment is physical memory (`cuMemCreate`) mapped into one address range reserved for the
// segments alone, at the address the model gives: the real GPU orders its segments as the
// simulated one does, whatever else the process loads.

/// Raw memory of one real CUDA device. Every byte the tensors use goes through here, via the
/// caching allocator; nothing uses cudarc's stream-ordered pool (it would hide memory from the
/// statistics).
pub struct CudaMemory {
    ctx: Arc<CudaContext>,
    /// Physical pages mapped into reservations: start address → (handle, bytes).
    mapped: BTreeMap<DevicePtr, (sys::CUmemGenericAllocationHandle, usize)>,
    /// Where each segment goes, in the range reserved for segments at the first one
    /// (Note [segments in a range of their own]).
    placement: Option<Placement>,
}

/// Large-pool pages are 20 MiB, as PyTorch's expandable segments use; small-pool pages 2 MiB.
const LARGE_PAGE: usize = 20 << 20;

impl CudaMemory {
    /// The raw memory of device `index` (creating its context if needed).
    pub fn new(index: usize) -> CudaResult<Self> {
        Ok(Self {
            ctx: context(index)?,
            mapped: BTreeMap::new(),
            placement: None,
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

    /// The address for a new segment of `bytes`, reserving the segments' range on first use.
    fn place(&mut self, bytes: usize) -> CudaResult<Option<DevicePtr>> {
        if self.placement.is_none() {
            let len = Placement::span(self.ctx.info.total_memory);
            let mut base: sys::CUdeviceptr = 0;
            // SAFETY: reserves address space only.
            unsafe { sys::cuMemAddressReserve(&mut base, len, GRANULE, 0, 0) }
                .result()
                .map_err(|e| driver("cuMemAddressReserve (segments)", e))?;
            self.placement = Some(Placement::new(base, base + len as u64));
        }
        Ok(self.placement.as_mut().expect("made above").place(bytes))
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
        let len = bytes.div_ceil(GRANULE) * GRANULE;
        // Out of addresses means out of memory: the range holds twice the device's memory.
        let ptr = self.place(len)?.ok_or(RawError::OutOfMemory)?;
        if let Err(e) = self.map_page(ptr, len) {
            self.placement.as_mut().expect("placed").release(ptr, len);
            return Err(e.into());
        }
        Ok(ptr)
    }

    fn free(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.ctx.bind()?;
        let len = bytes.div_ceil(GRANULE) * GRANULE;
        // unmap_range waits for queued kernels that still use the segment.
        self.unmap_range(ptr, len)?;
        if let Some(p) = self.placement.as_mut() {
            p.release(ptr, len);
        }
        Ok(())
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
