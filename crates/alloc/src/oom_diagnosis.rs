//! What torchlet says after PyTorch's out-of-memory message: the free blocks against the request,
//! the reserved-but-free bytes by cause, and whether other settings would have avoided the failure.

use super::block::NIL;
use super::caching::Inner;
use super::raw::RawMemory;
use super::replay::{self, ReplayVerdict};
use super::size::format_size;
use super::stats::PoolKind;

/// The state of one device's allocator at the moment a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OomDiagnosis {
    /// The device index.
    pub device: usize,
    /// The rounded size of the failed request.
    pub request: u64,
    /// The pool the request was served from.
    pub pool: PoolKind,
    /// The largest free block of the large pool.
    pub largest_free_large: u64,
    /// The largest free block of the small pool.
    pub largest_free_small: u64,
    /// Bytes handed out beyond what callers asked for (the 512-byte and power-of-two rounding).
    pub rounding: u64,
    /// Free bytes in segments that also hold live blocks: `empty_cache` cannot release them.
    pub split_tails: u64,
    /// Free bytes in wholly free segments (the allocator releases these before it gives up).
    pub cached_segments: u64,
    /// What replaying the recorded history under other settings found.
    pub replay: ReplayVerdict,
}

impl<M: RawMemory> Inner<M> {
    /// The diagnosis of a failed request of `size` rounded bytes, from the blocks as they are now.
    pub(super) fn diagnose_oom(&self, size: usize) -> OomDiagnosis {
        let mut d = OomDiagnosis {
            device: self.device,
            request: size as u64,
            pool: PoolKind::of_size(size),
            largest_free_large: 0,
            largest_free_small: 0,
            rounding: 0,
            split_tails: 0,
            cached_segments: 0,
            replay: ReplayVerdict::NoHistory,
        };
        for (head_idx, head) in self.arena.iter() {
            if !head.mapped || (head.prev != NIL && self.arena[head.prev].mapped) {
                continue;
            }
            self.add_segment(head_idx, &mut d);
        }
        d.replay = replay::verdict(self, size);
        d
    }

    /// Adds the blocks of the mapped range starting at `head` to `d`.
    fn add_segment(&self, head: u32, d: &mut OomDiagnosis) {
        let (mut free, mut live) = (0u64, false);
        let mut i = head;
        while i != NIL && self.arena[i].mapped {
            let b = &self.arena[i];
            if b.allocated {
                live = true;
                d.rounding += (b.size - b.requested) as u64;
            } else {
                free += b.size as u64;
                let largest = match b.pool {
                    PoolKind::Large => &mut d.largest_free_large,
                    PoolKind::Small => &mut d.largest_free_small,
                };
                *largest = (*largest).max(b.size as u64);
            }
            i = b.next;
        }
        if live {
            d.split_tails += free;
        } else {
            d.cached_segments += free;
        }
    }
}

impl OomDiagnosis {
    /// The lines printed after PyTorch's message, each starting with `torchlet:`; `record_call`
    /// is how the program's language starts the memory history.
    pub fn lines(&self, record_call: &str) -> Vec<String> {
        let (largest, other, other_name) = match self.pool {
            PoolKind::Large => (self.largest_free_large, self.largest_free_small, "small"),
            PoolKind::Small => (self.largest_free_small, self.largest_free_large, "large"),
        };
        let mut lines = vec![
            format!(
                "torchlet: the request needed a free block of {} B ({}) in the {} pool; the \
                 largest there is {} B ({}; the {other_name} pool's is {})",
                self.request,
                format_size(self.request),
                self.pool.name(),
                largest,
                format_size(largest),
                format_size(other),
            ),
            format!(
                "torchlet: reserved but unallocated: {} in free pieces of segments that still hold \
                 live blocks (empty_cache cannot release them), {} in wholly free segments; \
                 rounding adds {} inside allocated blocks",
                format_size(self.split_tails),
                format_size(self.cached_segments),
                format_size(self.rounding),
            ),
        ];
        lines.push(format!("torchlet: {}", self.replay.sentence(record_call)));
        lines
    }
}
