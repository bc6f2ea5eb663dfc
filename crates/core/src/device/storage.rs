//! `Storage`: one device allocation shared by a tensor and its views, freed with its last handle.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use torchlet_alloc::types::Result;
use torchlet_alloc::DevicePtr;

use super::{Backend, Device};

static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// A block of device memory; dropping the last `Arc<Storage>` returns it to its allocator.
pub struct Storage {
    /// Note [resizable storage]: FSDP2 frees an unsharded parameter's memory with
    /// `untyped_storage().resize_(0)` while autograd's saved tensors still share the storage, and
    /// allocates it again before backward needs it: the address and size can change in place.
    ptr: AtomicU64,
    bytes: AtomicUsize,
    id: usize,
    /// Bumped by every in-place write, so autograd can tell when a saved tensor was modified.
    version: AtomicU64,
    backend: Arc<dyn Backend>,
    /// Set on a host copy of a shapes-only tensor: its bytes are not the tensor's values.
    valueless: AtomicBool,
    /// What the memory was said to hold, told again to a block `resize` allocates.
    role: std::sync::Mutex<torchlet_alloc::Role>,
}

impl Storage {
    /// Allocate `bytes` on `backend`; zero bytes allocate nothing (as PyTorch does).
    pub fn new(backend: Arc<dyn Backend>, bytes: usize) -> Result<Storage> {
        let ptr = if bytes == 0 { 0 } else { backend.alloc(bytes)? };
        Ok(Storage {
            ptr: AtomicU64::new(ptr),
            bytes: AtomicUsize::new(bytes),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            version: AtomicU64::new(0),
            backend,
            valueless: AtomicBool::new(false),
            role: std::sync::Mutex::new(torchlet_alloc::Role::default()),
        })
    }
    /// Tell the device's allocator what this memory holds (for the breakdown at each peak).
    pub fn set_role(&self, role: torchlet_alloc::Role) {
        {
            // The later of two roles in Note [roles]' order stays, as the allocator keeps it.
            let mut kept = self.role.lock().expect("storage role lock");
            *kept = (*kept).max(role);
        }
        let ptr = self.ptr();
        if ptr != 0 {
            if let Some(a) = self.backend.allocator() {
                a.set_role(ptr, role);
            }
        }
    }
    /// Address of the first byte (0 for empty storage).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr.load(Ordering::Relaxed)
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
    /// `untyped_storage().resize_(bytes)` (Note [resizable storage]): to 0 frees the memory, from 0
    /// allocates it anew (its contents undefined, as PyTorch's are). Other sizes would need a copy
    /// of the old bytes, which nothing torchlet runs asks for.
    pub fn resize(&self, bytes: usize) -> Result<()> {
        let old = self.bytes();
        if bytes == old {
            return Ok(());
        }
        if old != 0 && bytes != 0 {
            return Err(torchlet_alloc::types::TensorError::runtime(format!(
                "resizing a storage of {old} bytes to {bytes} bytes is not supported by torchlet; resize it to 0 first"
            )));
        }
        let ptr = if bytes == 0 {
            self.backend.free(self.ptr(), old);
            0
        } else {
            self.backend.alloc(bytes)?
        };
        self.ptr.store(ptr, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
        let role = *self.role.lock().expect("storage role lock");
        self.set_role(role);
        Ok(())
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
    /// Put the write count back (`torch.autograd._unsafe_preserve_version_counter`: FSDP2 refills
    /// unsharded parameters that autograd saved, which is no write autograd must see).
    pub fn set_version(&self, version: u64) {
        self.version.store(version, Ordering::Relaxed);
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
        let bytes = self.bytes();
        if bytes > 0 {
            self.backend.free(self.ptr(), bytes);
        }
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({} bytes on {})", self.bytes(), self.device())
    }
}
