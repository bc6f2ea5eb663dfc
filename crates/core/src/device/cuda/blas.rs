//! Matrix products through cuBLAS: float32 without TF32 (as PyTorch by default), float64,
//! float16 and bfloat16 (accumulating in float32), with the workspace taken from the caching
//! allocator so it shows in the statistics as it does in PyTorch.

use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::cublas::{result as blas, sys as bsys};

use super::context::CudaContext;
use super::error::{cublas, CudaError, CudaResult};
use super::layout::OperandExt;
use super::ops::Gpu;
use crate::device::backend::Operand;
use torchlet_alloc::types::{DType, Layout};
use torchlet_alloc::StreamId;

/// A cuBLAS handle bound to the device's stream, and its workspaces: one per torchlet stream
/// it ran on (Note [a workspace per stream] in `blas_handle`).
pub struct Blas {
    state: Mutex<Option<HandleState>>,
}

/// A created handle: its address, its workspaces by stream, and the one it is set to use.
struct HandleState {
    handle: usize,
    workspaces: Vec<(StreamId, WorkspaceBlock)>,
    in_use: Option<u64>,
}

/// A workspace's address and bytes.
type WorkspaceBlock = (u64, usize);

// SAFETY: the handle is used under the mutex only.
unsafe impl Send for Blas {}
unsafe impl Sync for Blas {}

/// cuBLAS workspace bytes as PyTorch sizes them: `CUBLAS_WORKSPACE_CONFIG` (":KiB:count" pairs)
/// when set, else 32 MiB on Hopper and newer (":4096:8") and ":4096:2:16:8" before.
pub fn workspace_size(capability: (i32, i32)) -> usize {
    if let Ok(config) = std::env::var("CUBLAS_WORKSPACE_CONFIG") {
        if let Some(bytes) = parse_workspace_config(&config) {
            return bytes;
        }
    }
    if capability.0 >= 9 {
        4096 * 1024 * 8
    } else {
        (4096 * 2 + 16 * 8) * 1024
    }
}

/// Sum of size×count over ":SIZE:COUNT" pairs (SIZE in KiB); `None` when malformed.
pub fn parse_workspace_config(config: &str) -> Option<usize> {
    let parts: Vec<&str> = config.split(':').skip(1).collect();
    if parts.is_empty() || !parts.len().is_multiple_of(2) {
        return None;
    }
    parts
        .chunks(2)
        .map(|p| Some(p[0].parse::<usize>().ok()? * p[1].parse::<usize>().ok()? * 1024))
        .sum()
}

impl Default for Blas {
    fn default() -> Self {
        Self {
            state: Mutex::new(None),
        }
    }
}

/// One matrix operand as cuBLAS sees it: transposed or not, leading dimension, batch stride.
struct Mat {
    ptr: u64,
    trans: bool,
    ld: usize,
    batch_stride: usize,
}

/// Describe a [b, r, c] view as a column-major cuBLAS operand of the transposed product, or
/// `None` when neither its rows nor its columns are dense (then it is copied first).
fn as_mat(v: &Operand) -> Option<Mat> {
    let (r, c) = (v.layout.shape[1], v.layout.shape[2]);
    let (sr, sc) = (v.layout.strides[1], v.layout.strides[2]);
    let batch_stride = if v.layout.shape[0] == 1 {
        0
    } else {
        v.layout.strides[0]
    };
    if (sc == 1 || c == 1) && (sr >= c || r == 1) {
        let ld = if r == 1 { c.max(1) } else { sr };
        return Some(Mat {
            ptr: v.addr(),
            trans: false,
            ld,
            batch_stride,
        });
    }
    if (sr == 1 || r == 1) && (sc >= r || c == 1) {
        let ld = if c == 1 { r.max(1) } else { sc };
        return Some(Mat {
            ptr: v.addr(),
            trans: true,
            ld,
            batch_stride,
        });
    }
    None
}

