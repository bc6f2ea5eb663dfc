//! Device-to-device copies between two real GPUs: `cuMemcpyPeerAsync`, over NVLink/PCIe peer
//! access when the pair allows it (enabled once per pair), staged by the driver otherwise.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys;

use super::device::CudaDevice;
use super::error::{driver, CudaResult};

/// Whether `dst` can read `src`'s memory directly; enables it the first time (both ways are
/// asked separately, as the driver does).
pub fn enable_peer_access(src: usize, dst: usize) -> CudaResult<bool> {
    static DONE: OnceLock<Mutex<HashMap<(usize, usize), bool>>> = OnceLock::new();
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(&ok) = done.get(&(src, dst)) {
        return Ok(ok);
    }
    let (s, d) = (CudaDevice::get(src)?, CudaDevice::get(dst)?);
    let mut can = 0;
    // SAFETY: both devices came from cuDeviceGet.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, d.ctx.device, s.ctx.device) }
        .result()
        .map_err(|e| driver("cuDeviceCanAccessPeer", e))?;
    let ok = can == 1 && {
        d.ctx.bind()?;
        // SAFETY: `s.ctx.ctx` is a retained primary context; the flags must be 0.
        match unsafe { sys::cuCtxEnablePeerAccess(s.ctx.ctx, 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                true
            }
            // Without peer access the copy still works, staged through the host by the driver.
            _ => false,
        }
    };
    done.insert((src, dst), ok);
    Ok(ok)
}

/// Copy `bytes` from `src_ptr` on GPU `src` to `dst_ptr` on GPU `dst`.
///
/// Each device has one stream: the source's stream is drained first so the copy reads finished
/// data, and the copy runs on the destination's stream (after whatever last used the
/// destination block) and is waited for, because the caller may free the source block at once
/// and the source's allocator would hand it out again in its own stream order.
pub fn copy(src: usize, src_ptr: u64, dst: usize, dst_ptr: u64, bytes: usize) -> CudaResult<()> {
    let (s, d) = (CudaDevice::get(src)?, CudaDevice::get(dst)?);
    if src != dst {
        enable_peer_access(src, dst)?;
    }
    s.ctx.synchronize()?;
    d.ctx.bind()?;
    // SAFETY: both ranges are live storages of at least `bytes`; the contexts are retained.
    unsafe { sys::cuMemcpyPeerAsync(dst_ptr, d.ctx.ctx, src_ptr, s.ctx.ctx, bytes, d.ctx.stream) }
        .result()
        .map_err(|e| driver("cuMemcpyPeerAsync", e))?;
    d.ctx.synchronize()
}
