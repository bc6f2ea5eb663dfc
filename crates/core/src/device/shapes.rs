//! The devices without values: the shapes-only simulated GPU of `torchlet fit` (every allocation
//! and free a real run makes, through PyTorch's allocator, and no math) and PyTorch's `meta`
//! device (no memory either).
//!
//! Tensors keep their shapes, dtypes and allocator blocks; kernels do nothing, so the host pages
//! behind the simulated memory are never touched and a 7-billion-parameter step costs no host
//! RAM for its data. Whatever needs values (`item()`, printing a tensor, a condition on one,
//! copying to the CPU) reads device memory, and that fails with an error saying how to go on.
use std::sync::Arc;

use crate::device::backend::{
    Attention, AttentionGrads, Backend, BatchNorm, BatchNormGrads, BinaryOp, Conv, Distribution,
    GroupNorm, GroupNormGrads, LayerNormGrads, Operand, Pool, ReduceOp, ReduceOut, UnaryOp,
    Upsample,
};
use crate::device::blas_handle::Workspace;
use crate::device::reduce_plan::DeviceProps;
use crate::device::sim::SimBackend;
use crate::device::Device;
use torchlet_alloc::types::{Result, Scalar, TensorError};
use torchlet_alloc::{AllocConfig, DeviceAllocator, DevicePtr};

/// What reading values in a shapes-only run says.
pub const NO_VALUES: &str = "torchlet fit runs shapes only, so tensors have no values here: this \
needs one (item(), printing a tensor, a condition on a tensor, .cpu() or .tolist()). Use \
fit_value(x, default) to give fit a value in its place, or pass the value as an argument";

/// What reading a meta tensor's values says (PyTorch's words).
pub const META_NO_DATA: &str = "Cannot copy out of meta tensor; no data!";

/// Note [meta device]: a meta tensor is PyTorch's promise of a tensor: a shape, a dtype and
/// strides, and no memory, so that a model too big for one GPU can be built, then sharded
/// (`fully_shard`) and made on the GPU shard by shard (`to_empty`). Its storage takes an address
/// from no allocator and every kernel on it does nothing; reading its values or copying it to
/// another device is refused as PyTorch refuses it, and `.to("meta")` makes one without a copy.
const META_ADDRESS: DevicePtr = 1 << 44;

/// A device that computes nothing: a shapes-only simulated GPU, or the meta device.
pub struct ShapesBackend {
    /// The simulated GPU whose allocator takes every allocation; `None` for `meta`.
    sim: Option<SimBackend>,
}

impl ShapesBackend {
    /// Shapes-only `cuda:index` with `capacity` bytes.
    pub fn new(index: usize, capacity: u64, config: AllocConfig) -> ShapesBackend {
        ShapesBackend {
            sim: Some(SimBackend::new(index, capacity, config)),
        }
    }

    /// PyTorch's `meta` device (Note [meta device]).
    pub fn meta() -> ShapesBackend {
        ShapesBackend { sim: None }
    }

    /// Why values cannot be read here.
    fn no_values(&self) -> &'static str {
        if self.sim.is_some() {
            NO_VALUES
        } else {
            META_NO_DATA
        }
    }
}

