//! Which cuBLAS handle a matrix product uses: the caller's, or the autograd engine's.
//!
//! PyTorch runs `backward` on a worker thread of its autograd engine, and cuBLAS handles (with
//! their 32 MiB workspaces, taken from the caching allocator) are per thread. So the first
//! `backward` that multiplies matrices allocates a second workspace, and it stays, as the first
//! does. torchlet runs `backward` on the caller's thread; the engine marks the pass instead, and
//! each CUDA-like device keeps one handle and workspace per [`BlasHandle`].
use std::cell::Cell;
use std::sync::{Mutex, MutexGuard};

use torchlet_alloc::{DevicePtr, StreamId};

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

/// One workspace per handle and stream, each taken from the caching allocator at the first
/// product of that handle on that stream and kept until [`WorkspaceSlots::clear`] (PyTorch's
/// `torch._C._cuda_clearCublasWorkspaces()`).
///
/// Note [a workspace per stream]: PyTorch keys its cuBLAS and cuBLASLt workspaces by (handle,
/// stream), so the first matrix product on a side stream takes another workspace, on that
/// stream, and keeps it.
#[derive(Default)]
pub struct WorkspaceSlots(Mutex<Vec<(BlasHandle, StreamId, DevicePtr)>>);

impl WorkspaceSlots {
    /// Every workspace held, oldest first: its handle and address.
    pub fn all(&self) -> Vec<(BlasHandle, DevicePtr)> {
        self.slots().iter().map(|&(h, _, p)| (h, p)).collect()
    }

    /// Give the current handle a workspace on `stream` from `alloc` unless it has one.
    pub fn ensure<E>(
        &self,
        stream: StreamId,
        alloc: impl FnOnce() -> Result<DevicePtr, E>,
    ) -> Result<(), E> {
        let handle = current();
        let mut slots = self.slots();
        if !slots.iter().any(|&(h, s, _)| h == handle && s == stream) {
            slots.push((handle, stream, alloc()?));
        }
        Ok(())
    }

    /// Empty every slot, giving back the workspaces they held (for the caller to free).
    pub fn clear(&self) -> Vec<DevicePtr> {
        self.slots().drain(..).map(|(_, _, p)| p).collect()
    }

    fn slots(&self) -> MutexGuard<'_, Vec<(BlasHandle, StreamId, DevicePtr)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
