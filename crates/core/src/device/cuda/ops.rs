//! Elementwise operations on device views: copy/cast, fill, arange, unary, binary (tensor and
//! scalar operands), scatter. Contiguous operands take the 16-byte vector kernels, the rest the
//! strided ones; operands of another dtype are first cast into scratch memory.

use std::ffi::c_void;

use cudarc::driver::sys;

use super::compile::{CONTIG_BLOCK, CONTIG_VECTORS};
use super::context::CudaContext;
use super::error::{driver, CudaError, CudaResult};
use super::kernel_name::KernelName;
use super::layout::{lay, OperandExt, Transpose, TILE};
use super::module::{grid_for, launch, Kernels, BLOCK, BLOCKS_PER_SM, MAX_GRID};
use crate::device::backend::Operand;
use torchlet_alloc::types::{DType, Layout};

/// The device's context and kernels, which every operation needs.
pub struct Gpu<'a> {
    /// The device context (stream, scratch).
    pub ctx: &'a CudaContext,
    /// The device's kernel modules.
    pub kernels: &'a Kernels,
}

/// Pointers to each argument's value, as cuLaunchKernel wants them.
macro_rules! args {
    ($($v:ident),*) => { [$(&mut $v as *mut _ as *mut c_void),*] };
}

fn aligned16(views: &[&Operand]) -> bool {
    views.iter().all(|v| v.addr() % 16 == 0)
}

fn same_dense(views: &[&Operand]) -> bool {
    let shape = &views[0].layout.shape;
    views
        .iter()
        .all(|v| &v.layout.shape == shape && v.is_contiguous())
}

