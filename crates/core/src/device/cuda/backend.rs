//! `CudaBackend`: the device `Backend` trait over the real GPU — memory through torchlet's caching
//! allocator on `CudaMemory`, kernels, cuBLAS and cuRAND from `CudaDevice`.

use std::sync::Arc;

use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, DevicePtr};

use crate::device::backend::{
    Attention, AttentionGrads, Backend, BatchNorm, BatchNormGrads, BinaryOp, Conv, Distribution,
    GroupNorm, GroupNormGrads, LayerNormGrads, Operand, Pool, ReduceOp, ReduceOut, UnaryOp,
    Upsample,
};
use crate::device::blas_handle::{BlasHandle, Workspace, WorkspaceSlots};
use crate::device::reduce_plan::DeviceProps;
use crate::device::Device;
use torchlet_alloc::types::{DType, ErrorKind, Result, Scalar, TensorError};

use super::device::CudaDevice;
use super::error::CudaError;

use super::memory::CudaMemory;
use super::reduce::Stage;

/// One real CUDA device as a torchlet backend.
pub struct CudaBackend {
    index: usize,
    dev: Arc<CudaDevice>,
    allocator: Arc<CachingAllocator<CudaMemory>>,
    /// Each handle's cuBLASLt workspace, taken at its first addmm with a bias epilogue and kept,
    /// as PyTorch's (its own product runs through cuBLAS, which needs none).
    lt_workspaces: WorkspaceSlots,
}

/// PyTorch's cuBLASLt workspace (`CUBLASLT_WORKSPACE_SIZE`, 1024 KiB by default).
const CUBLASLT_WORKSPACE_BYTES: usize = 1 << 20;

impl CudaBackend {
    /// The backend of real device `index`, with its own caching allocator.
    pub fn new(index: usize, config: AllocConfig) -> std::result::Result<Self, CudaError> {
        let dev = CudaDevice::get(index)?;
        let memory = CudaMemory::new(index)?;
        Ok(Self {
            index,
            dev,
            allocator: Arc::new(CachingAllocator::new(index, memory, config)),
            lt_workspaces: Default::default(),
        })
    }

    /// The stream this thread's work on this device goes to now (its allocations' stream; the
    /// kernels all run on the device's one CUDA stream: Note [one queue underneath]).
    fn stream(&self) -> torchlet_alloc::StreamId {
        torchlet_alloc::stream::current(self.index)
    }

    /// `dst = lhs × rhs` (plus `dst` when `accumulate`) through the current handle's cuBLAS.
    fn product(&self, lhs: Operand, rhs: Operand, dst: Operand, accumulate: bool) -> Result<()> {
        // The workspace comes from the caching allocator and stays allocated for the life of the
        // cuBLAS handle, as PyTorch's does (it shows in memory_allocated after the first matmul).
        let stream = self.stream();
        let workspace = |bytes: usize| {
            self.allocator
                .malloc_tagged(bytes, stream, torchlet_alloc::site::current())
                .inspect(|&p| self.allocator.set_role(p, torchlet_alloc::Role::Workspace))
                .map_err(|e| CudaError::OutOfMemory(e.to_string()))
        };
        let dev = &self.dev;
        let blas = &dev.blas[crate::device::blas_handle::current() as usize];
        Ok(blas.matmul(&dev.gpu(), &lhs, &rhs, &dst, accumulate, stream, &workspace)?)
    }

    /// The device's context, kernels and libraries.
    pub fn device_handle(&self) -> &Arc<CudaDevice> {
        &self.dev
    }
}

impl From<CudaError> for TensorError {
    fn from(e: CudaError) -> TensorError {
        match e {
            CudaError::OutOfMemory(m) => {
                TensorError::new(ErrorKind::OutOfMemory, format!("CUDA out of memory. {m}"))
            }
            other => TensorError::runtime(other.to_string()),
        }
    }
}

fn scalar_parts(s: Scalar) -> (f64, i64) {
    (s.to_f64(), s.to_i64())
}

