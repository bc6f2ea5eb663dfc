//! NCCL collectives over real GPUs in one process: one communicator per device of a device list
//! (`ncclCommInitAll`, cached per list), each collective issued for every device inside one
//! `ncclGroupStart`/`ncclGroupEnd` on that device's stream. libnccl is loaded dynamically and
//! checked for first, since cudarc panics when a library it needs cannot be loaded.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys as drv;
use cudarc::nccl::{result, sys};

use super::device::CudaDevice;
use super::error::{CudaError, CudaResult};
use torchlet_alloc::types::DType;

/// The reductions NCCL offers, as torch.distributed.ReduceOp names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
}

/// `Ok` when libnccl loads, else the message a collective shows (what was looked for, what to do).
pub fn check() -> &'static Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        // SAFETY: only tries to dlopen the library by name.
        if unsafe { sys::is_culib_present() } {
            return Ok(());
        }
        let tried: Vec<String> = cudarc::get_lib_name_candidates("nccl")
            .into_iter()
            .take(3)
            .collect();
        Err(format!(
            "NCCL is not present: could not load libnccl (tried {} …). Collectives on real GPUs \
             need NCCL 2: install it (e.g. the libnccl2 package, or the nvidia-nccl-cu13 wheel) \
             and put its lib directory on LD_LIBRARY_PATH",
            tried.join(", ")
        ))
    })
}

fn nccl(call: &str, e: result::NcclError) -> CudaError {
    CudaError::Call(format!("{call} failed with {e:?}"))
}

/// One communicator per device of a device list, for the life of the process.
struct Comms(Vec<sys::ncclComm_t>);
// SAFETY: NCCL communicators may be used from any thread, one call at a time (the map's lock).
unsafe impl Send for Comms {}

/// Restores the calling thread's current CUDA context on drop: NCCL switches devices through the
/// runtime API, behind the backend's cached notion of which context is current.
struct KeepContext(drv::CUcontext);

impl KeepContext {
    fn new() -> Self {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: writes the current context (or null) into `ctx`.
        unsafe { drv::cuCtxGetCurrent(&mut ctx) };
        KeepContext(ctx)
    }
}

impl Drop for KeepContext {
    fn drop(&mut self) {
        // SAFETY: the context was current before and is retained for the life of the process.
        unsafe { drv::cuCtxSetCurrent(self.0) };
    }
}

/// Run `issue(rank, comm, stream)` for every device of `devices` inside one NCCL group.
fn grouped(
    devices: &[usize],
    mut issue: impl FnMut(usize, sys::ncclComm_t, sys::cudaStream_t) -> CudaResult<()>,
) -> CudaResult<()> {
    check().clone().map_err(CudaError::Unavailable)?;
    static COMMS: OnceLock<Mutex<HashMap<Vec<usize>, Comms>>> = OnceLock::new();
    let mut all = COMMS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let streams: Vec<sys::cudaStream_t> = devices
        .iter()
        .map(|&i| Ok(CudaDevice::get(i)?.ctx.stream as sys::cudaStream_t))
        .collect::<CudaResult<_>>()?;
    let _keep = KeepContext::new();
    if !all.contains_key(devices) {
        let mut comms = vec![std::ptr::null_mut(); devices.len()];
        let list: Vec<i32> = devices.iter().map(|&i| i as i32).collect();
        // SAFETY: `comms` has room for one communicator per listed device.
        unsafe { result::comm_init_all(comms.as_mut_ptr(), list.len() as i32, list.as_ptr()) }
            .map_err(|e| nccl("ncclCommInitAll", e))?;
        all.insert(devices.to_vec(), Comms(comms));
    }
    let comms = &all[devices].0;
    result::group_start().map_err(|e| nccl("ncclGroupStart", e))?;
    let issued = (0..devices.len()).try_for_each(|r| issue(r, comms[r], streams[r]));
    // The group must be closed even when one call failed, or NCCL stays in group mode.
    let ended = result::group_end().map_err(|e| nccl("ncclGroupEnd", e));
    issued.and(ended.map(|_| ()))
}

