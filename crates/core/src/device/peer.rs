//! Copies of raw bytes between two devices: peer-to-peer between real GPUs, a host memcpy
//! between simulated devices and the CPU, through host memory otherwise.

use torchlet_alloc::types::Result;
use torchlet_alloc::DevicePtr;

use super::{is_simulated, Backend, Device};

/// Whether `device` is a real GPU (its addresses are not host addresses).
fn is_real_gpu(device: Device) -> bool {
    device.is_cuda() && !is_simulated()
}

/// Copy `bytes` from `src_ptr` on `src` to `dst_ptr` on `dst`; returns once the bytes are at
/// `dst` and the source may be freed or overwritten.
pub fn copy_bytes(
    src: &dyn Backend,
    src_ptr: DevicePtr,
    dst: &dyn Backend,
    dst_ptr: DevicePtr,
    bytes: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    match (src.device(), dst.device()) {
        (Device::Cuda(i), Device::Cuda(j)) if is_real_gpu(src.device()) => {
            Ok(super::cuda::peer::copy(i, src_ptr, j, dst_ptr, bytes)?)
        }
        (from, to) if !is_real_gpu(from) && !is_real_gpu(to) => {
            // SAFETY: both are host addresses (CPU or simulated GPU storage) of storages at least
            // `bytes` long, and two live storages never overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(src_ptr as *const u8, dst_ptr as *mut u8, bytes)
            };
            Ok(())
        }
        _ => {
            // Between the host and a real GPU: the backends' synchronous transfers.
            let mut staging = vec![0u8; bytes];
            src.read_bytes(src_ptr, &mut staging)?;
            dst.write_bytes(dst_ptr, &staging)
        }
    }
}
