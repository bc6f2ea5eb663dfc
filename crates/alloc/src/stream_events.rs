//! Cross-stream frees: `record_stream`, the events a free then waits on, and the polls that
//! complete them (PyTorch's `insert_events`, `process_events` and `synchronize_and_free_events`).
//!
//! Note [events complete at the next request]: PyTorch records one CUDA event on each stream a
//! freed block was used on and returns the block to its pool once every event has completed, as
//! seen by `cudaEventQuery` at the start of a later `malloc` (or by the wait in `empty_cache` and
//! the OOM path). torchlet's streams share one queue in order (Note [one queue underneath] in
//! `stream`), so an event has completed by the time anything later asks: each pending free
//! completes at the next request, in the order PyTorch polls them (stream by stream, each
//! stream's events first to last). A real GPU that is still busy on the other stream when the
//! next request comes delays that completion; a program that synchronizes first sees the same.
use std::collections::VecDeque;

use super::caching::Inner;
use super::error::AllocError;
use super::raw::RawMemory;
use super::{DevicePtr, StreamId};

/// The events waited on: per stream, in the order streams first got one, its blocks in order.
#[derive(Default)]
pub(crate) struct StreamEvents {
    /// Blocks freed while in use on other streams, with the events each still waits on.
    waiting: Vec<(StreamId, VecDeque<u32>)>,
    /// The streams each handed-out block was used on besides its own (`record_stream`).
    uses: std::collections::HashMap<u32, Vec<StreamId>>,
    /// Events still outstanding, by block.
    counts: std::collections::HashMap<u32, u32>,
}

impl StreamEvents {
    /// Whether a freed block still waits on events (so it may not merge or be reused).
    pub fn is_pending(&self, idx: u32) -> bool {
        // Merges ask on every free: with no cross-stream frees under way, skip the hashing.
        !self.counts.is_empty() && self.counts.contains_key(&idx)
    }
}

impl<M: RawMemory> Inner<M> {
    /// `Tensor.record_stream(stream)` for the block at `ptr`: its free will wait on `stream`.
    /// A use on the block's own stream is ignored, as in PyTorch.
    pub fn record_stream(&mut self, ptr: DevicePtr, stream: StreamId) -> Result<(), AllocError> {
        let idx = *self
            .active
            .get(&ptr)
            .ok_or(AllocError::InvalidPointer(ptr))?;
        if self.arena[idx].stream != stream {
            let uses = self.events.uses.entry(idx).or_default();
            if !uses.contains(&stream) {
                uses.push(stream);
            }
        }
        Ok(())
    }

    /// At a free: if the block was used on other streams, record one event on each and keep the
    /// block (still active) until they complete; true if it waits.
    pub fn insert_events(&mut self, idx: u32) -> bool {
        // Every free asks: a program that never calls record_stream pays one length check.
        if self.events.uses.is_empty() {
            return false;
        }
        let Some(streams) = self.events.uses.remove(&idx) else {
            return false;
        };
        self.events.counts.insert(idx, streams.len() as u32);
        for stream in streams {
            let at = self.events.waiting.iter().position(|(s, _)| *s == stream);
            match at {
                Some(i) => self.events.waiting[i].1.push_back(idx),
                None => self.events.waiting.push((stream, VecDeque::from([idx]))),
            }
        }
        true
    }

    /// Complete every outstanding event (Note [events complete at the next request]): a block
    /// whose last event completes returns to its pool.
    pub fn process_events(&mut self) {
        if self.events.waiting.is_empty() {
            return;
        }
        for (_, blocks) in std::mem::take(&mut self.events.waiting) {
            for idx in blocks {
                let left = self
                    .events
                    .counts
                    .get_mut(&idx)
                    .expect("a waiting block has a count");
                *left -= 1;
                if *left == 0 {
                    self.events.counts.remove(&idx);
                    self.free_block(idx);
                }
            }
        }
    }
}
