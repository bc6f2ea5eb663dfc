//! The CPU backend: host memory and the host kernels (also used by the simulated GPU).
//!
//! Map: this file is the `Backend` over host memory; the kernels are `elementwise` (copy/cast,
//! fill, arange, unary and binary ops), `compare` (comparisons into bool), `indexing` (where,
//! masked_fill, triu/tril, gather, scatter_add), `reduce` (reductions, softmax, NLL loss),
//! `staged` (a reduction through PyTorch's staging memory, as the simulated GPU runs it),
//! `matmul` (the `gemm` crate), `norm` (layer and RMS norm, dropout), `attention` (fused SDPA,
//! forward and backward), `conv`, `pool`, `batch_norm`, `group_norm` and `upsample` (through
//! `strided`'s element access) and `random` (seeded uniform and normal fills); `parallel` splits large ranges across rayon threads; `host_limit` refuses a
//! request larger than the machine's RAM and swap before the kernel's overcommit grants it.

mod attention;
mod batch_norm;
mod compare;
mod conv;
mod elementwise;
mod group_norm;
mod host_limit;
mod indexing;
mod matmul;
mod norm;
mod parallel;
mod pool;
mod random;
mod reduce;
mod staged;
mod strided;
mod upsample;

use std::alloc::{alloc, dealloc, Layout as MemLayout};
use std::sync::Arc;

use crate::device::backend::{
    Backend, BinaryOp, Distribution, Operand, ReduceOp, ReduceOut, UnaryOp,
};
use crate::device::Device;
use torchlet_alloc::types::{Result, Scalar, TensorError};
use torchlet_alloc::{DeviceAllocator, DevicePtr};

pub(crate) use host_limit::{host_can_hold, reserve_host};

/// Host allocations are aligned for the widest SIMD loads the kernels use.
const ALIGN: usize = 64;

/// Allocate `bytes` of host memory (uninitialised).
pub(crate) fn host_alloc(bytes: usize) -> Result<DevicePtr> {
    let layout = MemLayout::from_size_align(bytes, ALIGN)
        .map_err(|_| TensorError::runtime(format!("cannot allocate {bytes} bytes on the CPU")))?;
    let p = if host_can_hold(bytes) {
        // SAFETY: bytes > 0 (the tensor layer never asks for empty storage).
        unsafe { alloc(layout) }
    } else {
        std::ptr::null_mut()
    };
    if p.is_null() {
        return Err(TensorError::new(
            torchlet_alloc::types::ErrorKind::OutOfMemory,
            format!("[enforce fail at alloc_cpu.cpp] DefaultCPUAllocator: not enough memory: you tried to allocate {bytes} bytes."),
        ));
    }
    if bytes >= HUGE_PAGE_MIN {
        advise_huge_pages(p, bytes);
    }
    Ok(p as DevicePtr)
}

/// Allocations from this size on ask for transparent huge pages, as numpy does: a fresh output
/// of 64 MiB then faults in 32 pages instead of 16384, which is most of its cost.
const HUGE_PAGE_MIN: usize = 4 << 20;

