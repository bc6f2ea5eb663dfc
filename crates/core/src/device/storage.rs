//! `Storage`: one device allocation shared by a tensor and its views, freed with its last handle.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use torchlet_alloc::types::Result;
use torchlet_alloc::DevicePtr;

use super::{Backend, Device};

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A block of device memory; dropping the last `Arc<Storage>` returns it to its allocator.
pub struct Storage {
    ptr: DevicePtr,
    bytes: usize,
    id: usize,
    /// Bumped by every in-place write, so autograd can tell when a saved tensor was modified.
    version: AtomicU64,
    backend: Arc<dyn Backend>,
    /// Set on a host copy of a shapes-only tensor: its bytes are not the tensor's values.
    valueless: AtomicBool,
}

impl Storage {
    /// Allocate `bytes` on `backend`; zero bytes allocate nothing (as PyTorch does).
    pub fn new(backend: Arc<dyn Backend>, bytes: usize) -> Result<Storage> {
        let ptr = if bytes == 0 { 0 } else { backend.alloc(bytes)? };
        Ok(Storage {
            ptr,
            bytes,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            version: AtomicU64::new(0),
            backend,
            valueless: AtomicBool::new(false),
        })
    }
    /// Tell the device's allocator what this memory holds (for the breakdown at each peak).
    pub fn set_role(&self, role: torchlet_alloc::Role) {
        if self.ptr != 0 {
            if let Some(a) = self.backend.allocator() {
                a.set_role(self.ptr, role);
            }
        }
    }
    /// Address of the first byte (0 for empty storage).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// A process-unique id (views of one tensor share it).
    pub fn id(&self) -> usize {
        self.id
    }
    /// How many in-place writes the memory has seen.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }
    /// Record an in-place write.
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
    }
    /// The backend that owns the memory.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }
    /// The device the memory is on.
    pub fn device(&self) -> Device {
        self.backend.device()
    }
    /// Whether the bytes are the tensor's values (not so under `torchlet fit`, which computes none).
    pub fn has_values(&self) -> bool {
        !self.valueless.load(Ordering::Relaxed) && self.backend.has_values()
    }
    /// Note that the bytes are not values: a host copy of a tensor that has none.
    pub fn mark_valueless(&self) {
        self.valueless.store(true, Ordering::Relaxed);
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.backend.free(self.ptr, self.bytes);
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes on {})", self.bytes, self.device())
    }
}
