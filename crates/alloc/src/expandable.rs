//! Expandable segments (`expandable_segments:True`): one reserved address range per (stream,
//! pool), with physical pages mapped on demand and unmapped when free, so a segment grows in place
//! instead of new segments piling up beside it (less fragmentation when sizes vary).

use std::sync::Arc;

use super::block::{Block, NIL};
use super::caching::Inner;
use super::error::AllocError;
use super::history::TraceAction;
use super::raw::{RawError, RawMemory};
use super::size::{LARGE_BUFFER, SMALL_BUFFER};
use super::stats::PoolKind;
use super::{DevicePtr, StreamId};

/// One reserved virtual address range.
#[derive(Clone, Debug)]
pub(crate) struct ExpandableSegment {
    pub ptr: DevicePtr,
    pub size: usize,
    /// Mapping granularity: 2 MiB for the small pool, 20 MiB for the large pool.
    pub page: usize,
}

impl<M: RawMemory> Inner<M> {
    /// Finds (or reserves) address space for `size` bytes and maps what is missing; the
    /// result is a free mapped block of at least `size` bytes, taken out of its pool.
    pub fn try_allocate_expandable_block(
        &mut self,
        stream: StreamId,
        kind: PoolKind,
        size: usize,
        tag: Option<&Arc<str>>,
    ) -> Result<Option<u32>, AllocError> {
        let mut c = self.find_expandable_block(stream, kind, size)?;
        if !self.arena[c].mapped {
            let want = self.arena[c].size.min(size);
            if !self.map_block(c, want, tag)? {
                return Ok(None);
            }
        }
        while self.arena[c].size < size {
            // Invariant: a free mapped block is followed by unmapped space it can grow into.
            let remaining = size - self.arena[c].size;
            let next = self.arena[c].next;
            let want = remaining.min(self.arena[next].size);
            if !self.map_block(next, want, tag)? {
                return Ok(None);
            }
            c = next;
        }
        let b = self.arena[c];
        self.pool_mut(kind).remove(&b);
        Ok(Some(c))
    }

    /// The lowest unmapped range of this stream and pool with enough free address space
    /// (counting a free mapped block just before it), or a freshly reserved segment.
    fn find_expandable_block(
        &mut self,
        stream: StreamId,
        kind: PoolKind,
        size: usize,
    ) -> Result<u32, AllocError> {
        let arena = &self.arena;
        let free = |i: u32| i != NIL && !arena[i].allocated;
        let has_room = |mut i: u32| {
            let mut bytes = 0;
            while bytes < size && free(i) {
                bytes += arena[i].size;
                i = arena[i].next;
            }
            bytes >= size
        };
        let pool = match kind {
            PoolKind::Large => &self.large,
            PoolKind::Small => &self.small,
        };
        for (&(s, _), &u) in pool.unmapped.range((stream, 0)..) {
            if s != stream {
                break;
            }
            let prev = arena[u].prev;
            let c = if free(prev) { prev } else { u };
            if has_room(c) {
                return Ok(c);
            }
        }
        self.reserve_expandable_segment(stream, kind)
    }

    /// Reserves 9/8 of the device's memory as address space for a new expandable segment.
    fn reserve_expandable_segment(
        &mut self,
        stream: StreamId,
        kind: PoolKind,
    ) -> Result<u32, AllocError> {
        let (_, total) = self
            .memory
            .mem_get_info()
            .map_err(|e| AllocError::from_raw(e, "device memory query"))?;
        let page = match kind {
            PoolKind::Small => SMALL_BUFFER,
            PoolKind::Large => LARGE_BUFFER,
        };
        let size = (total / 8 * 9).div_ceil(page).max(1) * page;
        let ptr = self
            .memory
            .reserve(size)
            .map_err(|e| AllocError::from_raw(e, "expandable segments address reservation"))?;
        let seg = self.expandable.len() as u32;
        self.expandable
            .push(Some(ExpandableSegment { ptr, size, page }));
        let mut b = Block::new(ptr, size, stream, kind);
        b.mapped = false;
        b.expandable = seg;
        let i = self.arena.insert(b);
        self.pool_mut(kind).unmapped.insert((stream, ptr), i);
        Ok(i)
    }

    fn segment_of(&self, i: u32) -> ExpandableSegment {
        let s = self.arena[i].expandable;
        self.expandable[s as usize]
            .clone()
            .expect("live expandable segment")
    }

