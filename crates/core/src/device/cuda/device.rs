//! `CudaDevice`: everything torchlet holds for one real GPU (context, kernels, cuBLAS, cuRAND)
//! and the host↔device copies.

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys;

use super::blas::Blas;
use super::context::{context, CudaContext};
use super::error::{driver, CudaResult};
use super::module::Kernels;
use super::ops::Gpu;
use super::rng::Rng;

/// One real CUDA device and its libraries, created on first use.
pub struct CudaDevice {
    /// The device's context and stream.
    pub ctx: Arc<CudaContext>,
    /// Its kernel modules.
    pub kernels: Kernels,
    /// Its cuBLAS handles, one per [`crate::device::blas_handle::BlasHandle`], each with its own
    /// workspace as PyTorch's per-thread handles have.
    pub blas: [Blas; crate::device::blas_handle::HANDLES],
    /// Its cuRAND generator.
    pub rng: Rng,
}

impl CudaDevice {
    /// The device `index`, shared by everyone in the process.
    pub fn get(index: usize) -> CudaResult<Arc<CudaDevice>> {
        static DEVICES: OnceLock<std::sync::Mutex<Vec<Option<Arc<CudaDevice>>>>> = OnceLock::new();
        let mut all = DEVICES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(Some(dev)) = all.get(index) {
            return Ok(dev.clone());
        }
        let ctx = context(index)?;
        let dev = Arc::new(CudaDevice {
            kernels: Kernels::new(ctx.info.capability),
            ctx,
            blas: Default::default(),
            rng: Rng::default(),
        });
        if all.len() <= index {
            all.resize(index + 1, None);
        }
        all[index] = Some(dev.clone());
        // Each dtype's module is loaded (or compiled, on a cold cache) by the first op that needs
        // it. Loading them all on detached background threads hid that latency, but a process
        // that exited while a load was inside the driver crashed in libcuda's exit-time teardown
        // (seen on the H200), and waiting for them at exit doubled a short script's run time.
        Ok(dev)
    }

    /// The context and kernels, as the operations take them.
    pub fn gpu(&self) -> Gpu<'_> {
        Gpu {
            ctx: &self.ctx,
            kernels: &self.kernels,
        }
    }

    /// Copy host bytes to device address `dst`; returns once `src` may be reused.
    pub fn write_bytes(&self, dst: u64, src: &[u8]) -> CudaResult<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.bind()?;
        // SAFETY: `dst` holds at least src.len() bytes (the caller's storage). From pageable
        // memory the copy has consumed `src` when the call returns.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), src.len(), self.ctx.stream) }
            .result()
            .map_err(|e| driver("cuMemcpyHtoD", e))
    }

    /// Copy device bytes at `src` into `dst`, waiting for the work queued before.
    pub fn read_bytes(&self, src: u64, dst: &mut [u8]) -> CudaResult<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.ctx.bind()?;
        // SAFETY: `src` holds at least dst.len() bytes; the sync below completes the copy
        // before `dst` is handed back.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), self.ctx.stream)
        }
        .result()
        .map_err(|e| driver("cuMemcpyDtoH", e))?;
        self.ctx.synchronize()
    }

    /// Load every kernel module now (from the disk cache, or compiling in parallel).
    pub fn preload_kernels(&self) -> CudaResult<()> {
        self.kernels.preload(&self.ctx)
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({})", self.ctx.info.name)
    }
}
