//! Giving cached memory back to the device: `empty_cache`, the OOM-path flushes, and garbage collection.

use super::block::NIL;
use super::caching::Inner;
use super::error::AllocError;
use super::history::TraceAction;
use super::raw::RawMemory;
use super::stats::PoolKind;
use super::StreamId;

impl<M: RawMemory> Inner<M> {
    /// `empty_cache`: releases every wholly free segment and unmaps free expandable pages.
    ///
    /// Note [Whole segments]: a free block that shares its segment with a live one is kept, since
    /// the device frees whole allocations only; so `empty_cache()` leaves `memory_reserved()`
    /// unchanged while any tensor lives in a segment.
    pub fn release_cached_blocks(&mut self) -> Result<(), AllocError> {
        // synchronize_and_free_events: counted on every call, even with nothing to wait for.
        self.stats.num_sync_all_streams += 1;
        self.process_events();
        self.release_blocks(PoolKind::Large)?;
        self.release_blocks(PoolKind::Small)
    }

    fn release_blocks(&mut self, kind: PoolKind) -> Result<(), AllocError> {
        let candidates = self.pool_mut(kind).blocks.indices();
        let mut to_unmap = Vec::new();
        for idx in candidates {
            let b = &self.arena[idx];
            if b.expandable != NIL {
                to_unmap.push(idx);
            } else if !b.is_split() {
                self.release_block(idx)?;
            }
        }
        for idx in to_unmap {
            self.unmap_block(idx)?;
        }
        Ok(())
    }

    /// Returns a wholly free segment to the device.
    pub fn release_block(&mut self, idx: u32) -> Result<(), AllocError> {
        let b = &self.arena[idx];
        let (ptr, size, kind, stream) = (b.ptr, b.size, b.pool, b.stream);
        self.memory
            .free(ptr, size)
            .map_err(|e| AllocError::from_raw(e, "device memory free"))?;
        self.stats.num_device_free += 1;
        self.trace(TraceAction::SegmentFree, ptr, size, stream, None);
        self.total_allocated_memory -= size;
        self.stats.segment.decrease(kind, 1);
        self.stats.reserved_bytes.decrease(kind, size);
        if size >= self.config.max_split_size() {
            self.stats.oversize_segments.decrease(1);
        }
        let b = self.arena.remove(idx);
        self.pool_mut(kind).remove(&b);
        Ok(())
    }

    /// OOM try 2: frees cached oversize blocks of this stream and pool, only when
    /// max_split_size is set (Note [Retry order] in `caching`). True if enough was freed.
    pub fn release_available_cached_blocks(
        &mut self,
        stream: StreamId,
        size: usize,
        kind: PoolKind,
    ) -> Result<bool, AllocError> {
        let max_split = self.config.max_split_size();
        if max_split == usize::MAX {
            return Ok(false);
        }
        let key_size = size.max(max_split);
        let single = self.pool_mut(kind).blocks.at_least(stream, key_size).next();
        if let Some((_, _, i)) = single {
            if self.arena[i].expandable == NIL && !self.arena[i].is_split() {
                self.release_block(i)?;
                return Ok(true);
            }
        }
        // No single block is large enough: free oversize blocks from the largest down.
        let below: Vec<(usize, u32)> = self
            .pool_mut(kind)
            .blocks
            .below(stream, key_size)
            .take_while(|&(size, _, _)| size >= max_split)
            .map(|(size, _, i)| (size, i))
            .collect();
        let mut released = 0usize;
        for (bytes, i) in below {
            if released >= key_size {
                break;
            }
            if self.arena[i].expandable == NIL && !self.arena[i].is_split() {
                self.release_block(i)?;
                released += bytes;
            }
        }
        Ok(released >= key_size)
    }

    /// Frees old unsplit large-pool blocks once reserved memory passes the GC threshold
    /// of the allowed memory (`garbage_collection_threshold`, acting only under
    /// `set_per_process_memory_fraction`): those at least as old as the average, age counted in
    /// best-fit searches since the block was cached, until enough is reclaimed.
    pub fn garbage_collect(&mut self) -> Result<(), AllocError> {
        let Some(allowed) = self.allowed_memory_maximum else {
            return Ok(());
        };
        let threshold = (self.config.garbage_collection_threshold() * allowed as f64) as usize;
        if self.total_allocated_memory <= threshold {
            return Ok(());
        }
        let target = self.total_allocated_memory - threshold;
        let clock = self.large.get_free_blocks_call_count;
        let age = |b: &super::block::Block| clock - b.gc_count_base;
        let (mut total_age, mut count) = (0u64, 0u64);
        for i in self.large.blocks.indices() {
            let b = &self.arena[i];
            if !b.is_split() {
                total_age += age(b);
                count += 1;
            }
        }
        let mut reclaimed = 0usize;
        let mut freed_any = true;
        while reclaimed < target && freed_any && count > 0 {
            let threshold_age = total_age as f64 / count as f64;
            freed_any = false;
            let candidates = self.large.blocks.indices();
            for i in candidates {
                let b = &self.arena[i];
                if !b.is_split() && b.expandable == NIL && age(b) as f64 >= threshold_age {
                    freed_any = true;
                    reclaimed += b.size;
                    total_age -= age(b);
                    count -= 1;
                    self.release_block(i)?;
                }
            }
        }
        Ok(())
    }
}
