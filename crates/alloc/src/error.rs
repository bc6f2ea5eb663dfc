//! The allocator's error type, whose `Display` is the message a user sees.

use super::raw::{DevicePtr, RawError};

/// Why the allocator refused a request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// No memory left even after flushing the cache: PyTorch's `OutOfMemoryError`.
    #[error("{message}")]
    OutOfMemory {
        /// The full user-facing message: PyTorch's, with "torchlet" for "PyTorch".
        message: String,
        /// The device index.
        device: usize,
        /// The segment size that was asked of the device ("Tried to allocate").
        tried: u64,
        /// Free bytes of the device as its memory reported them.
        free: u64,
        /// Total bytes of the device.
        total: u64,
    },
    /// A malformed allocator setting or argument; the message names the key.
    #[error("{0}")]
    Config(String),
    /// `free` of an address the allocator did not hand out (or already took back).
    #[error("invalid device pointer: {0:#x}")]
    InvalidPointer(DevicePtr),
    /// The device memory failed in a way other than running out.
    #[error("{0}")]
    Driver(String),
}

impl AllocError {
    /// True for the out-of-memory error (PyTorch's `OutOfMemoryError`).
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, AllocError::OutOfMemory { .. })
    }

    /// A raw-memory failure that is not simply "out of memory", raised as it is.
    pub(crate) fn from_raw(err: RawError, what: &str) -> AllocError {
        match err {
            RawError::Unsupported(s) => AllocError::Config(format!(
                "{s} is not supported by this device's memory ({what}); \
                 remove expandable_segments from TORCHLET_CUDA_ALLOC_CONF"
            )),
            // The real GPU's errors already name the call that failed, and a lost context
            // must keep PyTorch's wording at the start.
            RawError::Driver(m) if m.starts_with("CUDA error: ") => AllocError::Driver(m),
            other => AllocError::Driver(format!("{what} failed: {other}")),
        }
    }
}

// The tensor layer raises an allocation failure as its own error kind (OutOfMemory keeps its kind).
impl From<AllocError> for crate::types::TensorError {
    fn from(e: AllocError) -> Self {
        let kind = match e {
            AllocError::OutOfMemory { .. } => crate::types::ErrorKind::OutOfMemory,
            _ => crate::types::ErrorKind::Runtime,
        };
        crate::types::TensorError::new(kind, e.to_string())
    }
}
