//! The backend trait: one implementation per device kind (`cpu`, `sim`, `cuda`); tensors call only this.
//!
//! The tensor layer owns every allocation decision: it asks `alloc` for exactly the output of an op
//! (as PyTorch does) and hands the backend operands that are already broadcast (stride-0
//! dimensions) and already checked for shape, dtype and device. Kernels never allocate device
//! memory of their own, except where PyTorch does too (e.g. a cuBLAS workspace, taken from the
//! device's caching allocator; a reduction's staging buffer, which the tensor layer allocates from
//! `reduce_plan` and hands over in `ReduceOut`). A kernel computes in the category of its destination's dtype:
//! float destinations in at least f32 (f64 where convenient), integer destinations in i64.

use std::sync::Arc;

use torchlet_alloc::types::{DType, Layout, Result, Scalar};
use torchlet_alloc::{DeviceAllocator, DevicePtr};

pub use super::ops::{BinaryOp, UnaryOp};
use super::reduce_plan::{DeviceProps, Staging};
use super::Device;
/// Reductions are declared with their tensor methods, one row each (`tensor/reduce_list.rs`).
pub use crate::tensor::ReduceOp;

/// One strided operand of a kernel: the storage's base address, its dtype and the view's layout.
#[derive(Clone, Copy, Debug)]
pub struct Operand<'a> {
    /// Address of the storage's first byte (host address on `cpu`/`sim`, device address on `cuda`).
    pub ptr: DevicePtr,
    /// Element type.
    pub dtype: DType,
    /// Shape, strides (elements) and offset (elements) of the view.
    pub layout: &'a Layout,
}

/// Where a reduction writes, and the staging memory PyTorch's plan gives it.
#[derive(Clone, Copy, Debug)]
pub struct ReduceOut<'a> {
    /// The contiguous keepdim-shaped result (the int64 indices, for ArgMax/ArgMin).
    pub dst: Operand<'a>,
    /// For Max/Min along a dim: the int64 indices, found by the same pass as the values.
    pub indices: Option<Operand<'a>>,
    /// The staging buffer and semaphores, when the plan splits outputs across blocks.
    pub staging: Option<StagingMemory>,
}

/// A reduction's staging plan and the device memory the tensor layer allocated for it.
#[derive(Clone, Copy, Debug)]
pub struct StagingMemory {
    /// What the memory is for: sizes, partials per output, outputs per semaphore.
    pub plan: Staging,
    /// `plan.buffer_bytes` for the partial results, one accumulator per output and block.
    pub buffer: DevicePtr,
    /// `plan.semaphore_bytes` of int counters, which the backend zeroes before use.
    pub semaphores: DevicePtr,
}

/// Distributions for random fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Uniform on [0, 1).
    Uniform,
    /// Standard normal.
    Normal,
}

/// Where layer norm's backward writes: each gradient only when asked for.
#[derive(Clone, Copy, Debug)]
pub struct LayerNormGrads<'a> {
    /// The input's gradient [rows, n], contiguous.
    pub dx: Option<Operand<'a>>,
    /// The weight's gradient as `parts` partial sums [parts, n] over consecutive row blocks.
    pub dweight: Option<Operand<'a>>,
    /// The bias's gradient, laid out as `dweight`.
    pub dbias: Option<Operand<'a>>,
    /// How many row blocks `dweight`/`dbias` hold (1: the finished gradient).
    pub parts: usize,
}

/// The operands of a fused attention (flash or memory-efficient SDPA), views [B, H, T, D].
#[derive(Clone, Copy, Debug)]
pub struct Attention<'a> {
    /// Queries [B, H, Tq, D].
    pub q: Operand<'a>,
    /// Keys [B, Hk, Tk, D]; `H` is a multiple of `Hk` (grouped-query attention).
    pub k: Operand<'a>,
    /// Values [B, Hk, Tk, Dv].
    pub v: Operand<'a>,
    /// Added to the scores when float, masking out where false when bool; broadcast to
    /// [B, H, Tq, Tk] (stride 0 where shared).
    pub mask: Option<Operand<'a>>,
    /// Key `j` is masked out for query `i` when `j > i` (PyTorch's top-left causal mask).
    pub causal: bool,
    /// The scores' factor (PyTorch's default: `1 / sqrt(D)`).
    pub scale: f64,
    /// Dropout of the probabilities: `(p, seed)`; the same seed drops the same ones in backward.
    pub dropout: Option<(f64, u64)>,
}