/// NCCL's type for a dtype (bool travels as bytes, as PyTorch sends it).
fn data_type(dtype: DType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match dtype {
        DType::F32 => ncclFloat32,
        DType::F64 => ncclFloat64,
        DType::F16 => ncclFloat16,
        DType::BF16 => ncclBfloat16,
        DType::I64 => ncclInt64,
        DType::I32 => ncclInt32,
        DType::U8 | DType::Bool => ncclUint8,
    }
}

/// NCCL's reduction; on bool, sum is logical or (max) and product logical and (min), as PyTorch maps them.
fn red_op(op: NcclOp, dtype: DType) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t::*;
    match (op, dtype == DType::Bool) {
        (NcclOp::Sum, false) => ncclSum,
        (NcclOp::Prod, false) => ncclProd,
        (NcclOp::Max, _) | (NcclOp::Sum, true) => ncclMax,
        (NcclOp::Min, _) | (NcclOp::Prod, true) => ncclMin,
    }
}

/// In place: every `ptrs[r]` (on `devices[r]`, `count` elements) becomes the reduction of all.
pub fn all_reduce(
    devices: &[usize],
    ptrs: &[u64],
    dtype: DType,
    count: usize,
    op: NcclOp,
) -> CudaResult<()> {
    grouped(devices, |r, comm, stream| {
        let p = ptrs[r] as *mut c_void;
        // SAFETY: each buffer holds `count` elements on its rank's device; in place is allowed.
        unsafe {
            result::all_reduce(
                p,
                p,
                count,
                data_type(dtype),
                red_op(op, dtype),
                comm,
                stream,
            )
        }
        .map(|_| ())
        .map_err(|e| nccl("ncclAllReduce", e))
    })
}

/// In place: every buffer becomes a copy of rank `root`'s.
pub fn broadcast(
    devices: &[usize],
    ptrs: &[u64],
    dtype: DType,
    count: usize,
    root: usize,
) -> CudaResult<()> {
    grouped(devices, |r, comm, stream| {
        let p = ptrs[r] as *mut c_void;
        // SAFETY: as for all_reduce.
        unsafe { result::broadcast(p, p, count, data_type(dtype), root as i32, comm, stream) }
            .map(|_| ())
            .map_err(|e| nccl("ncclBroadcast", e))
    })
}

/// `outputs[r]` (ranks × `count` elements) receives every rank's `inputs` in rank order.
pub fn all_gather(
    devices: &[usize],
    inputs: &[u64],
    outputs: &[u64],
    dtype: DType,
    count: usize,
) -> CudaResult<()> {
    grouped(devices, |r, comm, stream| {
        // SAFETY: inputs hold `count` elements, outputs ranks × `count`, on rank r's device.
        unsafe {
            result::all_gather(
                inputs[r] as *const c_void,
                outputs[r] as *mut c_void,
                count,
                data_type(dtype),
                comm,
                stream,
            )
        }
        .map(|_| ())
        .map_err(|e| nccl("ncclAllGather", e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_nccl_is_a_clear_error_not_a_panic() {
        // SAFETY: only tries to dlopen the library by name.
        let present = unsafe { sys::is_culib_present() };
        match check() {
            Ok(()) => assert!(present),
            Err(message) => {
                assert!(!present);
                assert!(message.starts_with("NCCL is not present"), "{message}");
                assert!(message.contains("libnccl") && message.contains("LD_LIBRARY_PATH"));
            }
        }
    }

    #[test]
    fn bool_sums_are_logical_or_as_pytorch_maps_them() {
        assert_eq!(red_op(NcclOp::Sum, DType::Bool), sys::ncclRedOp_t::ncclMax);
        assert_eq!(red_op(NcclOp::Prod, DType::Bool), sys::ncclRedOp_t::ncclMin);
        assert_eq!(red_op(NcclOp::Sum, DType::F32), sys::ncclRedOp_t::ncclSum);
        assert_eq!(data_type(DType::BF16), sys::ncclDataType_t::ncclBfloat16);
    }
}
