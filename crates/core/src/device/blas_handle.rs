//! Which cuBLAS handle a matrix product uses: the caller's, or the autograd engine's.
//!
//! PyTorch runs `backward` on a worker thread of its autograd engine, and cuBLAS handles (with
//! their 32 MiB workspaces, taken from the caching allocator) are per thread. So the first
//! `backward` that multiplies matrices allocates a second workspace, and it stays, as the first
//! does. torchlet runs `backward` on the caller's thread; the engine marks the pass instead, and
//! each CUDA-like device keeps one handle and workspace per [`BlasHandle`].
use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use torchlet_alloc::DevicePtr;

/// The handle a matrix product runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlasHandle {
    /// The thread that runs the script.
    Caller = 0,
    /// The autograd engine's worker (PyTorch's device thread for `backward`).
    Autograd = 1,
}

/// How many handles a device keeps.
pub const HANDLES: usize = 2;

/// A cuBLAS workspace one handle took from its device's caching allocator (and keeps).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workspace {
    /// The handle that owns it.
    pub handle: BlasHandle,
    /// Its address (a block of the caching allocator).
    pub ptr: DevicePtr,
    /// Its size in bytes, as requested from the allocator.
    pub bytes: u64,
}

impl BlasHandle {
    /// Who uses the handle, for memory listings.
    pub fn user(self) -> &'static str {
        match self {
            BlasHandle::Caller => "matmul",
            BlasHandle::Autograd => "autograd's backward",
        }
    }
}

thread_local! {
    static CURRENT: Cell<BlasHandle> = const { Cell::new(BlasHandle::Caller) };
}

/// The handle matrix products on this thread use now.
pub fn current() -> BlasHandle {
    CURRENT.with(Cell::get)
}

/// Use `handle` until the guard drops (also when the pass fails).
pub fn enter(handle: BlasHandle) -> BlasHandleGuard {
    BlasHandleGuard(CURRENT.with(|c| c.replace(handle)))
}

/// Restores the previous handle on drop.
pub struct BlasHandleGuard(BlasHandle);

impl Drop for BlasHandleGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// One workspace per handle, each taken from the caching allocator at the handle's first use and
/// kept until [`WorkspaceSlots::clear`] (PyTorch's `torch._C._cuda_clearCublasWorkspaces()`).
#[derive(Default)]
pub struct WorkspaceSlots([Mutex<Option<DevicePtr>>; HANDLES]);

impl WorkspaceSlots {
    /// The workspace of `handle`, if it has one.
    pub fn get(&self, handle: BlasHandle) -> Option<DevicePtr> {
        *self.slot(handle)
    }

    /// Give the current handle a workspace from `alloc` unless it has one.
    pub fn ensure<E>(&self, alloc: impl FnOnce() -> Result<DevicePtr, E>) -> Result<(), E> {
        let mut slot = self.slot(current());
        if slot.is_none() {
            *slot = Some(alloc()?);
        }
        Ok(())
    }

    /// Empty every slot, giving back the workspaces they held (for the caller to free).
    pub fn clear(&self) -> Vec<DevicePtr> {
        [BlasHandle::Caller, BlasHandle::Autograd]
            .into_iter()
            .filter_map(|handle| self.slot(handle).take())
            .collect()
    }

    fn slot(&self, handle: BlasHandle) -> MutexGuard<'_, Option<DevicePtr>> {
        self.0[handle as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}