/// Where fused attention's backward writes.
#[derive(Clone, Copy, Debug)]
pub struct AttentionGrads<'a> {
    /// The output's gradient [B, H, Tq, Dv].
    pub dout: Operand<'a>,
    /// Each query row's `dout · out` [B, H, Tq] (float32), the kernels' own buffer.
    pub delta: Operand<'a>,
    /// The queries' gradient [B, H, Tq, D].
    pub dq: Operand<'a>,
    /// The keys' gradient [B, Hk, Tk, D], summed over each group's query heads.
    pub dk: Operand<'a>,
    /// The values' gradient [B, Hk, Tk, Dv], likewise.
    pub dv: Operand<'a>,
}

/// The operands of a convolution (cross-correlation, as PyTorch's) over depth, height and width:
/// input [N, C, D, H, W] and weight [K, C / groups, T, R, S], any strides. A 2-D convolution is
/// one of depth 1 (and a 1-D one of height 1 too), so one kernel serves all three.
#[derive(Clone, Copy, Debug)]
pub struct Conv<'a> {
    /// The input [N, C, D, H, W].
    pub x: Operand<'a>,
    /// The weight [K, C / groups, T, R, S].
    pub w: Operand<'a>,
    /// Step of the window, (depth, height, width).
    pub stride: [usize; 3],
    /// Implicit zeros on each side, (depth, height, width).
    pub padding: [usize; 3],
    /// Spacing of the window's taps, (depth, height, width).
    pub dilation: [usize; 3],
    /// Channel groups: group `g` of the output reads only group `g` of the input.
    pub groups: usize,
}

/// What a 2-D pooling window computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PoolKind {
    /// The window's largest value (NaN wins), with its flat index in the input plane.
    Max,
    /// The window's mean: over the window with padding when `count_include_pad`, else over
    /// the input it covers; `divisor` replaces either when given.
    Avg {
        /// Whether padding counts toward the divisor.
        count_include_pad: bool,
        /// A fixed divisor (`divisor_override`).
        divisor: Option<i64>,
    },
    /// Adaptive average: output cell `i` of `o` averages input `[floor(i·n/o), ceil((i+1)·n/o))`.
    AdaptiveAvg,
}

/// A 2-D pooling over the last two dims of the input [N, C, H, W].
#[derive(Clone, Copy, Debug)]
pub struct Pool<'a> {
    /// The input [N, C, H, W].
    pub x: Operand<'a>,
    /// What each window computes.
    pub kind: PoolKind,
    /// Window size (unused for adaptive pooling).
    pub kernel: [usize; 2],
    /// Window step.
    pub stride: [usize; 2],
    /// Implicit padding (-inf for max, zeros for average).
    pub padding: [usize; 2],
    /// Spacing of the window's taps (max pooling).
    pub dilation: [usize; 2],
}

/// Batch norm over the channels (dim 1) of the input viewed [N, C, L].
#[derive(Clone, Copy, Debug)]
pub struct BatchNorm<'a> {
    /// The input [N, C, L].
    pub x: Operand<'a>,
    /// The per-channel scale [C].
    pub weight: Option<Operand<'a>>,
    /// The per-channel shift [C].
    pub bias: Option<Operand<'a>>,
    /// Added to the variance before its inverse square root.
    pub eps: f64,
    /// Normalise with the batch's statistics (else with the running ones).
    pub training: bool,
}

/// Group norm over the channels (dim 1) of the input viewed [N, C, L], in `groups` groups of
/// consecutive channels; the statistics [N, G] are kept in the input's dtype.
#[derive(Clone, Copy, Debug)]
pub struct GroupNorm<'a> {
    /// The input [N, C, L], contiguous.
    pub x: Operand<'a>,
    /// The per-channel scale [C].
    pub weight: Option<Operand<'a>>,
    /// The per-channel shift [C].
    pub bias: Option<Operand<'a>>,
    /// How many groups the channels split into.
    pub groups: usize,
    /// Added to the variance before its inverse square root.
    pub eps: f64,
}

/// Where group norm's backward writes: each gradient only when asked for.
#[derive(Clone, Copy, Debug)]
pub struct GroupNormGrads<'a> {
    /// The output's gradient [N, C, L], contiguous.
    pub dy: Operand<'a>,
    /// The input's gradient [N, C, L].
    pub dx: Option<Operand<'a>>,
    /// The weight's gradient [C].
    pub dweight: Option<Operand<'a>>,
    /// The bias's gradient [C].
    pub dbias: Option<Operand<'a>>,
}

