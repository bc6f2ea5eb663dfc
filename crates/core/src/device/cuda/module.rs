//! Loaded kernel modules of one device (one per element type, loaded on first use) and kernel
//! launches on the device's stream.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cudarc::driver::{result, sys};

use super::compile;
use super::context::CudaContext;
use super::elem::CudaDType;
use super::error::{driver, CudaError, CudaResult};
use super::kernel_name::KernelName;
use torchlet_alloc::types::DType;

/// One loaded module.
struct Module {
    module: sys::CUmodule,
}

/// Numbers each `Kernels`, so that a thread's cached handles never outlive their modules' owner
/// under a reused address.
static NEXT_KERNELS_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's kernel handles by (`Kernels::id`, name). A launch finds its kernel here
    /// without making a string or taking a lock; a kernel's first launch on a thread formats its
    /// name and asks the driver (which returns the same handle every time).
    static HANDLES: RefCell<HashMap<(u64, KernelName), usize>> = RefCell::new(HashMap::new());
}

/// The kernels of one device.
pub struct Kernels {
    id: u64,
    arch: String,
    driver: i32,
    modules: [OnceLock<Result<Module, CudaError>>; 8],
}

// SAFETY: module and function handles are plain driver handles usable from any thread with the
// context bound.
unsafe impl Send for Kernels {}
unsafe impl Sync for Kernels {}

/// Threads per block for every launch (the reductions' shared arrays assume 256).
pub const BLOCK: u32 = 256;

impl Kernels {
    /// Kernels for a device of compute capability `(major, minor)`.
    pub fn new(capability: (i32, i32)) -> Self {
        let mut version = 0;
        // SAFETY: a plain out-parameter.
        unsafe { sys::cuDriverGetVersion(&mut version) };
        Self {
            id: NEXT_KERNELS_ID.fetch_add(1, Ordering::Relaxed),
            arch: format!("sm_{}{}", capability.0, capability.1),
            driver: version,
            modules: Default::default(),
        }
    }

    /// Compile (or read from the disk cache) and load every module now, in parallel.
    pub fn preload(&self, ctx: &CudaContext) -> CudaResult<()> {
        let images: Vec<CudaResult<(Vec<u8>, bool)>> = std::thread::scope(|s| {
            let handles: Vec<_> = DType::ALL
                .iter()
                .map(|&e| s.spawn(move || compile::cubin(e, &self.arch, self.driver)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CudaError::Call("kernel compile thread panicked".into()))
                    })
                })
                .collect()
        });
        for (elem, image) in DType::ALL.iter().zip(images) {
            let (image, _) = image?;
            if let Err(e) = self.modules[elem.slot()].get_or_init(|| load(ctx, &image)) {
                return Err(e.clone());
            }
        }
        Ok(())
    }

    fn loaded(&self, ctx: &CudaContext, elem: DType) -> CudaResult<&Module> {
        self.modules[elem.slot()]
            .get_or_init(|| {
                let (image, _) = compile::cubin(elem, &self.arch, self.driver)?;
                load(ctx, &image)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The kernel `name`, from the module of its last dtype.
    pub fn function(&self, ctx: &CudaContext, name: KernelName) -> CudaResult<sys::CUfunction> {
        let key = (self.id, name);
        if let Some(f) = HANDLES.with(|h| h.borrow().get(&key).copied()) {
            return Ok(f as sys::CUfunction);
        }
        let module = self.loaded(ctx, name.module())?;
        let cname = CString::new(name.to_string())
            .map_err(|_| CudaError::Call("kernel name has a NUL".into()))?;
        // SAFETY: the module is loaded in this context.
        let f = unsafe { result::module::get_function(module.module, cname) }
            .map_err(|e| driver(&format!("cuModuleGetFunction({name})"), e))?;
        HANDLES.with(|h| h.borrow_mut().insert(key, f as usize));
        Ok(f)
    }
}

fn load(ctx: &CudaContext, image: &[u8]) -> CudaResult<Module> {
    ctx.bind()?;
    // SAFETY: `image` is a complete cubin for this device's architecture.
    let module = unsafe { result::module::load_data(image.as_ptr().cast()) }
        .map_err(|e| driver("cuModuleLoadData", e))?;
    Ok(Module { module })
}

/// Blocks per SM of the grid-stride launches that keep a fixed cap (`Gpu::grid`).
pub const BLOCKS_PER_SM: u32 = 8;

/// Most blocks in one launch's grid (CUDA's limit on `gridDim.x`).
pub const MAX_GRID: u32 = i32::MAX as u32;

/// Grid size for `n` work items (a thread each) of a grid-stride kernel: the blocks the items
/// need, at most `cap`.
pub fn grid_for(n: usize, cap: u32) -> u32 {
    let needed = n.div_ceil(BLOCK as usize).max(1);
    needed.min(cap.max(1) as usize) as u32
}

/// Launch `f` on the context's stream with `params` (pointers to each argument's value).
pub(crate) fn launch(
    ctx: &CudaContext,
    f: sys::CUfunction,
    grid: (u32, u32, u32),
    block: u32,
    params: &mut [*mut c_void],
) -> CudaResult<()> {
    ctx.bind()?;
    // SAFETY: `params` match the kernel's signature (the caller's contract) and every pointer
    // argument is device memory that outlives the stream-ordered launch.
    unsafe { result::launch_kernel(f, grid, (block, 1, 1), 0, ctx.stream, params) }
        .map_err(|e| driver("cuLaunchKernel", e))
}
