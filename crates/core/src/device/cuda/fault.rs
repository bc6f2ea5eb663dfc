//! A real kernel fault on demand, for the tests that check how one is reported (GPU test builds only expose it).
use std::ffi::{c_void, CString};

use cudarc::driver::result;

use super::compile;
use super::device::CudaDevice;
use super::error::{driver, CudaError, CudaResult};
use super::module::launch;

const SOURCE: &str =
    "extern \"C\" __global__ void torchlet_write_through_null(int *p) { p[threadIdx.x] = 1; }";

/// Launch on cuda:`index`'s stream a kernel that writes through a null pointer.
///
/// The launch itself succeeds: the `CUDA_ERROR_ILLEGAL_ADDRESS` it causes reaches whichever call
/// comes next, as a real bug's would, and the context stays unusable from then on.
pub fn provoke_illegal_address(index: usize) -> CudaResult<()> {
    let dev = CudaDevice::get(index)?;
    let (major, minor) = dev.ctx.info.capability;
    let image = compile::compile(SOURCE, "torchlet_fault.cu", &format!("sm_{major}{minor}"))?;
    dev.ctx.bind()?;
    // SAFETY: `image` is a complete cubin for this device. The module is never unloaded: the
    // context it lives in is lost once the kernel has run.
    let module = unsafe { result::module::load_data(image.as_ptr().cast()) }
        .map_err(|e| driver("cuModuleLoadData", e))?;
    let name = CString::new("torchlet_write_through_null")
        .map_err(|_| CudaError::Call("kernel name has a NUL".into()))?;
    // SAFETY: the module was loaded in this context just above.
    let function = unsafe { result::module::get_function(module, name) }
        .map_err(|e| driver("cuModuleGetFunction", e))?;
    let mut null: u64 = 0;
    let mut params = [(&mut null as *mut u64).cast::<c_void>()];
    launch(&dev.ctx, function, (1, 1, 1), 1, &mut params)
}