    /// Maps the pages covering the first `size` bytes of unmapped block `i` and merges the mapped
    /// part with free mapped neighbours. False when the device has no room.
    fn map_block(
        &mut self,
        i: u32,
        size: usize,
        tag: Option<&Arc<str>>,
    ) -> Result<bool, AllocError> {
        let page = self.segment_of(i).page;
        let (ptr, whole, kind, stream) = {
            let b = &self.arena[i];
            (b.ptr, b.size, b.pool, b.stream)
        };
        let bytes = size.div_ceil(page) * page;
        match self.memory.map(ptr, bytes) {
            Ok(()) => {}
            Err(RawError::OutOfMemory) => return Ok(false),
            Err(e) => return Err(AllocError::from_raw(e, "expandable segment mapping")),
        }
        self.pool_mut(kind).unmapped.remove(&(stream, ptr));
        self.arena[i].mapped = true;
        if bytes < whole {
            let mut rest = Block::new(ptr + bytes as u64, whole - bytes, stream, kind);
            (rest.mapped, rest.expandable, rest.prev, rest.next) =
                (false, self.arena[i].expandable, i, self.arena[i].next);
            let next = rest.next;
            let r = self.arena.insert(rest);
            if next != NIL {
                self.arena[next].prev = r;
            }
            self.arena[i].next = r;
            self.arena[i].size = bytes;
            self.pool_mut(kind)
                .unmapped
                .insert((stream, ptr + bytes as u64), r);
        }
        let (prev, next) = (self.arena[i].prev, self.arena[i].next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        let (pool, arena) = match kind {
            PoolKind::Large => (&mut self.large, &mut self.arena),
            PoolKind::Small => (&mut self.small, &mut self.arena),
        };
        pool.insert(arena, i);
        self.total_allocated_memory += bytes;
        self.stats.reserved_bytes.increase(kind, bytes);
        self.stats.num_device_alloc += 1;
        self.trace(TraceAction::SegmentMap, ptr, bytes, stream, tag);
        Ok(true)
    }

    /// Unmaps the whole pages inside free block `i`; releases the segment once nothing in it is mapped.
    pub fn unmap_block(&mut self, i: u32) -> Result<(), AllocError> {
        let seg = self.segment_of(i);
        let (ptr, size, kind, stream) = {
            let b = &self.arena[i];
            (b.ptr, b.size, b.pool, b.stream)
        };
        let page = seg.page as u64;
        let begin = seg.ptr + (ptr - seg.ptr).div_ceil(page) * page;
        let end = seg.ptr + (ptr + size as u64 - seg.ptr) / page * page;
        if begin >= end {
            return Ok(());
        }
        let bytes = (end - begin) as usize;
        self.memory
            .unmap(begin, bytes)
            .map_err(|e| AllocError::from_raw(e, "expandable segment unmapping"))?;
        let b = self.arena[i];
        self.pool_mut(kind).remove(&b);
        if begin > ptr {
            self.splice_free_before(i, (begin - ptr) as usize);
        }
        if end < ptr + size as u64 {
            self.splice_free_after(i, end, (ptr + size as u64 - end) as usize);
        }
        let b = &mut self.arena[i];
        (b.ptr, b.size, b.mapped) = (begin, bytes, false);
        let (prev, next) = (b.prev, b.next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        let merged_ptr = self.arena[i].ptr;
        self.pool_mut(kind).unmapped.insert((stream, merged_ptr), i);
        self.total_allocated_memory -= bytes;
        self.stats.reserved_bytes.decrease(kind, bytes);
        self.stats.num_device_free += 1;
        self.trace(TraceAction::SegmentUnmap, begin, bytes, stream, None);
        if !self.arena[i].is_split() {
            self.release_expandable_segment(i)?;
        }
        Ok(())
    }

    /// Splits a free mapped block of `bytes` off the front of block `i`.
    fn splice_free_before(&mut self, i: u32, bytes: usize) {
        let b = &self.arena[i];
        let mut f = Block::new(b.ptr, bytes, b.stream, b.pool);
        (f.expandable, f.prev, f.next) = (b.expandable, b.prev, i);
        let (prev, kind) = (b.prev, b.pool);
        let n = self.arena.insert(f);
        if prev != NIL {
            self.arena[prev].next = n;
        }
        self.arena[i].prev = n;
        let (pool, arena) = match kind {
            PoolKind::Large => (&mut self.large, &mut self.arena),
            PoolKind::Small => (&mut self.small, &mut self.arena),
        };
        pool.insert(arena, n);
    }

    /// Splits a free mapped block of `bytes` at `at` off the back of block `i`.
    fn splice_free_after(&mut self, i: u32, at: DevicePtr, bytes: usize) {
        let b = &self.arena[i];
        let mut f = Block::new(at, bytes, b.stream, b.pool);
        (f.expandable, f.prev, f.next) = (b.expandable, i, b.next);
        let (next, kind) = (b.next, b.pool);
        let n = self.arena.insert(f);
        if next != NIL {
            self.arena[next].prev = n;
        }
        self.arena[i].next = n;
        let (pool, arena) = match kind {
            PoolKind::Large => (&mut self.large, &mut self.arena),
            PoolKind::Small => (&mut self.small, &mut self.arena),
        };
        pool.insert(arena, n);
    }

    /// Gives back the address reservation of a segment whose only block is unmapped block `i`.
    fn release_expandable_segment(&mut self, i: u32) -> Result<(), AllocError> {
        let seg = self.segment_of(i);
        self.memory
            .release_reservation(seg.ptr, seg.size)
            .map_err(|e| AllocError::from_raw(e, "expandable segment release"))?;
        let b = self.arena.remove(i);
        self.pool_mut(b.pool).remove(&b);
        self.expandable[b.expandable as usize] = None;
        Ok(())
    }
}