impl Backend for ShapesBackend {
    fn device(&self) -> Device {
        self.sim.as_ref().map_or(Device::Meta, |s| s.device())
    }
    fn name(&self) -> String {
        match &self.sim {
            Some(sim) => format!("{} (shapes only)", sim.name()),
            None => "meta".into(),
        }
    }
    fn allocator(&self) -> Option<Arc<dyn DeviceAllocator>> {
        self.sim.as_ref().and_then(|s| s.allocator())
    }
    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        self.sim
            .as_ref()
            .map_or(Ok(META_ADDRESS), |s| s.alloc(bytes))
    }
    fn free(&self, ptr: DevicePtr, bytes: usize) {
        if let Some(sim) = &self.sim {
            sim.free(ptr, bytes)
        }
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn has_values(&self) -> bool {
        false
    }
    fn props(&self) -> Option<DeviceProps> {
        self.sim.as_ref().and_then(|s| s.props())
    }
    fn blas_workspaces(&self) -> Vec<Workspace> {
        self.sim
            .as_ref()
            .map_or_else(Vec::new, |s| s.blas_workspaces())
    }
    fn clear_blas_workspaces(&self) {
        if let Some(sim) = &self.sim {
            sim.clear_blas_workspaces()
        }
    }
    fn matmul(&self, _lhs: Operand, _rhs: Operand, _dst: Operand) -> Result<()> {
        self.sim.as_ref().map_or(Ok(()), |s| s.take_workspace())
    }
    fn addmm(&self, _b: Operand, _l: Operand, _r: Operand, _dst: Operand, lt: bool) -> Result<()> {
        self.sim
            .as_ref()
            .map_or(Ok(()), |s| s.take_addmm_workspaces(lt))
    }
    fn attention(&self, _a: &Attention, _out: Operand, _lse: Option<Operand>) -> Result<()> {
        Ok(())
    }
    fn attention_backward(
        &self,
        _a: &Attention,
        _out: Operand,
        _lse: Operand,
        _grads: AttentionGrads,
    ) -> Result<()> {
        Ok(())
    }
    fn conv(&self, _c: &Conv, _bias: Option<Operand>, _out: Operand) -> Result<()> {
        Ok(())
    }
    fn conv_backward(
        &self,
        _c: &Conv,
        _dout: Operand,
        _dx: Option<Operand>,
        _dw: Option<Operand>,
    ) -> Result<()> {
        Ok(())
    }
    fn pool2d(&self, _p: &Pool, _out: Operand, _indices: Option<Operand>) -> Result<()> {
        Ok(())
    }
    fn pool2d_backward(
        &self,
        _p: &Pool,
        _dout: Operand,
        _indices: Option<Operand>,
        _dx: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn batch_norm(
        &self,
        _bn: &BatchNorm,
        _running: Option<(Operand, Operand, f64)>,
        _mean: Operand,
        _invstd: Operand,
        _y: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn batch_norm_backward(
        &self,
        _bn: &BatchNorm,
        _mean: Operand,
        _invstd: Operand,
        _grads: BatchNormGrads,
    ) -> Result<()> {
        Ok(())
    }
    fn group_norm(
        &self,
        _gn: &GroupNorm,
        _y: Operand,
        _mean: Operand,
        _rstd: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn group_norm_backward(
        &self,
        _gn: &GroupNorm,
        _mean: Operand,
        _rstd: Operand,
        _grads: GroupNormGrads,
    ) -> Result<()> {
        Ok(())
    }
    fn upsample2d(&self, _u: &Upsample, _out: Operand) -> Result<()> {
        Ok(())
    }
    fn upsample2d_backward(&self, _u: &Upsample, _dout: Operand, _dx: Operand) -> Result<()> {
        Ok(())
    }
    fn layer_norm(
        &self,
        _x: Operand,
        _weight: Option<Operand>,
        _bias: Option<Operand>,
        _eps: f64,
        _y: Operand,
        _mean: Option<Operand>,
        _rstd: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn layer_norm_backward(
        &self,
        _dy: Operand,
        _x: Operand,
        _mean: Option<Operand>,
        _rstd: Operand,
        _weight: Option<Operand>,
        _grads: LayerNormGrads,
    ) -> Result<()> {
        Ok(())
    }
    fn dropout(
        &self,
        _src: Operand,
        _p: f64,
        _seed: u64,
        _mask: Operand,
        _out: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn dropout_backward(
        &self,
        _g: Operand,
        _mask: Operand,
        _scale: f64,
        _out: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn write_bytes(&self, _dst: DevicePtr, _src: &[u8]) -> Result<()> {
        Ok(())
    }
    fn read_bytes(&self, _src: DevicePtr, _dst: &mut [u8]) -> Result<()> {
        Err(TensorError::runtime(self.no_values()))
    }
    fn copy(&self, _src: Operand, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn fill(&self, _dst: Operand, _value: Scalar) -> Result<()> {
        Ok(())
    }
    fn random(&self, _dst: Operand, _dist: Distribution, _seed: u64) -> Result<()> {
        Ok(())
    }
    fn arange(&self, _dst: Operand, _start: f64, _step: f64) -> Result<()> {
        Ok(())
    }
    fn unary(&self, _op: UnaryOp, _src: Operand, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn binary(&self, _op: BinaryOp, _l: Operand, _r: Operand, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn binary_scalar(
        &self,
        _op: BinaryOp,
        _src: Operand,
        _scalar: Scalar,
        _scalar_first: bool,
        _dst: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn reduce(&self, _op: ReduceOp, _src: Operand, _dims: &[usize], _out: ReduceOut) -> Result<()> {
        Ok(())
    }
    fn softmax(&self, _src: Operand, _dim: usize, _log: bool, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn softmax_backward(
        &self,
        _grad: Operand,
        _output: Operand,
        _dim: usize,
        _log: bool,
        _dst: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn nll_loss(&self, _: Operand, _: Operand, _: i64, _: Operand, _: Operand) -> Result<()> {
        Ok(())
    }
    fn nll_loss_backward(
        &self,
        _: Operand,
        _: Operand,
        _: i64,
        _: Operand,
        _: Operand,
    ) -> Result<()> {
        Ok(())
    }
    fn scatter(&self, _src: Operand, _index: Operand, _dim: usize, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn where_select(&self, _cond: Operand, _a: Operand, _b: Operand, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn masked_fill(&self, _dst: Operand, _mask: Operand, _value: Scalar) -> Result<()> {
        Ok(())
    }
    fn triangle(&self, _src: Operand, _diagonal: i64, _upper: bool, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn gather(&self, _src: Operand, _index: Operand, _dim: usize, _dst: Operand) -> Result<()> {
        Ok(())
    }
    fn scatter_add(
        &self,
        _src: Operand,
        _index: Operand,
        _dim: usize,
        _dst: Operand,
    ) -> Result<()> {
        Ok(())
    }
}