impl Gpu<'_> {
    pub(crate) fn grid(&self, n: usize) -> u32 {
        grid_for(n, self.ctx.info.sm_count * BLOCKS_PER_SM)
    }

    /// Launch the grid-stride kernel `name` over `n` work items, a thread each: as many blocks as
    /// the items need, as PyTorch launches, so each loop runs once.
    ///
    /// Measured on the H200 beside PyTorch (benches/RESULTS.md, sixth run): a grid capped at one
    /// or four waves of what the SMs hold at once, each thread looping over its share, reached
    /// 0.92-0.94x PyTorch's throughput for `x * 2` over 2^28 elements and 0.33-0.65x for a
    /// transposed copy; 64 waves 0.99x and 0.65x; no cap 0.99-1.00x and 0.89-0.90x.
    pub(crate) fn run(
        &self,
        name: KernelName,
        n: usize,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        let f = self.kernels.function(self.ctx, name)?;
        launch(self.ctx, f, (grid_for(n, MAX_GRID), 1, 1), BLOCK, params)
    }

    /// Launch the contiguous elementwise kernel `name` over `n` elements of `elem`: a thread for
    /// every `VPT` vectors, counting the elements past the last whole vector as one more, so the
    /// last block holds them (`contig_each` in contig_walk.cuh). The kernels do not loop, so the grid
    /// covers every vector: the cap of 2^31 - 1 blocks is 2^40 elements and more.
    fn run_contig(
        &self,
        name: KernelName,
        n: usize,
        elem: DType,
        params: &mut [*mut c_void],
    ) -> CudaResult<()> {
        let vw = vec_width(elem);
        let vpt = if vw >= 8 { 1 } else { CONTIG_VECTORS };
        let threads = n.div_ceil(vw * vpt);
        let f = self.kernels.function(self.ctx, name)?;
        let grid = threads
            .div_ceil(CONTIG_BLOCK as usize)
            .min(MAX_GRID as usize) as u32;
        launch(self.ctx, f, (grid, 1, 1), CONTIG_BLOCK, params)
    }

    /// `dst = src` elementwise with dtype conversion (same shape).
    pub fn copy(&self, src: &Operand, dst: &Operand) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        if src.dtype == dst.dtype && same_dense(&[src, dst]) {
            self.ctx.bind()?;
            // SAFETY: both ranges are live device memory of n elements, ordered on our stream.
            return unsafe {
                sys::cuMemcpyDtoDAsync_v2(
                    dst.addr(),
                    src.addr(),
                    n * dst.dtype.size(),
                    self.ctx.stream,
                )
            }
            .result()
            .map_err(|e| driver("cuMemcpyDtoDAsync", e));
        }
        let (mut o, mut a, mut nn) = (dst.addr(), src.addr(), n as i64);
        if same_dense(&[src, dst]) {
            // Kernel names end with their module's (the source) type: cast_c_<to>_<from>.
            let name = KernelName::of("cast_c", dst.dtype).and(src.dtype);
            self.run(name, n, &mut args!(o, a, nn))
        } else {
            let mut l = lay(
                &dst.layout.shape,
                &[&dst.layout.strides, &src.layout.strides],
            )?;
            if let Some(t) = l.as_transpose().filter(|_| src.dtype == dst.dtype) {
                return self.transpose(t, dst.dtype, o, a);
            }
            let name = KernelName::of("cast_s", dst.dtype).and(src.dtype);
            self.run(name, strided_threads(n), &mut args!(o, a, l, nn))
        }
    }

    /// A same-dtype copy from the source address `a` into the dense output `o` through
    /// shared-memory tiles (`transpose_` in elementwise.cu says why).
    fn transpose(&self, t: Transpose, elem: DType, mut o: u64, mut a: u64) -> CudaResult<()> {
        let tiles_c = t.cols.div_ceil(TILE);
        let tiles = t.rows.div_ceil(TILE) * tiles_c;
        let [mut rows, mut cols, mut sb, mut sc, mut tc] =
            [t.rows, t.cols, t.batch_stride, t.col_stride, tiles_c].map(|v| v as i64);
        let f = self
            .kernels
            .function(self.ctx, KernelName::of("transpose", elem))?;
        let grid = (tiles as u32, 1, t.batch as u32);
        // The kernel moves a tile in phases of 8 rows of 32 threads.
        const _: () = assert!(BLOCK == 256);
        launch(
            self.ctx,
            f,
            grid,
            BLOCK,
            &mut args!(o, a, rows, cols, sb, sc, tc),
        )
    }

    /// Every element of `dst` set to the scalar (`f` for float dtypes, `i` for the others).
    pub fn fill(&self, dst: &Operand, f: f64, i: i64) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut o, mut sd, mut si, mut nn) = (dst.addr(), f, i, n as i64);
        if dst.is_contiguous() {
            if f == 0.0 && i == 0 && f.is_sign_positive() {
                self.ctx.bind()?;
                // SAFETY: n elements of live device memory, ordered on our stream.
                return unsafe {
                    sys::cuMemsetD8Async(o, 0, n * dst.dtype.size(), self.ctx.stream)
                }
                .result()
                .map_err(|e| driver("cuMemsetD8Async", e));
            }
            self.run(
                KernelName::of("fill_c", dst.dtype),
                n,
                &mut args!(o, sd, si, nn),
            )
        } else {
            let mut l = lay(&dst.layout.shape, &[&dst.layout.strides])?;
            self.run(
                KernelName::of("fill_s", dst.dtype),
                n,
                &mut args!(o, sd, si, l, nn),
            )
        }
    }

    /// A contiguous `dst` filled with `start + i * step`.
    pub fn arange(&self, dst: &Operand, start: f64, step: f64) -> CudaResult<()> {
        let n = dst.numel();
        let (mut o, mut s, mut st, mut nn) = (dst.addr(), start, step, n as i64);
        if n == 0 {
            return Ok(());
        }
        self.run(
            KernelName::of("arange", dst.dtype),
            n,
            &mut args!(o, s, st, nn),
        )
    }

    /// `src` as a view of dtype `elem`: itself, or a contiguous cast into scratch `slot` (laid out
    /// by `layout`, which the caller keeps for the result's life).
    pub fn as_elem<'v>(
        &self,
        src: &Operand<'v>,
        elem: DType,
        slot: usize,
        layout: &'v mut Layout,
    ) -> CudaResult<Operand<'v>> {
        if src.dtype == elem {
            return Ok(*src);
        }
        self.scratch_copy(src, elem, slot, layout)
    }

    /// A contiguous copy of `v` in scratch `slot`, for kernels and cuBLAS calls that need dense
    /// operands; scratch keeps the copy out of the caching allocator's events, as in PyTorch.
    pub fn dense_copy<'v>(
        &self,
        v: &Operand<'v>,
        slot: usize,
        layout: &'v mut Layout,
    ) -> CudaResult<Operand<'v>> {
        self.scratch_copy(v, v.dtype, slot, layout)
    }

    /// `v` converted to `dtype` into scratch `slot`, contiguous, laid out by `layout`.
    fn scratch_copy<'v>(
        &self,
        v: &Operand<'v>,
        dtype: DType,
        slot: usize,
        layout: &'v mut Layout,
    ) -> CudaResult<Operand<'v>> {
        let ptr = self.ctx.scratch(slot, (v.numel() * dtype.size()).max(16))?;
        *layout = Layout::contiguous(&v.layout.shape);
        let tmp = Operand { ptr, dtype, layout };
        self.copy(v, &tmp)?;
        Ok(tmp)
    }

    /// `dst = op(src)` for kernel op `op` (e.g. "exp", "clamp" with bounds in p0, p1).
    pub fn unary(
        &self,
        op: &'static str,
        p0: f64,
        p1: f64,
        src: &Operand,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let mut st = Layout::default();
        let src = self.as_elem(src, dst.dtype, 0, &mut st)?;
        let (mut o, mut a, mut nn, mut q0, mut q1) = (dst.addr(), src.addr(), n as i64, p0, p1);
        if same_dense(&[&src, dst]) && aligned16(&[&src, dst]) {
            self.run_contig(
                KernelName::of("unary_c", dst.dtype).op(op),
                n,
                dst.dtype,
                &mut args!(o, a, nn, q0, q1),
            )
        } else {
            let mut l = lay(
                &dst.layout.shape,
                &[&dst.layout.strides, &src.layout.strides],
            )?;
            self.run(
                KernelName::of("unary_s", dst.dtype).op(op),
                strided_threads(n),
                &mut args!(o, a, l, nn, q0, q1),
            )
        }
    }

    /// `dst = lhs op rhs` (already broadcast to `dst`'s shape) computed in `compute`'s type.
    #[allow(clippy::too_many_arguments)]
    pub fn binary(
        &self,
        op: &'static str,
        p0: f64,
        p1: f64,
        compute: DType,
        lhs: &Operand,
        rhs: &Operand,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let (mut s1, mut s2) = (Layout::default(), Layout::default());
        let lhs = self.as_elem(lhs, compute, 0, &mut s1)?;
        let rhs = self.as_elem(rhs, compute, 1, &mut s2)?;
        let (mut o, mut a, mut b, mut nn, mut q0, mut q1) =
            (dst.addr(), lhs.addr(), rhs.addr(), n as i64, p0, p1);
        if same_dense(&[&lhs, &rhs, dst]) && aligned16(&[&lhs, &rhs, dst]) {
            self.run_contig(
                KernelName::of("binary_c", compute).op(op),
                n,
                compute,
                &mut args!(o, a, b, nn, q0, q1),
            )
        } else {
            let mut l = lay(
                &dst.layout.shape,
                &[
                    &dst.layout.strides,
                    &lhs.layout.strides,
                    &rhs.layout.strides,
                ],
            )?;
            self.run(
                KernelName::of("binary_s", compute).op(op),
                strided_threads(n),
                &mut args!(o, a, b, l, nn, q0, q1),
            )
        }
    }

    /// `dst = src op scalar` (or `scalar op src` when `rev`) computed in `compute`'s type.
    #[allow(clippy::too_many_arguments)]
    pub fn binary_scalar(
        &self,
        op: &'static str,
        compute: DType,
        src: &Operand,
        f: f64,
        i: i64,
        rev: bool,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = dst.numel();
        if n == 0 {
            return Ok(());
        }
        let mut s1 = Layout::default();
        let src = self.as_elem(src, compute, 0, &mut s1)?;
        let (mut o, mut a, mut sd, mut si, mut r, mut nn) =
            (dst.addr(), src.addr(), f, i, rev as i32, n as i64);
        if same_dense(&[&src, dst]) && aligned16(&[&src, dst]) {
            self.run_contig(
                KernelName::of("scalar_c", compute).op(op),
                n,
                compute,
                &mut args!(o, a, sd, si, r, nn),
            )
        } else {
            let mut l = lay(
                &dst.layout.shape,
                &[&dst.layout.strides, &src.layout.strides],
            )?;
            self.run(
                KernelName::of("scalar_s", compute).op(op),
                strided_threads(n),
                &mut args!(o, a, sd, si, r, l, nn),
            )
        }
    }

    /// Random numbers from torchlet's Philox kernel into the contiguous float `dst`: standard
    /// normals or uniforms on [0, 1), a function of (seed, offset, element index) only.
    pub fn philox(&self, dst: &Operand, seed: u64, offset: u64, normal: bool) -> CudaResult<()> {
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
        let (mut o, mut nn, mut s, mut off, mut nm) =
            (dst.addr(), n as i64, seed, offset, normal as i32);
        self.run(
            KernelName::of("philox", dst.dtype),
            n.div_ceil(4),
            &mut args!(o, nn, s, off, nm),
        )
    }

    /// `dst[.., index[..], ..] = src[..]` along `dim`; `index` is int64 shaped like `src`.
    pub fn scatter(
        &self,
        src: &Operand,
        index: &Operand,
        dim: usize,
        dst: &Operand,
    ) -> CudaResult<()> {
        let n = src.numel();
        if n == 0 {
            return Ok(());
        }
        if index.dtype != DType::I64 {
            return Err(CudaError::Unsupported(
                "scatter(): index must be int64".into(),
            ));
        }
        let mut s1 = Layout::default();
        let src = self.as_elem(src, dst.dtype, 0, &mut s1)?;
        let mut dst_st = dst.layout.strides.to_vec();
        dst_st[dim] = 0;
        let mut l = lay(
            &src.layout.shape,
            &[&dst_st, &src.layout.strides, &index.layout.strides],
        )?;
        let (mut o, mut a, mut ix) = (dst.addr(), src.addr(), index.addr());
        let (mut ds, mut dn, mut nn) = (
            dst.layout.strides[dim] as i64,
            dst.layout.shape[dim] as i64,
            n as i64,
        );
        self.run(
            KernelName::of("scatter", dst.dtype),
            n,
            &mut args!(o, a, ix, l, ds, dn, nn),
        )
    }
}

/// Threads the strided elementwise kernels (`strided_each` in prelude.cuh) need for `n` elements.
fn strided_threads(n: usize) -> usize {
    n.div_ceil(super::compile::STRIDED_ILP)
}

/// Elements per 16-byte vector.
pub(super) fn vec_width(elem: DType) -> usize {
    16 / elem.size()
}

pub(crate) use args;
