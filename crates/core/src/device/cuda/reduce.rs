//! ReduceOps (sum, mean, max, min, argmax, argmin), softmax and its backward, and the NLL loss on
//! device views.

use std::ffi::c_void;

use cudarc::driver::result;

use crate::device::reduce_plan::Staging;

use super::error::{driver, CudaError, CudaResult};
use super::kernel_name::KernelName;
use super::layout::{OperandExt, RLay};
use super::module::{launch, BLOCK};
use super::ops::{args, vec_width, Gpu};
use super::rows::RowPlan;
use crate::device::backend::Operand;
use crate::device::reduction::{Finish, Partial};
use crate::device::ReduceOp;
use torchlet_alloc::types::{DType, Layout};

/// One reduction launch's operands: output (and index) addresses, input, layout, `m` outputs of
/// `r` inputs each, and the factor applied to sums (1/r for a mean).
#[derive(Clone, Copy, Debug)]
struct Rows {
    out: u64,
    idx: u64,
    input: u64,
    lay: RLay,
    m: usize,
    r: usize,
    scale: f64,
}

/// A reduction's staging memory on the device: what PyTorch's plan sized, and where it is.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    /// The plan: partials per output, outputs per semaphore, sizes.
    pub plan: Staging,
    /// Device address of the staging buffer.
    pub buffer: u64,
    /// Device address of the semaphores.
    pub semaphores: u64,
}

