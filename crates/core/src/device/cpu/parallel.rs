//! Splitting element ranges across rayon threads, for tensors large enough that it pays.

use rayon::prelude::*;

use torchlet_alloc::types::{Layout, OffsetIter};

/// Below this many elements a kernel runs on the calling thread: thread hand-off costs more.
pub const PARALLEL_MIN: usize = 1 << 16;

/// A raw address that may cross threads; kernels write disjoint elements through it.
#[derive(Clone, Copy)]
pub struct SendPtr(pub usize);

impl SendPtr {
    /// The address as a byte pointer.
    pub fn get(self) -> *mut u8 {
        self.0 as *mut u8
    }
}

/// Run `f(start, len)` over `[0, n)` in chunks, in parallel when `n` is large.
pub fn for_chunks(n: usize, f: impl Fn(usize, usize) + Sync + Send) {
    if n < PARALLEL_MIN {
        if n > 0 {
            f(0, n);
        }
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    let chunk = n.div_ceil(threads * 4).max(PARALLEL_MIN / 4);
    let chunks = n.div_ceil(chunk);
    (0..chunks).into_par_iter().for_each(|c| {
        let start = c * chunk;
        f(start, chunk.min(n - start));
    });
}

/// Storage offsets of elements `[start, start+len)` of `layout` in row-major order.
pub fn offsets(layout: &Layout, start: usize, len: usize) -> std::iter::Take<OffsetIter<'_>> {
    OffsetIter::starting_at(layout, start).take(len)
}
