//! One CUDA device: its properties, its primary context and its one stream, made current on
//! whichever thread calls in.

use std::cell::Cell;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{result, sys};

use super::availability::check;
use super::error::{driver, CudaError, CudaResult};
use super::scratch::Scratch;

/// What the driver says about a device, known without creating a context.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The device's ordinal, as in `cuda:N`.
    pub index: usize,
    /// The marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub capability: (i32, i32),
    /// Number of streaming multiprocessors, for sizing grids.
    pub sm_count: u32,
    /// Resident threads per multiprocessor (reduction plans read it, as PyTorch's do).
    pub max_threads_per_sm: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Total device memory in bytes.
    pub total_memory: usize,
}

/// The driver's handles for one device. Raw pointers owned for the life of the process.
pub struct CudaContext {
    /// What the driver reported about the device.
    pub info: DeviceInfo,
    pub(crate) device: sys::CUdevice,
    pub(crate) ctx: sys::CUcontext,
    pub(crate) stream: sys::CUstream,
    /// Scratch device memory outside the caching allocator (operands cast to a kernel's dtype,
    /// cuRAND staging), as cuBLAS and cuRAND keep their own internal buffers outside it too.
    /// Reductions split across blocks stage through the caching allocator instead, as PyTorch's do.
    /// Each lives in an address range of its own (Note [scratch placement]).
    scratch: [Mutex<Scratch>; SCRATCH_SLOTS],
}

// SAFETY: CUDA contexts and streams may be used from any thread once made current there; every
// entry point calls `bind()` first.
unsafe impl Send for CudaContext {}
unsafe impl Sync for CudaContext {}

/// Independent scratch buffers one operation may hold at once (two cast operands, partials, output).
pub const SCRATCH_SLOTS: usize = 4;

/// Every visible device, discovered once.
pub fn devices() -> CudaResult<&'static [DeviceInfo]> {
    static INFOS: OnceLock<Result<Vec<DeviceInfo>, CudaError>> = OnceLock::new();
    INFOS.get_or_init(discover).as_deref().map_err(Clone::clone)
}

fn discover() -> CudaResult<Vec<DeviceInfo>> {
    check().clone().map_err(CudaError::Unavailable)?;
    let count = result::device::get_count().map_err(|e| driver("cuDeviceGetCount", e))?;
    (0..count).map(|i| device_info(i as usize)).collect()
}

fn device_info(index: usize) -> CudaResult<DeviceInfo> {
    let dev = result::device::get(index as i32).map_err(|e| driver("cuDeviceGet", e))?;
    let attr = |a| {
        // SAFETY: `dev` came from cuDeviceGet.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| driver("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute::*;
    Ok(DeviceInfo {
        index,
        name: result::device::get_name(dev).map_err(|e| driver("cuDeviceGetName", e))?,
        capability: (
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ),
        sm_count: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        max_threads_per_sm: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
        warp_size: attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE)? as u32,
        // SAFETY: as above.
        total_memory: unsafe { result::device::total_mem(dev) }
            .map_err(|e| driver("cuDeviceTotalMem", e))?,
    })
}

type ContextSlot = OnceLock<Result<Arc<CudaContext>, CudaError>>;

/// The context of device `index`, created on first use (this is what the first `.cuda()` pays).
pub fn context(index: usize) -> CudaResult<Arc<CudaContext>> {
    static CONTEXTS: OnceLock<Vec<ContextSlot>> = OnceLock::new();
    let infos = devices()?;
    let slots = CONTEXTS.get_or_init(|| infos.iter().map(|_| OnceLock::new()).collect());
    let slot = slots.get(index).ok_or_else(|| {
        CudaError::Unsupported(format!(
            "CUDA error: invalid device ordinal {index} (this machine has {} CUDA device(s))",
            infos.len()
        ))
    })?;
    slot.get_or_init(|| CudaContext::create(infos[index].clone()).map(Arc::new))
        .clone()
}

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

impl CudaContext {
    fn create(info: DeviceInfo) -> CudaResult<Self> {
        let device =
            result::device::get(info.index as i32).map_err(|e| driver("cuDeviceGet", e))?;
        // SAFETY: `device` came from cuDeviceGet; the primary context is what PyTorch uses too.
        let ctx = unsafe { result::primary_ctx::retain(device) }
            .map_err(|e| driver("cuDevicePrimaryCtxRetain", e))?;
        unsafe { result::ctx::set_current(ctx) }.map_err(|e| driver("cuCtxSetCurrent", e))?;
        CURRENT.with(|c| c.set(ctx as usize));
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| driver("cuStreamCreate", e))?;
        Ok(Self {
            info,
            device,
            ctx,
            stream,
            scratch: Default::default(),
        })
    }

    /// Make this context current on the calling thread (a no-op when it already is).
    pub fn bind(&self) -> CudaResult<()> {
        if CURRENT.with(|c| c.get()) == self.ctx as usize {
            return Ok(());
        }
        // SAFETY: the context is retained for the life of the process.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| driver("cuCtxSetCurrent", e))?;
        CURRENT.with(|c| c.set(self.ctx as usize));
        Ok(())
    }

    /// Wait for everything queued on this device's stream.
    pub fn synchronize(&self) -> CudaResult<()> {
        self.bind()?;
        // SAFETY: the stream lives as long as the context.
        unsafe { result::stream::synchronize(self.stream) }
            .map_err(|e| driver("cuStreamSynchronize", e))
    }

    /// `(free, total)` bytes of the device, as `cuMemGetInfo` reports them.
    pub fn mem_get_info(&self) -> CudaResult<(usize, usize)> {
        self.bind()?;
        result::mem_get_info().map_err(|e| driver("cuMemGetInfo", e))
    }

    /// A scratch buffer of at least `bytes`, private to the backend and invisible to the
    /// allocator's statistics. The caller must finish using it before the next call (one stream
    /// orders that). `slot` < SCRATCH_SLOTS picks one of several independent buffers.
    pub fn scratch(&self, slot: usize, bytes: usize) -> CudaResult<sys::CUdeviceptr> {
        let mut guard = self.scratch[slot].lock().unwrap_or_else(|p| p.into_inner());
        self.bind()?;
        guard.ensure(self.device, self.info.total_memory, bytes)
    }
}
