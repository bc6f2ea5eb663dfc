//! CUDA failures as values with messages a user can act on (never panics).

use cudarc::cublas::result::CublasError;
use cudarc::curand::result::CurandError;
use cudarc::driver::result::DriverError;
use cudarc::nvrtc::result::NvrtcError;

use torchlet_alloc::RawError;

/// A failure of the real CUDA backend: what failed, where, and the driver's own words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// No usable CUDA driver or library on this machine.
    #[error("{0}")]
    Unavailable(String),
    /// The driver has no room left for the request.
    #[error("CUDA out of memory ({0})")]
    OutOfMemory(String),
    /// A call into the driver, NVRTC, cuBLAS or cuRAND failed.
    #[error("CUDA error: {0}")]
    Call(String),
    /// A kernel faulted (an illegal address, a device-side assert): the context is unusable and
    /// every later call fails the same way. Worded as PyTorch words it, plus what to do.
    #[error("CUDA error: {0}")]
    ContextLost(String),
    /// The backend was asked for something it cannot do (a dtype, a shape).
    #[error("{0}")]
    Unsupported(String),
}

/// Names a driver error the way CUDA tools print it: `CUDA_ERROR_X: explanation`.
pub fn describe_driver(err: DriverError) -> String {
    let name = err
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", err.0));
    match err.error_string() {
        Ok(text) => format!("{name}: {}", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// Wraps a driver error with the call that produced it.
pub fn driver(call: &str, err: DriverError) -> CudaError {
    if err.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return CudaError::OutOfMemory(format!("{call}: {}", describe_driver(err)));
    }
    if let Some(what) = sticky_text(err.0) {
        return context_lost(call, err, what);
    }
    CudaError::Call(format!("{call} failed with {}", describe_driver(err)))
}

/// What CUDA says for each of its "sticky" errors: a kernel faulted, the context is corrupt, and
/// every later call in the process returns the same error. Spelt out here (cudaGetErrorString's
/// words, which PyTorch prints) so that wording them needs no call into a driver in that state.
fn sticky_text(code: cudarc::driver::sys::CUresult) -> Option<&'static str> {
    use cudarc::driver::sys::CUresult::*;
    Some(match code {
        CUDA_ERROR_ILLEGAL_ADDRESS => "an illegal memory access was encountered",
        CUDA_ERROR_ASSERT => "device-side assert triggered",
        CUDA_ERROR_HARDWARE_STACK_ERROR => "hardware stack error",
        CUDA_ERROR_ILLEGAL_INSTRUCTION => "an illegal instruction was encountered",
        CUDA_ERROR_MISALIGNED_ADDRESS => "misaligned address",
        CUDA_ERROR_INVALID_ADDRESS_SPACE => {
            "operation not supported on global/shared address space"
        }
        CUDA_ERROR_INVALID_PC => "invalid program counter",
        CUDA_ERROR_LAUNCH_FAILED => "unspecified launch failure",
        _ => return None,
    })
}

/// PyTorch's words for a kernel fault (`CUDA error: an illegal memory access was encountered`),
/// then why the statement shown may not be the culprit and that only a restart recovers: the
/// driver reports a kernel's fault at whichever call comes next, and never clears it.
fn context_lost(call: &str, err: DriverError, what: &str) -> CudaError {
    CudaError::ContextLost(format!(
        "{what}\nCUDA kernel errors might be asynchronously reported at some other API call, so \
         the statement shown might not be the one at fault; for debugging, set \
         CUDA_LAUNCH_BLOCKING=1.\nThe CUDA context is lost ({:?}, seen by {call}): every later \
         CUDA operation in this process fails the same way; restart the session (the kernel, or \
         the script) to use the GPU again.",
        err.0
    ))
}

/// Wraps an NVRTC error with what was being compiled.
pub fn nvrtc(call: &str, err: NvrtcError) -> CudaError {
    CudaError::Call(format!("NVRTC {call} failed with {:?}", err.0))
}

/// Wraps a cuBLAS error with the operation.
pub fn cublas(call: &str, err: CublasError) -> CudaError {
    CudaError::Call(format!("cuBLAS {call} failed with {:?}", err.0))
}

/// Wraps a cuRAND error with the operation.
pub fn curand(call: &str, err: CurandError) -> CudaError {
    CudaError::Call(format!("cuRAND {call} failed with {:?}", err.0))
}

impl From<CudaError> for RawError {
    fn from(err: CudaError) -> Self {
        match err {
            CudaError::OutOfMemory(_) => RawError::OutOfMemory,
            CudaError::Unsupported(m) => RawError::Unsupported(m),
            other => RawError::Driver(other.to_string()),
        }
    }
}

/// Shorthand for results of this backend.
pub type CudaResult<T> = Result<T, CudaError>;

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    #[test]
    fn a_kernel_fault_reads_as_pytorch_says_it_and_asks_for_a_restart() {
        let err = driver(
            "cuMemcpyDtoH",
            DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        );
        assert!(matches!(err, CudaError::ContextLost(_)));
        let text = err.to_string();
        assert!(
            text.starts_with("CUDA error: an illegal memory access was encountered\n"),
            "{text}"
        );
        assert!(
            text.contains("CUDA_ERROR_ILLEGAL_ADDRESS, seen by cuMemcpyDtoH"),
            "{text}"
        );
        assert!(text.contains("restart the session"), "{text}");
        assert!(sticky_text(CUresult::CUDA_ERROR_INVALID_VALUE).is_none());
    }
}
