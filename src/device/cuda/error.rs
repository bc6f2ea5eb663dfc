//! CUDA failures as values with messages a user can act on (never panics).

use cudarc::cublas::result::CublasError;
use cudarc::curand::result::CurandError;
use cudarc::driver::result::DriverError;
use cudarc::nvrtc::result::NvrtcError;

use crate::alloc::RawError;

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
    CudaError::Call(format!("{call} failed with {}", describe_driver(err)))
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
