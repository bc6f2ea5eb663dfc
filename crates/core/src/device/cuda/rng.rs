//! Random fills through cuRAND (Philox): normal and uniform, every float dtype, any length
//! (cuRAND's normal generator works in pairs, so an odd tail is drawn into scratch).

use std::sync::Mutex;

use cudarc::curand::{result as rand, sys as rsys};
use cudarc::driver::sys;

use super::error::{curand, driver, CudaError, CudaResult};
use super::layout::OperandExt;
use super::ops::Gpu;
use crate::device::backend::Operand;
use torchlet_alloc::types::{DType, Layout};

/// The device's cuRAND generator, created on first use.
#[derive(Default)]
pub struct Rng {
    generator: Mutex<Option<usize>>,
}

// SAFETY: the generator is used under the mutex only.
unsafe impl Send for Rng {}
unsafe impl Sync for Rng {}

impl Rng {
    /// Fill the contiguous `dst` (a float dtype) with standard normals (`normal`) or uniforms on
    /// [0, 1); the same `seed` gives the same numbers.
    pub fn fill(&self, gpu: &Gpu, dst: &Operand, normal: bool, seed: u64) -> CudaResult<()> {
        if !dst.dtype.is_float() {
            return Err(CudaError::Unsupported(format!(
                "random fills need a floating point dtype, got {:?}",
                dst.dtype
            )));
        }
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let mut guard = self.generator.lock().unwrap_or_else(|p| p.into_inner());
        gpu.ctx.bind()?;
        if guard.is_none() {
            let g =
                rand::create_generator_kind(rsys::curandRngType_t::CURAND_RNG_PSEUDO_PHILOX4_32_10)
                    .map_err(|e| curand("create generator", e))?;
            // SAFETY: a fresh generator and the device's stream.
            unsafe { rand::set_stream(g, gpu.ctx.stream as rsys::cudaStream_t) }
                .map_err(|e| curand("set stream", e))?;
            *guard = Some(g as usize);
        }
        let g = guard.expect("set above") as rsys::curandGenerator_t;
        // SAFETY: a live generator.
        unsafe {
            rand::set_seed(g, seed).map_err(|e| curand("set seed", e))?;
            rand::set_offset(g, 0).map_err(|e| curand("set offset", e))?;
        }
        // Half types are drawn in float32 into scratch, then converted.
        let wide = if matches!(dst.dtype, DType::F64) {
            DType::F64
        } else {
            DType::F32
        };
        let target = if wide == dst.dtype {
            dst.addr()
        } else {
            gpu.ctx.scratch(0, (n + 1) * 4)?
        };
        generate(gpu, g, target, wide, n, normal)?;
        let layout = Layout::contiguous(&[n]);
        let flat = Operand {
            ptr: target,
            dtype: wide,
            layout: &layout,
        };
        if !normal {
            // cuRAND's uniforms lie in (0, 1]; 1 - u lies in [0, 1) as PyTorch's do.
            gpu.binary_scalar("sub", wide, &flat, 1.0, 1, true, &flat)?;
        }
        if wide != dst.dtype {
            let out = Operand {
                ptr: dst.addr(),
                dtype: dst.dtype,
                layout: &layout,
            };
            gpu.copy(&flat, &out)?;
        }
        Ok(())
    }
}

fn generate(
    gpu: &Gpu,
    g: rsys::curandGenerator_t,
    ptr: u64,
    elem: DType,
    n: usize,
    normal: bool,
) -> CudaResult<()> {
    let size = elem.size();
    // SAFETY: `ptr` holds n elements of `elem`; the odd tail goes through a 2-element scratch.
    unsafe {
        if !normal {
            return match elem {
                DType::F64 => rand::generate::uniform_f64(g, ptr as *mut f64, n),
                _ => rand::generate::uniform_f32(g, ptr as *mut f32, n),
            }
            .map_err(|e| curand("generate uniform", e));
        }
        let even = n - n % 2;
        let normals = |p: u64, count: usize| match elem {
            DType::F64 => rand::generate::normal_f64(g, p as *mut f64, count, 0.0, 1.0),
            _ => rand::generate::normal_f32(g, p as *mut f32, count, 0.0, 1.0),
        };
        if even > 0 {
            normals(ptr, even).map_err(|e| curand("generate normal", e))?;
        }
        if n % 2 == 1 {
            let pair = gpu.ctx.scratch(1, 2 * size)?;
            normals(pair, 2).map_err(|e| curand("generate normal", e))?;
            sys::cuMemcpyDtoDAsync_v2(ptr + (even * size) as u64, pair, size, gpu.ctx.stream)
                .result()
                .map_err(|e| driver("cuMemcpyDtoDAsync", e))?;
        }
    }
    Ok(())
}