fn advise_huge_pages(p: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    let start = (p as usize).next_multiple_of(HUGE);
    let end = (p as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: [start, end) lies inside the allocation just made; the advice is only a hint.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Free memory from `host_alloc`.
pub(crate) fn host_free(ptr: DevicePtr, bytes: usize) {
    let layout = MemLayout::from_size_align(bytes, ALIGN).expect("layout was valid at allocation");
    // SAFETY: `ptr` came from `host_alloc(bytes)` and is freed once, by its storage's drop.
    unsafe { dealloc(ptr as *mut u8, layout) }
}

/// The host kernels, shared by every backend whose memory the host can address.
pub mod kernels {
    pub use super::attention::{attention, attention_backward};
    pub use super::batch_norm::{batch_norm, batch_norm_backward};
    pub use super::conv::{conv, conv_backward};
    pub use super::elementwise::{arange, binary, binary_scalar, copy, fill, unary};
    pub use super::group_norm::{group_norm, group_norm_backward};
    pub use super::indexing::{gather, masked_fill, scatter_add, triangle, where_select};
    pub use super::matmul::matmul;
    pub use super::norm::{addmm, dropout, dropout_backward, layer_norm, layer_norm_backward};
    pub use super::pool::{pool2d, pool2d_backward};
    pub use super::random::random;
    pub use super::reduce::{
        nll_loss, nll_loss_backward, reduce, scatter, softmax, softmax_backward,
    };
    pub use super::upsample::{upsample2d, upsample2d_backward};
}

/// Implement the kernel methods of `Backend` with the host kernels (for `cpu` and `sim`);
/// `matmul` is left to each backend, since the simulated GPU also takes a cuBLAS-like workspace.
#[macro_export]
#[doc(hidden)]
macro_rules! host_kernel_methods {
    () => {
        fn write_bytes(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
            // SAFETY: `dst` is a host address of a storage at least `src.len()` long.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) };
            Ok(())
        }
        fn read_bytes(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
            // SAFETY: `src` is a host address of a storage at least `dst.len()` long.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) };
            Ok(())
        }
        fn copy(&self, src: Operand, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::copy(src, dst)
        }
        fn fill(&self, dst: Operand, value: Scalar) -> Result<()> {
            $crate::device::cpu::kernels::fill(dst, value)
        }
        fn random(&self, dst: Operand, dist: Distribution, seed: u64) -> Result<()> {
            $crate::device::cpu::kernels::random(dst, dist, seed)
        }
        fn arange(&self, dst: Operand, start: f64, step: f64) -> Result<()> {
            $crate::device::cpu::kernels::arange(dst, start, step)
        }
        fn unary(&self, op: UnaryOp, src: Operand, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::unary(op, src, dst)
        }
        fn binary(&self, op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::binary(op, lhs, rhs, dst)
        }
        fn binary_scalar(
            &self,
            op: BinaryOp,
            src: Operand,
            scalar: Scalar,
            scalar_first: bool,
            dst: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::binary_scalar(op, src, scalar, scalar_first, dst)
        }
        fn reduce(&self, op: ReduceOp, src: Operand, dims: &[usize], out: ReduceOut) -> Result<()> {
            $crate::device::cpu::kernels::reduce(op, src, dims, out)
        }
        fn softmax(&self, src: Operand, dim: usize, log: bool, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::softmax(src, dim, log, dst)
        }
        fn softmax_backward(
            &self,
            grad: Operand,
            output: Operand,
            dim: usize,
            log: bool,
            dst: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::softmax_backward(grad, output, dim, log, dst)
        }
        fn nll_loss(
            &self,
            logp: Operand,
            target: Operand,
            ignore_index: i64,
            dst: Operand,
            total_weight: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::nll_loss(logp, target, ignore_index, dst, total_weight)
        }
        fn nll_loss_backward(
            &self,
            grad: Operand,
            target: Operand,
            ignore_index: i64,
            total_weight: Operand,
            dst: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::nll_loss_backward(
                grad,
                target,
                ignore_index,
                total_weight,
                dst,
            )
        }
        fn scatter(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::scatter(src, index, dim, dst)
        }
        fn attention(
            &self,
            a: &$crate::device::backend::Attention,
            out: Operand,
            lse: Option<Operand>,
        ) -> Result<()> {
            $crate::device::cpu::kernels::attention(a, out, lse)
        }
        fn attention_backward(
            &self,
            a: &$crate::device::backend::Attention,
            out: Operand,
            lse: Operand,
            grads: $crate::device::backend::AttentionGrads,
        ) -> Result<()> {
            $crate::device::cpu::kernels::attention_backward(a, out, lse, grads)
        }
        fn conv(
            &self,
            c: &$crate::device::backend::Conv,
            bias: Option<Operand>,
            out: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::conv(c, bias, out)
        }
        fn conv_backward(
            &self,
            c: &$crate::device::backend::Conv,
            dout: Operand,
            dx: Option<Operand>,
            dw: Option<Operand>,
        ) -> Result<()> {
            $crate::device::cpu::kernels::conv_backward(c, dout, dx, dw)
        }
        fn pool2d(
            &self,
            p: &$crate::device::backend::Pool,
            out: Operand,
            indices: Option<Operand>,
        ) -> Result<()> {
            $crate::device::cpu::kernels::pool2d(p, out, indices)
        }
        fn pool2d_backward(
            &self,
            p: &$crate::device::backend::Pool,
            dout: Operand,
            indices: Option<Operand>,
            dx: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::pool2d_backward(p, dout, indices, dx)
        }
        fn group_norm(
            &self,
            gn: &$crate::device::backend::GroupNorm,
            y: Operand,
            mean: Operand,
            rstd: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::group_norm(gn, y, mean, rstd)
        }
        fn group_norm_backward(
            &self,
            gn: &$crate::device::backend::GroupNorm,
            mean: Operand,
            rstd: Operand,
            grads: $crate::device::backend::GroupNormGrads,
        ) -> Result<()> {
            $crate::device::cpu::kernels::group_norm_backward(gn, mean, rstd, grads)
        }
        fn upsample2d(&self, u: &$crate::device::backend::Upsample, out: Operand) -> Result<()> {
            $crate::device::cpu::kernels::upsample2d(u, out)
        }
        fn upsample2d_backward(
            &self,
            u: &$crate::device::backend::Upsample,
            dout: Operand,
            dx: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::upsample2d_backward(u, dout, dx)
        }
        fn batch_norm(
            &self,
            bn: &$crate::device::backend::BatchNorm,
            running: Option<(Operand, Operand, f64)>,
            mean: Operand,
            invstd: Operand,
            y: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::batch_norm(bn, running, mean, invstd, y)
        }
        fn batch_norm_backward(
            &self,
            bn: &$crate::device::backend::BatchNorm,
            mean: Operand,
            invstd: Operand,
            grads: $crate::device::backend::BatchNormGrads,
        ) -> Result<()> {
            $crate::device::cpu::kernels::batch_norm_backward(bn, mean, invstd, grads)
        }
        fn layer_norm(
            &self,
            x: Operand,
            weight: Option<Operand>,
            bias: Option<Operand>,
            eps: f64,
            y: Operand,
            mean: Option<Operand>,
            rstd: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::layer_norm(x, weight, bias, eps, y, mean, rstd)
        }
        fn layer_norm_backward(
            &self,
            dy: Operand,
            x: Operand,
            mean: Option<Operand>,
            rstd: Operand,
            weight: Option<Operand>,
            grads: $crate::device::backend::LayerNormGrads,
        ) -> Result<()> {
            $crate::device::cpu::kernels::layer_norm_backward(dy, x, mean, rstd, weight, grads)
        }
        fn dropout(
            &self,
            src: Operand,
            p: f64,
            seed: u64,
            mask: Operand,
            out: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::dropout(src, p, seed, mask, out)
        }
        fn dropout_backward(
            &self,
            grad: Operand,
            mask: Operand,
            scale: f64,
            out: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::dropout_backward(grad, mask, scale, out)
        }
        fn where_select(&self, cond: Operand, a: Operand, b: Operand, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::where_select(cond, a, b, dst)
        }
        fn masked_fill(&self, dst: Operand, mask: Operand, value: Scalar) -> Result<()> {
            $crate::device::cpu::kernels::masked_fill(dst, mask, value)
        }
        fn triangle(&self, src: Operand, diagonal: i64, upper: bool, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::triangle(src, diagonal, upper, dst)
        }
        fn gather(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
            $crate::device::cpu::kernels::gather(src, index, dim, dst)
        }
        fn scatter_add(
            &self,
            src: Operand,
            index: Operand,
            dim: usize,
            dst: Operand,
        ) -> Result<()> {
            $crate::device::cpu::kernels::scatter_add(src, index, dim, dst)
        }
    };
}

/// The host CPU as a device.
#[derive(Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn device(&self) -> Device {
        Device::Cpu
    }
    fn name(&self) -> String {
        "cpu".into()
    }
    fn allocator(&self) -> Option<Arc<dyn DeviceAllocator>> {
        None
    }
    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        host_alloc(bytes)
    }
    fn free(&self, ptr: DevicePtr, bytes: usize) {
        host_free(ptr, bytes)
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn matmul(&self, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
        kernels::matmul(lhs, rhs, dst)
    }
    fn addmm(
        &self,
        bias: Operand,
        lhs: Operand,
        rhs: Operand,
        dst: Operand,
        _: bool,
    ) -> Result<()> {
        kernels::addmm(bias, lhs, rhs, dst)
    }
    host_kernel_methods!();
}