/// How `interpolate` maps output positions to input ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UpsampleMode {
    /// The input position `floor(o * ratio)`.
    Nearest,
    /// Linear in each axis between the two nearest input positions.
    Bilinear {
        /// Map the corner pixels' centres onto each other (else the half-pixel convention).
        align_corners: bool,
    },
}

/// A 2-D resize of `x` [N, C, H, W] (in the backward: the input gradient's view).
#[derive(Clone, Copy, Debug)]
pub struct Upsample<'a> {
    /// The input [N, C, H, W], any strides.
    pub x: Operand<'a>,
    /// Nearest or bilinear.
    pub mode: UpsampleMode,
    /// Per axis, the factor output positions are scaled by (PyTorch's `scale` in its kernels).
    pub ratio: [f32; 2],
}

/// Where batch norm's backward writes: each gradient only when asked for.
#[derive(Clone, Copy, Debug)]
pub struct BatchNormGrads<'a> {
    /// The output's gradient [N, C, L].
    pub dy: Operand<'a>,
    /// The input's gradient [N, C, L].
    pub dx: Option<Operand<'a>>,
    /// The weight's gradient [C].
    pub dweight: Option<Operand<'a>>,
    /// The bias's gradient [C].
    pub dbias: Option<Operand<'a>>,
}

