//! Loaded kernel modules of one device (one per element type, loaded on first use) and kernel
//! launches on the device's stream.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::{result, sys};

use super::compile;
use super::context::CudaContext;
use super::elem::CudaDType;
use super::error::{driver, CudaError, CudaResult};
use crate::types::DType;

/// One loaded module and the functions looked up in it so far.
struct Module {
    module: sys::CUmodule,
    functions: Mutex<HashMap<String, usize>>,
}

/// The kernels of one device.
pub struct Kernels {
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

    /// The kernel `name` of `elem`'s module (e.g. `unary_c_exp_f32`).
    pub fn function(
        &self,
        ctx: &CudaContext,
        elem: DType,
        name: &str,
    ) -> CudaResult<sys::CUfunction> {
        let module = self.loaded(ctx, elem)?;
        let mut cache = module.functions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&f) = cache.get(name) {
            // The launch path: no string is made and nothing is written.
            return Ok(f as sys::CUfunction);
        }
        let cname =
            CString::new(name).map_err(|_| CudaError::Call("kernel name has a NUL".into()))?;
        // SAFETY: the module is loaded in this context.
        let f = unsafe { result::module::get_function(module.module, cname) }
            .map_err(|e| driver(&format!("cuModuleGetFunction({name})"), e))?;
        cache.insert(name.to_string(), f as usize);
        Ok(f)
    }
}

fn load(ctx: &CudaContext, image: &[u8]) -> CudaResult<Module> {
    ctx.bind()?;
    // SAFETY: `image` is a complete cubin for this device's architecture.
    let module = unsafe { result::module::load_data(image.as_ptr().cast()) }
        .map_err(|e| driver("cuModuleLoadData", e))?;
    Ok(Module {
        module,
        functions: Mutex::new(HashMap::new()),
    })
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