impl Gpu<'_> {
    /// Reduce `src` over `dims` into the contiguous keepdim-shaped `dst` (and, for max/min, the
    /// indices into `indices`); with `stage`, outputs are split across blocks that meet in it.
    pub fn reduce(
        &self,
        op: ReduceOp,
        src: &Operand,
        dims: &[usize],
        dst: &Operand,
        indices: Option<&Operand>,
        stage: Option<&Stage>,
    ) -> CudaResult<()> {
        let reduced: Vec<bool> = (0..src.layout.shape.len())
            .map(|d| dims.contains(&d))
            .collect();
        let (l, m, r) = RLay::new(&src.layout.shape, &src.layout.strides, &reduced)?;
        if m == 0 {
            return Ok(());
        }
        // An empty row leaves the fold's start in place: right for a plain sum alone.
        if r == 0 && (op.empty_value().is_none() || op.finish() != Finish::Value) {
            return Err(CudaError::Unsupported(format!(
                "{}(): cannot reduce an empty dimension (there is no identity)",
                op.name()
            )));
        }
        let out_elem = op.kernel_out(src.dtype);
        // Write straight into dst when it has the kernel's dtype, else into scratch then cast.
        let direct = out_elem == dst.dtype;
        let out_ptr = if direct {
            dst.addr()
        } else {
            self.ctx.scratch(2, m * out_elem.size())?
        };
        let scale = if op.finish() == Finish::Mean {
            1.0 / r.max(1) as f64
        } else {
            1.0
        };
        let rows = Rows {
            out: out_ptr,
            idx: indices.map_or(0, |v| v.addr()),
            input: src.addr(),
            lay: l,
            m,
            r,
            scale,
        };
        self.launch_rows(op, src.dtype, rows, indices.is_some(), stage)?;
        if !direct {
            let layout = Layout::contiguous(&dst.layout.shape);
            let tmp = Operand {
                ptr: out_ptr,
                dtype: out_elem,
                layout: &layout,
            };
            self.copy(&tmp, dst)?;
        }
        Ok(())
    }

    /// Launch the reduction kernel over `rows`: a thread per output for many short rows, else a
    /// block per output, or `stage.plan.ctas_per_output` blocks per output meeting in `stage`.
    fn launch_rows(
        &self,
        op: ReduceOp,
        elem: DType,
        rows: Rows,
        with_indices: bool,
        stage: Option<&Stage>,
    ) -> CudaResult<()> {
        let name = op.kernel();
        let Rows {
            out: mut o,
            idx: mut ix,
            input: mut a,
            lay: mut l,
            m,
            r,
            scale: mut sc,
        } = rows;
        let (mut mm, mut rr) = (m as i64, r as i64);
        if stage.is_none() && r <= 32 && m >= 1024 {
            let f = self
                .kernels
                .function(self.ctx, KernelName::of("reduce_t", elem).op(name))?;
            let grid = (self.grid(m), 1, 1);
            return launch(
                self.ctx,
                f,
                grid,
                BLOCK,
                &mut args!(o, ix, a, l, mm, rr, sc),
            );
        }
        let mut pm = partial_mode(op, with_indices);
        let (splits, mut partial, mut sem, mut group) = match stage {
            Some(st) => self.prepare(st, m, r, partial_size(pm, elem))?,
            None => (1, 0, 0, 1),
        };
        let mut sp = splits as i32;
        let (stem, block) = if name == "sum" && long_runs(&l, r, splits, elem) {
            ("reduce_w", WIDE_BLOCK)
        } else {
            ("reduce_b", BLOCK)
        };
        let f = self
            .kernels
            .function(self.ctx, KernelName::of(stem, elem).op(name))?;
        let grid = (splits as u32, m.min(65535) as u32, 1);
        let params = &mut args!(o, ix, a, l, mm, rr, sc, partial, sem, sp, group, pm);
        launch(self.ctx, f, grid, block, params)
    }

    /// Check that `stage` holds `m` outputs × its blocks of `size`-byte partials and zero its
    /// semaphores (as PyTorch does before its launch); returns (splits, buffer, semaphores,
    /// outputs per semaphore).
    fn prepare(
        &self,
        st: &Stage,
        m: usize,
        r: usize,
        size: usize,
    ) -> CudaResult<(usize, u64, u64, i64)> {
        let p = &st.plan;
        let group = p.outputs_per_semaphore.max(1);
        let fits = p.num_outputs == m
            && (1..=r).contains(&p.ctas_per_output)
            && m * p.ctas_per_output * size <= p.buffer_bytes
            && m.div_ceil(group) * 4 <= p.semaphore_bytes;
        if !fits {
            return Err(CudaError::Unsupported(format!(
                "internal error: a reduction staging plan ({p:?}) does not fit {m} outputs of {r} inputs"
            )));
        }
        self.ctx.bind()?;
        // SAFETY: the semaphores are semaphore_bytes of live device memory, ordered on our stream.
        unsafe { result::memset_d8_async(st.semaphores, 0, p.semaphore_bytes, self.ctx.stream) }
            .map_err(|e| driver("cuMemsetD8Async", e))?;
        Ok((p.ctas_per_output, st.buffer, st.semaphores, group as i64))
    }

    fn float_only(&self, what: &str, elem: DType) -> CudaResult<()> {
        if elem.is_float() {
            Ok(())
        } else {
            Err(CudaError::Unsupported(format!(
                "{what}(): expected a floating point tensor, got {elem:?}"
            )))
        }
    }

    /// A contiguous copy of `v` (itself when already contiguous) in scratch `slot`.
    fn dense<'v>(
        &self,
        v: &Operand<'v>,
        slot: usize,
        layout: &'v mut Layout,
    ) -> CudaResult<Operand<'v>> {
        if v.is_contiguous() {
            return Ok(*v);
        }
        self.dense_copy(v, slot, layout)
    }

    /// (Log-)softmax of `src` along `dim` into the same-shaped contiguous `dst`.
    pub fn softmax(&self, src: &Operand, dim: usize, log: bool, dst: &Operand) -> CudaResult<()> {
        self.float_only("softmax", dst.dtype)?;
        let mut st = Layout::default();
        let mut sc = Layout::default();
        let src = self.as_elem(src, dst.dtype, 0, &mut sc)?;
        let src = self.dense(&src, 1, &mut st)?;
        let (outer, d, inner) = split_at(&src.layout.shape, dim);
        if outer * d * inner == 0 {
            return Ok(());
        }
        let (mut o, mut a, mut dd, mut lg) = (dst.addr(), src.addr(), d as i64, log as i32);
        if inner == 1 {
            let mut rows = outer as i64;
            if let Some(plan) = RowPlan::new(d, dst.dtype, &[src.addr(), dst.addr()], 8) {
                let f = self
                    .kernels
                    .function(self.ctx, plan.kernel("softmax_rows", dst.dtype))?;
                let mut group = plan.group as i32;
                let params = &mut args!(o, a, rows, dd, group, lg);
                return launch(self.ctx, f, (plan.grid(outer), 1, 1), plan.block, params);
            }
            let f = self
                .kernels
                .function(self.ctx, KernelName::of("softmax_r", dst.dtype))?;
            launch(
                self.ctx,
                f,
                (outer.min(65535) as u32, 1, 1),
                BLOCK,
                &mut args!(o, a, rows, dd, lg),
            )
        } else {
            let (mut ou, mut inn) = (outer as i64, inner as i64);
            let f = self
                .kernels
                .function(self.ctx, KernelName::of("softmax_c", dst.dtype))?;
            launch(
                self.ctx,
                f,
                (self.grid(outer * inner), 1, 1),
                BLOCK,
                &mut args!(o, a, ou, dd, inn, lg),
            )
        }
    }

    /// Softmax's backward from `grad` and the forward `output` into the contiguous `dst`.
    pub fn softmax_backward(
        &self,
        grad: &Operand,
        output: &Operand,
        dim: usize,
        log: bool,
        dst: &Operand,
    ) -> CudaResult<()> {
        self.float_only("softmax_backward", dst.dtype)?;
        let (mut s0, mut s1, mut c0, mut c1) = (
            Layout::default(),
            Layout::default(),
            Layout::default(),
            Layout::default(),
        );
        let grad = self.as_elem(grad, dst.dtype, 0, &mut c0)?;
        let grad = self.dense(&grad, 2, &mut s0)?;
        let output = self.as_elem(output, dst.dtype, 1, &mut c1)?;
        let output = self.dense(&output, 3, &mut s1)?;
        let (outer, d, inner) = split_at(&dst.layout.shape, dim);
        if outer * d * inner == 0 {
            return Ok(());
        }
        let (mut o, mut g, mut y, mut dd, mut lg) =
            (dst.addr(), grad.addr(), output.addr(), d as i64, log as i32);
        if inner == 1 {
            let mut rows = outer as i64;
            let addrs = [grad.addr(), output.addr(), dst.addr()];
            if let Some(plan) = RowPlan::new(d, dst.dtype, &addrs, 4) {
                let name = plan.kernel("softmax_bw_rows", dst.dtype);
                let f = self.kernels.function(self.ctx, name)?;
                let mut group = plan.group as i32;
                let params = &mut args!(o, g, y, rows, dd, group, lg);
                return launch(self.ctx, f, (plan.grid(outer), 1, 1), plan.block, params);
            }
            let f = self
                .kernels
                .function(self.ctx, KernelName::of("softmax_bw_r", dst.dtype))?;
            launch(
                self.ctx,
                f,
                (outer.min(65535) as u32, 1, 1),
                BLOCK,
                &mut args!(o, g, y, rows, dd, lg),
            )
        } else {
            let (mut ou, mut inn) = (outer as i64, inner as i64);
            let f = self
                .kernels
                .function(self.ctx, KernelName::of("softmax_bw_c", dst.dtype))?;
            launch(
                self.ctx,
                f,
                (self.grid(outer * inner), 1, 1),
                BLOCK,
                &mut args!(o, g, y, ou, dd, inn, lg),
            )
        }
    }

    /// `dst[0] = -mean logp[i, target[i]]` over the rows whose target is not `ignore_index`, and
    /// `total_weight[0]` their number; `logp` [n, c], `target` int64 [n].
    pub fn nll_loss(
        &self,
        logp: &Operand,
        target: &Operand,
        ignore_index: i64,
        dst: &Operand,
        total_weight: &Operand,
    ) -> CudaResult<()> {
        self.float_only("nll_loss", dst.dtype)?;
        let mut c0 = Layout::default();
        let logp = self.as_elem(logp, dst.dtype, 0, &mut c0)?;
        let (n, c) = (logp.layout.shape[0], logp.layout.shape[1]);
        let (mut o, mut w, mut lp, mut t) =
            (dst.addr(), total_weight.addr(), logp.addr(), target.addr());
        let mut ignore = ignore_index;
        let (mut nn, mut cc, mut s0, mut s1, mut ts) = (
            n as i64,
            c as i64,
            logp.layout.strides[0] as i64,
            logp.layout.strides[1] as i64,
            target.layout.strides[0] as i64,
        );
        let f = self
            .kernels
            .function(self.ctx, KernelName::of("nll", dst.dtype))?;
        launch(
            self.ctx,
            f,
            (1, 1, 1),
            BLOCK,
            &mut args!(o, w, lp, t, nn, cc, s0, s1, ts, ignore),
        )
    }

    /// NLL's backward into the contiguous [n, c] `dst`.
    pub fn nll_loss_backward(
        &self,
        grad: &Operand,
        target: &Operand,
        ignore_index: i64,
        total_weight: &Operand,
        dst: &Operand,
    ) -> CudaResult<()> {
        self.float_only("nll_loss_backward", dst.dtype)?;
        let mut c0 = Layout::default();
        let grad = self.as_elem(grad, dst.dtype, 0, &mut c0)?;
        let (n, c) = (dst.layout.shape[0], dst.layout.shape[1]);
        let mut w = total_weight.addr();
        let mut ignore = ignore_index;
        let (mut o, mut g, mut t, mut nn, mut cc, mut ts) = (
            dst.addr(),
            grad.addr(),
            target.addr(),
            n as i64,
            c as i64,
            target.layout.strides[0] as i64,
        );
        let f = self
            .kernels
            .function(self.ctx, KernelName::of("nll_bw", dst.dtype))?;
        launch(
            self.ctx,
            f,
            (self.grid(n * c), 1, 1),
            BLOCK,
            &mut args!(o, g, w, t, nn, cc, ts, ignore),
        )
    }
}