/// One device's memory and kernels. Implemented by `cpu`, `sim` and `cuda`.
pub trait Backend: Send + Sync {
    /// The device this backend computes on.
    fn device(&self) -> Device;
    /// A human-readable device name (`get_device_name`).
    fn name(&self) -> String;
    /// The caching allocator behind a CUDA-like device; `None` for the CPU.
    fn allocator(&self) -> Option<Arc<dyn DeviceAllocator>>;
    /// Allocate `bytes` (> 0) for a new storage, through the device's allocator.
    fn alloc(&self, bytes: usize) -> Result<DevicePtr>;
    /// Return a storage's memory (called once, when its last handle drops).
    fn free(&self, ptr: DevicePtr, bytes: usize);
    /// Wait for all queued work on the device.
    fn synchronize(&self) -> Result<()>;
    /// Copy host bytes into device memory at `dst` (synchronously).
    fn write_bytes(&self, dst: DevicePtr, src: &[u8]) -> Result<()>;
    /// Copy device memory at `src` into host bytes (synchronously).
    fn read_bytes(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()>;
    /// `dst = src` elementwise, converting dtype; both views have the same shape.
    fn copy(&self, src: Operand, dst: Operand) -> Result<()>;
    /// Set every element of `dst` to `value` (converted to `dst`'s dtype).
    fn fill(&self, dst: Operand, value: Scalar) -> Result<()>;
    /// Fill a contiguous `dst` with random numbers; the same `seed` gives the same numbers.
    fn random(&self, dst: Operand, dist: Distribution, seed: u64) -> Result<()>;
    /// Fill a contiguous `dst` with `start + i * step`.
    fn arange(&self, dst: Operand, start: f64, step: f64) -> Result<()>;
    /// `dst = op(src)`; same shape.
    fn unary(&self, op: UnaryOp, src: Operand, dst: Operand) -> Result<()>;
    /// `dst = lhs op rhs`; `lhs`, `rhs` already broadcast to `dst`'s shape.
    fn binary(&self, op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()>;
    /// `dst = src op scalar`, or `scalar op src` when `scalar_first`.
    fn binary_scalar(
        &self,
        op: BinaryOp,
        src: Operand,
        scalar: Scalar,
        scalar_first: bool,
        dst: Operand,
    ) -> Result<()>;
    /// Whether kernels compute values (false on the shapes-only GPU of `torchlet fit`).
    fn has_values(&self) -> bool {
        true
    }
    /// What a reduction plan reads of the device (`None`: not a CUDA-like device, no plan).
    fn props(&self) -> Option<DeviceProps> {
        None
    }
    /// Reduce `src` over `dims` (ascending; every dim for a full reduction) into `out.dst`, whose
    /// shape is `src`'s with the reduced dims set to 1 (keepdim); with `out.staging`, blocks of
    /// outputs meet in that memory as PyTorch's kernel does.
    fn reduce(&self, op: ReduceOp, src: Operand, dims: &[usize], out: ReduceOut) -> Result<()>;
    /// The cuBLAS workspaces taken from the allocator so far (none on the CPU, or before a matmul).
    fn blas_workspaces(&self) -> Vec<crate::device::blas_handle::Workspace> {
        Vec::new()
    }
    /// Give the cuBLAS workspaces back to the caching allocator (PyTorch's
    /// `torch._C._cuda_clearCublasWorkspaces()`); the next matrix product takes them again.
    fn clear_blas_workspaces(&self) {}
    /// Batched matrix product: `lhs` [b, m, k] × `rhs` [b, k, n] → contiguous `dst` [b, m, n].
    fn matmul(&self, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()>;
    /// `dst = bias + lhs × rhs` ([1, m, k] × [1, k, n], `bias` already broadcast to `dst`):
    /// PyTorch's addmm with beta 1. `lt`: PyTorch takes the cuBLASLt route with a bias epilogue,
    /// whose handle keeps a workspace of its own in the caching allocator.
    fn addmm(
        &self,
        bias: Operand,
        lhs: Operand,
        rhs: Operand,
        dst: Operand,
        lt: bool,
    ) -> Result<()>;
    /// Layer norm of each row of the contiguous `x` [rows, n] into `y`, with the per-row `mean`
    /// and `rstd` [rows] (float32, float64 for float64 input); `weight`/`bias` [n] contiguous.
    /// Without `mean` the rows are not centred: the root-mean-square norm (`rms_norm`).
    #[allow(clippy::too_many_arguments)]
    fn layer_norm(
        &self,
        x: Operand,
        weight: Option<Operand>,
        bias: Option<Operand>,
        eps: f64,
        y: Operand,
        mean: Option<Operand>,
        rstd: Operand,
    ) -> Result<()>;
    /// Layer norm's backward from the contiguous `dy`, the forward's `x`, `mean`, `rstd`, `weight`.
    fn layer_norm_backward(
        &self,
        dy: Operand,
        x: Operand,
        mean: Option<Operand>,
        rstd: Operand,
        weight: Option<Operand>,
        grads: LayerNormGrads,
    ) -> Result<()>;
    /// Dropout of `src` into the contiguous `out`, keeping each element with probability `1 - p`
    /// (a hash of `seed` and the index decides) and recording it in the bool `mask`.
    fn dropout(&self, src: Operand, p: f64, seed: u64, mask: Operand, out: Operand) -> Result<()>;
    /// Dropout's backward: `out = grad * mask * scale` (`out` contiguous).
    fn dropout_backward(
        &self,
        grad: Operand,
        mask: Operand,
        scale: f64,
        out: Operand,
    ) -> Result<()>;
    /// (Log-)softmax of `src` along `dim` into a same-shaped contiguous `dst`.
    fn softmax(&self, src: Operand, dim: usize, log: bool, dst: Operand) -> Result<()>;
    /// Softmax's backward from `grad` and the forward `output`, into a same-shaped `dst`.
    fn softmax_backward(
        &self,
        grad: Operand,
        output: Operand,
        dim: usize,
        log: bool,
        dst: Operand,
    ) -> Result<()>;
    /// Mean negative log-likelihood over the rows whose target is not `ignore_index`:
    /// `dst[0] = -mean logp[i, target[i]]` and `total_weight[0]` = their number; `logp` [n, c],
    /// `target` int64 [n].
    fn nll_loss(
        &self,
        logp: Operand,
        target: Operand,
        ignore_index: i64,
        dst: Operand,
        total_weight: Operand,
    ) -> Result<()>;
    /// NLL's backward: `dst` [n, c] zero except `dst[i, target[i]] = -grad[0] / total_weight[0]`
    /// for the rows whose target is not `ignore_index`.
    fn nll_loss_backward(
        &self,
        grad: Operand,
        target: Operand,
        ignore_index: i64,
        total_weight: Operand,
        dst: Operand,
    ) -> Result<()>;
    /// `dst[.., index[..], ..] = src[..]` along `dim` (`index` int64, shaped like `src`);
    /// other elements of `dst` are left as they are.
    fn scatter(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()>;
    /// `dst = cond ? a : b` elementwise; `cond` (bool), `a`, `b` broadcast to the contiguous
    /// `dst`'s shape, `a` and `b` of `dst`'s dtype.
    fn where_select(&self, cond: Operand, a: Operand, b: Operand, dst: Operand) -> Result<()>;
    /// `dst[i] = value` where `mask[i]` (bool, broadcast to `dst`'s shape); in place.
    fn masked_fill(&self, dst: Operand, mask: Operand, value: Scalar) -> Result<()>;
    /// The contiguous `dst` = `src` (same shape, at least 2 dims) with the elements outside
    /// the triangle of its last two dims zeroed: `upper` keeps `col - row >= diagonal`, else
    /// `col - row <= diagonal`.
    fn triangle(&self, src: Operand, diagonal: i64, upper: bool, dst: Operand) -> Result<()>;
    /// `dst[p] = src[p with dim replaced by index[p]]`; `index` (int64, every value in range)
    /// has `dst`'s shape (stride 0 where an index is shared, as index_select's).
    fn gather(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()>;
    /// Fused attention: `out` [B, H, Tq, Dv] and, when asked for, each query row's log-sum-exp
    /// `lse` [B, H, Tq] (float32), as PyTorch's fused kernels compute them.
    fn attention(&self, a: &Attention, out: Operand, lse: Option<Operand>) -> Result<()>;
    /// Fused attention's backward from the forward's `out` and `lse`.
    fn attention_backward(
        &self,
        a: &Attention,
        out: Operand,
        lse: Operand,
        grads: AttentionGrads,
    ) -> Result<()>;
    /// `dst[p with dim replaced by index[p]] += src[p]`; `index` (int64, in range) has `src`'s
    /// shape; repeated indices add up (index_add, scatter_add, embedding's backward).
    fn scatter_add(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()>;
    /// A convolution into `out` [N, K, Do, Ho, Wo], plus `bias` [K] per output channel.
    fn conv(&self, c: &Conv, bias: Option<Operand>, out: Operand) -> Result<()>;
    /// A convolution's gradients from `dout` [N, K, Do, Ho, Wo]: the input's into `dx`, the
    /// weight's into `dw` (each only when given; both are overwritten).
    fn conv_backward(
        &self,
        c: &Conv,
        dout: Operand,
        dx: Option<Operand>,
        dw: Option<Operand>,
    ) -> Result<()>;
    /// A 2-D pooling into `out` [N, C, Ho, Wo]; max pooling writes each window's argmax (a flat
    /// index into the H×W plane, int64) into `indices` when given.
    fn pool2d(&self, p: &Pool, out: Operand, indices: Option<Operand>) -> Result<()>;
    /// A pooling's gradient: `dx` (overwritten) from `dout`; max pooling routes it by `indices`.
    fn pool2d_backward(
        &self,
        p: &Pool,
        dout: Operand,
        indices: Option<Operand>,
        dx: Operand,
    ) -> Result<()>;
    /// Batch norm into `y`. In training, each channel's batch mean and inverse standard deviation
    /// go to `mean`/`invstd` [C] (float32) and, with `running` (mean, var, momentum), blend into
    /// the running statistics; otherwise `mean`/`invstd` hold the running mean and variance the
    /// output is normalised with.
    fn batch_norm(
        &self,
        bn: &BatchNorm,
        running: Option<(Operand, Operand, f64)>,
        mean: Operand,
        invstd: Operand,
        y: Operand,
    ) -> Result<()>;
    /// Group norm into `y`, each (sample, group)'s mean and inverse standard deviation into
    /// `mean`/`rstd` [N, G]; the output is normalised with the statistics as stored.
    fn group_norm(&self, gn: &GroupNorm, y: Operand, mean: Operand, rstd: Operand) -> Result<()>;
    /// Group norm's backward from the forward's `mean` and `rstd`.
    fn group_norm_backward(
        &self,
        gn: &GroupNorm,
        mean: Operand,
        rstd: Operand,
        grads: GroupNormGrads,
    ) -> Result<()>;
    /// A 2-D resize of `u.x` into `out` [N, C, Ho, Wo].
    fn upsample2d(&self, u: &Upsample, out: Operand) -> Result<()>;
    /// A resize's input gradient: `dx` (overwritten; `u.x` is its view) from `dout`.
    fn upsample2d_backward(&self, u: &Upsample, dout: Operand, dx: Operand) -> Result<()>;
    /// Batch norm's backward from the forward's `mean` and `invstd` (in evaluation: the running
    /// mean and variance).
    fn batch_norm_backward(
        &self,
        bn: &BatchNorm,
        mean: Operand,
        invstd: Operand,
        grads: BatchNormGrads,
    ) -> Result<()>;
}