/// The type a comparison computes in: the operands' own when they agree, else f64 when either
/// is floating, else i64.
fn compare_type(a: DType, b: DType) -> DType {
    if a == b {
        a
    } else if a.is_float() || b.is_float() {
        DType::F64
    } else {
        DType::I64
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        Device::Cuda(self.index)
    }
    fn name(&self) -> String {
        self.dev.ctx.info.name.clone()
    }
    fn allocator(&self) -> Option<Arc<dyn DeviceAllocator>> {
        Some(self.allocator.clone())
    }
    fn alloc(&self, bytes: usize) -> Result<DevicePtr> {
        let site = torchlet_alloc::site::current();
        Ok(self.allocator.malloc_tagged(bytes, self.stream(), site)?)
    }
    fn free(&self, ptr: DevicePtr, _bytes: usize) {
        // A pointer this storage got from malloc cannot be unknown to the allocator.
        let _ = self.allocator.free(ptr);
    }
    fn synchronize(&self) -> Result<()> {
        Ok(self.dev.ctx.synchronize()?)
    }
    fn write_bytes(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        Ok(self.dev.write_bytes(dst, src)?)
    }
    fn read_bytes(&self, src: DevicePtr, dst: &mut [u8]) -> Result<()> {
        Ok(self.dev.read_bytes(src, dst)?)
    }
    fn copy(&self, src: Operand, dst: Operand) -> Result<()> {
        Ok(self.dev.gpu().copy(&src, &dst)?)
    }
    fn fill(&self, dst: Operand, value: Scalar) -> Result<()> {
        let (f, i) = scalar_parts(value);
        Ok(self.dev.gpu().fill(&dst, f, i)?)
    }
    fn random(&self, dst: Operand, dist: Distribution, seed: u64) -> Result<()> {
        // torchlet's Philox kernel, not cuRAND: measured on the H200, cuRAND's normal fill of 1e6
        // floats took 21.7 µs against PyTorch's 10.8 µs for randn; the Philox kernel takes 4.9 µs
        // (benches/RESULTS.md). cuRAND stays available as `CudaDevice::rng`.
        let normal = dist == Distribution::Normal;
        Ok(self.dev.gpu().philox(&dst, seed, 0, normal)?)
    }
    fn arange(&self, dst: Operand, start: f64, step: f64) -> Result<()> {
        Ok(self.dev.gpu().arange(&dst, start, step)?)
    }
    fn unary(&self, op: UnaryOp, src: Operand, dst: Operand) -> Result<()> {
        let (name, (p0, p1)) = (op.kernel_name(), op.kernel_params());
        Ok(self.dev.gpu().unary(name, p0, p1, &src, &dst)?)
    }
    fn binary(&self, op: BinaryOp, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
        let (name, (p0, p1)) = (op.kernel_name(), op.kernel_params());
        let compute = if op.is_comparison() {
            compare_type(lhs.dtype, rhs.dtype)
        } else {
            dst.dtype
        };
        Ok(self
            .dev
            .gpu()
            .binary(name, p0, p1, compute, &lhs, &rhs, &dst)?)
    }
    fn binary_scalar(
        &self,
        op: BinaryOp,
        src: Operand,
        scalar: Scalar,
        scalar_first: bool,
        dst: Operand,
    ) -> Result<()> {
        let name = op.kernel_name();
        let compute = if op.is_comparison() {
            // The tensor layer has rounded the number to the tensor's dtype where PyTorch
            // compares in it; only an integer tensor against a float needs a float type.
            let number_type = match scalar {
                Scalar::Float(_) if !src.dtype.is_float() => DType::F64,
                _ => src.dtype,
            };
            compare_type(src.dtype, number_type)
        } else {
            dst.dtype
        };
        let (f, i) = scalar_parts(scalar);
        Ok(self
            .dev
            .gpu()
            .binary_scalar(name, compute, &src, f, i, scalar_first, &dst)?)
    }
    fn props(&self) -> Option<DeviceProps> {
        let info = &self.dev.ctx.info;
        Some(DeviceProps {
            sm_count: info.sm_count as usize,
            max_threads_per_sm: info.max_threads_per_sm as usize,
            warp_size: info.warp_size as usize,
        })
    }
    fn reduce(&self, op: ReduceOp, src: Operand, dims: &[usize], out: ReduceOut) -> Result<()> {
        let stage = out.staging.map(|m| Stage {
            plan: m.plan,
            buffer: m.buffer,
            semaphores: m.semaphores,
        });
        Ok(self.dev.gpu().reduce(
            op,
            &src,
            dims,
            &out.dst,
            out.indices.as_ref(),
            stage.as_ref(),
        )?)
    }
    fn blas_workspaces(&self) -> Vec<Workspace> {
        let handles = [BlasHandle::Caller, BlasHandle::Autograd];
        let blas = handles.into_iter().flat_map(|handle| {
            let workspaces = self.dev.blas[handle as usize].workspaces();
            workspaces.into_iter().map(move |(ptr, bytes)| Workspace {
                handle,
                ptr,
                bytes: bytes as u64,
            })
        });
        let lt = self
            .lt_workspaces
            .all()
            .into_iter()
            .map(|(handle, ptr)| Workspace {
                handle,
                ptr,
                bytes: CUBLASLT_WORKSPACE_BYTES as u64,
            });
        blas.chain(lt).collect()
    }
    fn clear_blas_workspaces(&self) {
        let blas = self.dev.blas.iter().flat_map(|b| b.clear_workspaces());
        for ptr in blas
            .collect::<Vec<_>>()
            .into_iter()
            .chain(self.lt_workspaces.clear())
        {
            let _ = self.allocator.free(ptr);
        }
    }
    fn addmm(
        &self,
        bias: Operand,
        lhs: Operand,
        rhs: Operand,
        dst: Operand,
        lt: bool,
    ) -> Result<()> {
        let gpu = self.dev.gpu();
        gpu.copy(&bias, &dst)?;
        self.product(lhs, rhs, dst, true)?;
        if lt {
            self.lt_workspaces.ensure(self.stream(), || {
                let site = torchlet_alloc::site::current();
                let ptr =
                    self.allocator
                        .malloc_tagged(CUBLASLT_WORKSPACE_BYTES, self.stream(), site)?;
                self.allocator
                    .set_role(ptr, torchlet_alloc::Role::Workspace);
                Ok::<_, torchlet_alloc::AllocError>(ptr)
            })?;
        }
        Ok(())
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
        Ok(self.dev.gpu().layer_norm(
            &x,
            weight.as_ref(),
            bias.as_ref(),
            eps,
            &y,
            mean.as_ref(),
            &rstd,
        )?)
    }
    fn layer_norm_backward(
        &self,
        dy: Operand,
        x: Operand,
        mean: Option<Operand>,
        rstd: Operand,
        weight: Option<Operand>,
        grads: LayerNormGrads,
    ) -> Result<()> {
        Ok(self.dev.gpu().layer_norm_backward(
            &dy,
            &x,
            mean.as_ref(),
            &rstd,
            weight.as_ref(),
            &grads,
        )?)
    }
    fn conv(&self, c: &Conv, bias: Option<Operand>, out: Operand) -> Result<()> {
        Ok(self.dev.gpu().conv(c, bias.as_ref(), &out)?)
    }
    fn conv_backward(
        &self,
        c: &Conv,
        dout: Operand,
        dx: Option<Operand>,
        dw: Option<Operand>,
    ) -> Result<()> {
        Ok(self
            .dev
            .gpu()
            .conv_backward(c, &dout, dx.as_ref(), dw.as_ref())?)
    }
    fn pool2d(&self, p: &Pool, out: Operand, indices: Option<Operand>) -> Result<()> {
        Ok(self.dev.gpu().pool2d(p, &out, indices.as_ref())?)
    }
    fn pool2d_backward(
        &self,
        p: &Pool,
        dout: Operand,
        indices: Option<Operand>,
        dx: Operand,
    ) -> Result<()> {
        Ok(self
            .dev
            .gpu()
            .pool2d_backward(p, &dout, indices.as_ref(), &dx)?)
    }
    fn batch_norm(
        &self,
        bn: &BatchNorm,
        running: Option<(Operand, Operand, f64)>,
        mean: Operand,
        invstd: Operand,
        y: Operand,
    ) -> Result<()> {
        let running = running.as_ref().map(|(m, v, k)| (m, v, *k));
        Ok(self.dev.gpu().batch_norm(bn, running, &mean, &invstd, &y)?)
    }
    fn batch_norm_backward(
        &self,
        bn: &BatchNorm,
        mean: Operand,
        invstd: Operand,
        grads: BatchNormGrads,
    ) -> Result<()> {
        Ok(self
            .dev
            .gpu()
            .batch_norm_backward(bn, &mean, &invstd, &grads)?)
    }
    fn group_norm(&self, gn: &GroupNorm, y: Operand, mean: Operand, rstd: Operand) -> Result<()> {
        Ok(self.dev.gpu().group_norm(gn, &y, &mean, &rstd)?)
    }
    fn group_norm_backward(
        &self,
        gn: &GroupNorm,
        mean: Operand,
        rstd: Operand,
        grads: GroupNormGrads,
    ) -> Result<()> {
        Ok(self
            .dev
            .gpu()
            .group_norm_backward(gn, &mean, &rstd, &grads)?)
    }
    fn upsample2d(&self, u: &Upsample, out: Operand) -> Result<()> {
        Ok(self.dev.gpu().upsample2d(u, &out)?)
    }
    fn upsample2d_backward(&self, u: &Upsample, dout: Operand, dx: Operand) -> Result<()> {
        Ok(self.dev.gpu().upsample2d_backward(u, &dout, &dx)?)
    }
    fn attention(&self, a: &Attention, out: Operand, lse: Option<Operand>) -> Result<()> {
        Ok(self.dev.gpu().attention(a, &out, lse.as_ref())?)
    }
    fn attention_backward(
        &self,
        a: &Attention,
        out: Operand,
        lse: Operand,
        grads: AttentionGrads,
    ) -> Result<()> {
        Ok(self.dev.gpu().attention_backward(a, &out, &lse, &grads)?)
    }
    fn dropout(&self, src: Operand, p: f64, seed: u64, mask: Operand, out: Operand) -> Result<()> {
        Ok(self.dev.gpu().dropout(&src, p, seed, &mask, &out)?)
    }
    fn dropout_backward(
        &self,
        grad: Operand,
        mask: Operand,
        scale: f64,
        out: Operand,
    ) -> Result<()> {
        Ok(self.dev.gpu().dropout_backward(&grad, &mask, scale, &out)?)
    }
    fn matmul(&self, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
        self.product(lhs, rhs, dst, false)
    }
    fn softmax(&self, src: Operand, dim: usize, log: bool, dst: Operand) -> Result<()> {
        Ok(self.dev.gpu().softmax(&src, dim, log, &dst)?)
    }
    fn softmax_backward(
        &self,
        grad: Operand,
        output: Operand,
        dim: usize,
        log: bool,
        dst: Operand,
    ) -> Result<()> {
        Ok(self
            .dev
            .gpu()
            .softmax_backward(&grad, &output, dim, log, &dst)?)
    }
    fn nll_loss(
        &self,
        logp: Operand,
        target: Operand,
        ignore_index: i64,
        dst: Operand,
        total_weight: Operand,
    ) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.nll_loss(&logp, &target, ignore_index, &dst, &total_weight)?)
    }
    fn nll_loss_backward(
        &self,
        grad: Operand,
        target: Operand,
        ignore_index: i64,
        total_weight: Operand,
        dst: Operand,
    ) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.nll_loss_backward(&grad, &target, ignore_index, &total_weight, &dst)?)
    }
    fn scatter(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
        Ok(self.dev.gpu().scatter(&src, &index, dim, &dst)?)
    }
    fn where_select(&self, cond: Operand, a: Operand, b: Operand, dst: Operand) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.where_select(&cond, &a, &b, &dst)?)
    }
    fn masked_fill(&self, dst: Operand, mask: Operand, value: Scalar) -> Result<()> {
        let (f, i) = scalar_parts(value);
        Ok(self.dev.gpu().masked_fill(&dst, &mask, f, i)?)
    }
    fn triangle(&self, src: Operand, diagonal: i64, upper: bool, dst: Operand) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.triangle(&src, diagonal, upper, &dst)?)
    }
    fn gather(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.gather(&src, &index, dim, &dst)?)
    }
    fn scatter_add(&self, src: Operand, index: Operand, dim: usize, dst: Operand) -> Result<()> {
        let gpu = self.dev.gpu();
        Ok(gpu.scatter_add(&src, &index, dim, &dst)?)
    }
}