/// Threads in a block of `reduce_w_sum`, the kernel for long contiguous sums.
const WIDE_BLOCK: u32 = 512;

/// Fewest 16-byte loads a thread of `reduce_w_sum` must have for it to replace `reduce_b_sum`.
///
/// Measured on the H200 (the ninth run in `benches/RESULTS.md`): with 15.5 loads a thread (2^24
/// float32) the 512-thread kernel took 3% less time, with 7.75 (2^24 float16 and bfloat16) 4–6%
/// more; at 2^28 it took 1.4–3.2% less in every dtype.
const WIDE_MIN_LOADS: usize = 8;

/// Whether every block's slice of a contiguous sum gives each of `WIDE_BLOCK` threads at least
/// `WIDE_MIN_LOADS` 16-byte loads; shorter slices keep 256-thread blocks, which leave fewer
/// threads idle at the slice's end.
fn long_runs(l: &RLay, r: usize, splits: usize, elem: DType) -> bool {
    l.reduces_one_run()
        && r / splits.max(1) >= WIDE_MIN_LOADS * WIDE_BLOCK as usize * vec_width(elem)
}

/// How the kernel stores a partial: 0 = the accumulator (sums), 1 = the element (max/min
/// values), 2 = the (value, index) pair (arg max/min, max/min with indices).
fn partial_mode(op: ReduceOp, indices: bool) -> i32 {
    match op.partial(indices) {
        Partial::Acc => 0,
        Partial::Elem => 1,
        Partial::Pair => 2,
    }
}

/// Bytes of one partial in `mode` for input `elem` (the kernels' A, T and `struct Acc`).
fn partial_size(mode: i32, elem: DType) -> usize {
    match mode {
        0 if matches!(elem, DType::F32 | DType::F16 | DType::BF16) => 4,
        0 => 8,
        1 => elem.size(),
        _ => 16,
    }
}

/// (outer, size of dim, inner) of a row-major shape.
fn split_at(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    let outer = shape[..dim].iter().product();
    let inner = shape[dim + 1..].iter().product();
    (outer, shape[dim], inner)
}