impl Blas {
    /// The workspaces' addresses and bytes, oldest first (each taken by a stream's first product).
    pub fn workspaces(&self) -> Vec<WorkspaceBlock> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state
            .as_ref()
            .map_or_else(Vec::new, |h| h.workspaces.iter().map(|&(_, w)| w).collect())
    }

    /// Forget the workspaces, giving back their addresses for the caller to free; the handle's
    /// next product takes a new one (cuBLAS reads a workspace only during a call on the stream,
    /// and the caching allocator reuses memory in stream order).
    pub fn clear_workspaces(&self) -> Vec<u64> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(h) = state.as_mut() else {
            return Vec::new();
        };
        h.in_use = None;
        h.workspaces.drain(..).map(|(_, (ptr, _))| ptr).collect()
    }

    /// `dst` [b, m, n] (contiguous) = `lhs` [b, m, k] × `rhs` [b, k, n], plus what `dst` holds
    /// when `accumulate` (beta 1). `workspace` allocates the cuBLAS workspace through the caching
    /// allocator on first use.
    pub fn matmul(
        &self,
        gpu: &Gpu,
        lhs: &Operand,
        rhs: &Operand,
        dst: &Operand,
        accumulate: bool,
        stream: StreamId,
        workspace: &dyn Fn(usize) -> CudaResult<u64>,
    ) -> CudaResult<()> {
        let (b, m, k, n) = (
            dst.layout.shape[0],
            dst.layout.shape[1],
            lhs.layout.shape[2],
            dst.layout.shape[2],
        );
        let (dtype, compute) = match dst.dtype {
            DType::F32 => (
                bsys::cudaDataType::CUDA_R_32F,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::F64 => (
                bsys::cudaDataType::CUDA_R_64F,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
            DType::F16 => (
                bsys::cudaDataType::CUDA_R_16F,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::BF16 => (
                bsys::cudaDataType::CUDA_R_16BF,
                bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            other => {
                return Err(CudaError::Unsupported(format!(
                    "\"addmm_cuda\" not implemented for '{}'",
                    other.scalar_type_name()
                )))
            }
        };
        if b * m * n == 0 {
            return Ok(());
        }
        if k == 0 {
            return if accumulate {
                Ok(())
            } else {
                gpu.fill(dst, 0.0, 0)
            };
        }
        let (mut sa, mut sb, mut ca, mut cb) = (
            Layout::default(),
            Layout::default(),
            Layout::default(),
            Layout::default(),
        );
        let lhs = gpu.as_elem(lhs, dst.dtype, 0, &mut ca)?;
        let rhs = gpu.as_elem(rhs, dst.dtype, 1, &mut cb)?;
        let lhs = dense_if_needed(gpu, &lhs, 2, &mut sa)?;
        let rhs = dense_if_needed(gpu, &rhs, 3, &mut sb)?;
        let (a, bm) = (as_mat(&lhs).expect("dense"), as_mat(&rhs).expect("dense"));
        let handle = self.handle(gpu.ctx, stream, workspace)?;
        let op = |t: bool| {
            if t {
                bsys::cublasOperation_t::CUBLAS_OP_T
            } else {
                bsys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (one32, one64) = (1f32, 1f64);
        let (zero32, zero64) = if accumulate {
            (1f32, 1f64)
        } else {
            (0f32, 0f64)
        };
        let (alpha, beta): (*const c_void, *const c_void) = if dst.dtype == DType::F64 {
            (
                (&one64 as *const f64).cast(),
                (&zero64 as *const f64).cast(),
            )
        } else {
            (
                (&one32 as *const f32).cast(),
                (&zero32 as *const f32).cast(),
            )
        };
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, then A.
        // SAFETY: operands are live device memory of the described shapes; the handle is ours.
        unsafe {
            blas::gemm_strided_batched_ex(
                handle as bsys::cublasHandle_t,
                op(bm.trans),
                op(a.trans),
                n as i32,
                m as i32,
                k as i32,
                alpha,
                bm.ptr as *const c_void,
                dtype,
                bm.ld as i32,
                bm.batch_stride as i64,
                a.ptr as *const c_void,
                dtype,
                a.ld as i32,
                a.batch_stride as i64,
                beta,
                dst.addr() as *mut c_void,
                dtype,
                n as i32,
                (m * n) as i64,
                b as i32,
                compute,
                bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| cublas("gemm", e))
    }

    /// The handle (created on first use, on the device's stream), set to `stream`'s workspace
    /// (allocated at that stream's first product).
    fn handle(
        &self,
        ctx: &CudaContext,
        stream: StreamId,
        workspace: &dyn Fn(usize) -> CudaResult<u64>,
    ) -> CudaResult<usize> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.is_none() {
            ctx.bind()?;
            let handle = blas::create_handle().map_err(|e| cublas("create", e))?;
            // SAFETY: a fresh handle and the device's own stream.
            unsafe {
                blas::set_stream(handle, ctx.stream as bsys::cudaStream_t)
                    .map_err(|e| cublas("set stream", e))?;
                bsys::cublasSetMathMode(handle, bsys::cublasMath_t::CUBLAS_DEFAULT_MATH)
                    .result()
                    .map_err(|e| cublas("set math mode", e))?;
            }
            *state = Some(HandleState {
                handle: handle as usize,
                workspaces: Vec::new(),
                in_use: None,
            });
        }
        let h = state.as_mut().expect("set above");
        let found = h
            .workspaces
            .iter()
            .find(|(s, _)| *s == stream)
            .map(|&(_, w)| w);
        let (ptr, size) = match found {
            Some(w) => w,
            None => {
                let size = workspace_size(ctx.info.capability);
                let w = (workspace(size)?, size);
                h.workspaces.push((stream, w));
                w
            }
        };
        if h.in_use != Some(ptr) {
            // SAFETY: `ptr` is `size` bytes of device memory kept for the life of the handle.
            unsafe {
                bsys::cublasSetWorkspace_v2(
                    h.handle as bsys::cublasHandle_t,
                    ptr as *mut c_void,
                    size,
                )
            }
            .result()
            .map_err(|e| cublas("set workspace", e))?;
            h.in_use = Some(ptr);
        }
        Ok(h.handle)
    }
}

/// `v` itself when cuBLAS can read it as a matrix, else a dense copy in scratch `slot`.
fn dense_if_needed<'v>(
    gpu: &Gpu,
    v: &Operand<'v>,
    slot: usize,
    layout: &'v mut Layout,
) -> CudaResult<Operand<'v>> {
    if as_mat(v).is_some() {
        return Ok(*v);
    }
    gpu.dense_copy(v, slot, layout)
}
