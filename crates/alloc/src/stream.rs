//! Streams as the layers above see them: which stream each device's work goes to now (PyTorch's
//! current stream, per thread and device), and new stream handles.
//!
//! Note [one queue underneath]: a stream here is the allocator's notion of one (its blocks, its
//! free lists, its events); the real-GPU backend runs every kernel in order on one CUDA stream, so
//! work on two torchlet streams never overlaps and a block reused across them is never read
//! early. What differs from a real multi-stream run is only time, never memory.
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::StreamId;

/// The default stream of every device.
pub const DEFAULT_STREAM: StreamId = 0;

static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CURRENT: RefCell<Vec<StreamId>> = const { RefCell::new(Vec::new()) };
}

/// A stream handle no other stream of this process has (`torch.cuda.Stream()`).
pub fn new_stream() -> StreamId {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The stream `device`'s work goes to on this thread now (the default one unless set).
pub fn current(device: usize) -> StreamId {
    CURRENT.with(|c| c.borrow().get(device).copied().unwrap_or(DEFAULT_STREAM))
}

/// Make `stream` the current stream of `device` on this thread; returns the one it replaces.
pub fn set_current(device: usize, stream: StreamId) -> StreamId {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() <= device {
            c.resize(device + 1, DEFAULT_STREAM);
        }
        std::mem::replace(&mut c[device], stream)
    })
}
