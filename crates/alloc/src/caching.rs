//! The caching allocator of one device: best-fit reuse, splitting and merging, in the order of
//! PyTorch's `DeviceCachingAllocator` (c10/cuda/CUDACachingAllocator.cpp).

use std::sync::{Arc, Mutex, MutexGuard};

use super::block::{Arena, Block, BlockPool, PtrMap, NIL};
use super::config::AllocConfig;
use super::error::AllocError;
use super::history::{History, TraceAction};
use super::raw::{RawError, RawMemory};
use super::size::{get_allocation_size, MIN_BLOCK_SIZE, ONE_EXA_BYTES, SMALL_SIZE};
use super::stats::{DeviceStats, PoolKind};
use super::{DevicePtr, StreamId};

/// PyTorch's `DeviceCachingAllocator` for one device, over raw memory `M`. Thread-safe: one lock.
pub struct CachingAllocator<M: RawMemory> {
    pub(super) device: usize,
    pub(super) inner: Mutex<Inner<M>>,
}

/// The state behind the lock.
pub(super) struct Inner<M> {
    pub device: usize,
    pub memory: M,
    pub config: AllocConfig,
    pub arena: Arena,
    pub large: BlockPool,
    pub small: BlockPool,
    /// Handed-out blocks by address.
    pub active: PtrMap,
    pub stats: DeviceStats,
    /// Bytes held from the device (segments and mapped pages).
    pub total_allocated_memory: usize,
    /// The per-process memory fraction's limit in bytes, once set.
    pub allowed_memory_maximum: Option<usize>,
    pub history: History,
    /// Expandable segments by index (None once released).
    pub expandable: Vec<Option<super::expandable::ExpandableSegment>>,
    /// Fault injection: how many more requests succeed before one fails as out of memory.
    pub fail_after: Option<u64>,
    /// The peak of allocated bytes since the last `take_window_peak` (the ledger's, apart from
    /// the user's `max_memory_allocated`).
    pub window_peak: i64,
    /// What the last out-of-memory failure found, until someone takes it.
    pub last_oom: Option<super::oom_diagnosis::OomDiagnosis>,
    /// Where the allocated and reserved peaks were reached.
    pub peaks: super::peak_moments::PeakMoments,
    /// Bytes per role, for the breakdown at each peak (Note [roles]).
    pub roles: super::peak_moments::RoleBook,
    /// Frees that wait on other streams' events (`stream_events`).
    pub events: super::stream_events::StreamEvents,
}

impl<M: RawMemory> CachingAllocator<M> {
    /// An empty allocator for device `device_index` over `memory`.
    pub fn new(device_index: usize, memory: M, config: AllocConfig) -> Self {
        CachingAllocator {
            device: device_index,
            inner: Mutex::new(Inner {
                device: device_index,
                memory,
                config,
                arena: Arena::default(),
                large: BlockPool::default(),
                small: BlockPool::default(),
                active: PtrMap::default(),
                stats: DeviceStats::default(),
                total_allocated_memory: 0,
                allowed_memory_maximum: None,
                history: History::default(),
                expandable: Vec::new(),
                fail_after: None,
                window_peak: 0,
                last_oom: None,
                peaks: Default::default(),
                roles: Default::default(),
                events: Default::default(),
            }),
        }
    }

    /// Locks the device's state; a panic elsewhere never makes the allocator unusable.
    pub(super) fn lock(&self) -> MutexGuard<'_, Inner<M>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the raw memory under the allocator's lock (e.g. to inspect the simulated device).
    pub fn with_memory<R>(&self, f: impl FnOnce(&M) -> R) -> R {
        f(&self.lock().memory)
    }

    /// A copy of the settings in force.
    pub fn config(&self) -> AllocConfig {
        self.lock().config.clone()
    }

    /// The statistics as a structure (the same numbers as `memory_stats`).
    pub fn stats(&self) -> DeviceStats {
        self.lock().stats.clone()
    }
}

impl<M: RawMemory> Inner<M> {
    #[inline]
    pub fn pool_mut(&mut self, kind: PoolKind) -> &mut BlockPool {
        match kind {
            PoolKind::Large => &mut self.large,
            PoolKind::Small => &mut self.small,
        }
    }

    /// Records a trace entry when history is on.
    #[inline]
    pub fn trace(
        &mut self,
        action: TraceAction,
        addr: u64,
        size: usize,
        stream: StreamId,
        tag: Option<&Arc<str>>,
    ) {
        if self.history.enabled {
            self.history.record(action, addr, size as u64, stream, tag);
        }
    }

    /// Hands out a block of at least `n` bytes on `stream`: round, reuse a cached block or make a
    /// segment, then split (PyTorch's `malloc`).
    pub fn malloc(
        &mut self,
        n: usize,
        stream: StreamId,
        tag: Option<Arc<str>>,
    ) -> Result<DevicePtr, AllocError> {
        if n == 0 {
            // As PyTorch: a zero-byte request touches nothing and gets the null pointer.
            return Ok(0);
        }
        self.process_events();
        if n >= ONE_EXA_BYTES {
            return Err(self.exa_error(n));
        }
        let size = self.config.round_size(n);
        if self.injected_failure_due() {
            return Err(self.out_of_memory(stream, size, get_allocation_size(size)));
        }
        let kind = PoolKind::of_size(size);
        let found = match self.get_free_block(stream, size, kind) {
            Some(i) => Some(i),
            None => self.allocate_new(stream, size, kind, &tag)?,
        };
        let Some(idx) = found else {
            return Err(self.out_of_memory(stream, size, get_allocation_size(size)));
        };
        let split = self.should_split(idx, size);
        Ok(self.alloc_found_block(idx, n, size, split, tag))
    }

    /// Whether fault injection fails this request (counting it down otherwise).
    fn injected_failure_due(&mut self) -> bool {
        match self.fail_after {
            Some(0) => {
                self.fail_after = None;
                true
            }
            Some(n) => {
                self.fail_after = Some(n - 1);
                false
            }
            None => false,
        }
    }

    /// The error for requests of 2^60 bytes or more, raised before anything else.
    fn exa_error(&self, n: usize) -> AllocError {
        AllocError::OutOfMemory {
            message: "CUDA out of memory. Tried to allocate more than 1EB memory.".into(),
            device: self.device,
            tried: n as u64,
            free: 0,
            total: 0,
        }
    }

    /// Best fit among cached blocks: same stream, smallest size, lowest address.
    ///
    /// Note [Same stream only]: the pool is ordered by (stream, size, address), so the search
    /// never leaves the request's stream: a block freed on another stream may still be read by
    /// work queued there, and reusing it without an event would race.
    fn get_free_block(&mut self, stream: StreamId, size: usize, kind: PoolKind) -> Option<u32> {
        let gc_on = self.allowed_memory_maximum.is_some()
            && self.config.garbage_collection_threshold() > 0.0;
        let expandable_on = self.config.expandable_segments();
        let max_split = self.config.max_split_size();
        let max_rounding = self.config.max_non_split_rounding();
        let arena = &self.arena;
        let pool = match kind {
            PoolKind::Large => &mut self.large,
            PoolKind::Small => &mut self.small,
        };
        if gc_on {
            pool.get_free_blocks_call_count += 1;
        }
        let (found, ptr, idx) = {
            let mut it = pool.blocks.at_least(stream, size);
            let (mut found, mut ptr, mut idx) = it.next()?;
            if arena[idx].expandable != NIL {
                if expandable_on {
                    // An expandable block counts with the unmapped space after it, which it can grow into.
                    let grow = |i: u32| {
                        let b = &arena[i];
                        b.size
                            + if b.next != NIL && !arena[b.next].mapped {
                                arena[b.next].size
                            } else {
                                0
                            }
                    };
                    for (s, p, i) in it {
                        if arena[idx].expandable == NIL || grow(i) >= grow(idx) {
                            break;
                        }
                        (found, ptr, idx) = (s, p, i);
                    }
                } else {
                    // Expandable segments were switched off: only ordinary blocks qualify.
                    loop {
                        (found, ptr, idx) = it.next()?;
                        if arena[idx].expandable == NIL {
                            break;
                        }
                    }
                }
            }
            (found, ptr, idx)
        };
        // Note [Oversize blocks]: blocks of max_split_size or more are never split (see
        // `should_split`), so a smaller request would hold one whole and waste the rest: only an
        // oversize request may take one, and only when that wastes less than
        // max_non_split_rounding (20 MiB by default). Unset, max_split_size is unlimited and
        // neither rule fires.
        if size < max_split && found >= max_split {
            return None;
        }
        if size >= max_split && found >= size.saturating_add(max_rounding) {
            return None;
        }
        pool.blocks.remove(stream, found, ptr);
        Some(idx)
    }

    /// When no cached block fits: garbage collection (with a memory fraction and a threshold set),
    /// then three tries of a new segment.
    ///
    /// Note [Retry order]: cheapest first, as PyTorch. A new segment costs nothing cached; freeing
    /// cached oversize blocks (only when max_split_size is set: they alone cannot be split to
    /// serve the request) loses little; flushing every free segment (what `empty_cache` does)
    /// waits on every stream and empties the cache, so it comes last and is what
    /// `num_alloc_retries` counts, whether or not the try then succeeds.
    fn allocate_new(
        &mut self,
        stream: StreamId,
        size: usize,
        kind: PoolKind,
        tag: &Option<Arc<str>>,
    ) -> Result<Option<u32>, AllocError> {
        if self.allowed_memory_maximum.is_some() && self.config.garbage_collection_threshold() > 0.0
        {
            self.garbage_collect()?;
        }
        if let Some(i) = self.alloc_block(stream, size, kind, false, tag)? {
            return Ok(Some(i));
        }
        if self.release_available_cached_blocks(stream, size, kind)? {
            if let Some(i) = self.alloc_block(stream, size, kind, false, tag)? {
                return Ok(Some(i));
            }
        }
        self.release_cached_blocks()?;
        self.alloc_block(stream, size, kind, true, tag)
    }

    /// Asks the device for a new segment (or maps expandable pages); `None` when it has no room.
    fn alloc_block(
        &mut self,
        stream: StreamId,
        size: usize,
        kind: PoolKind,
        is_retry: bool,
        tag: &Option<Arc<str>>,
    ) -> Result<Option<u32>, AllocError> {
        if is_retry {
            self.stats.num_alloc_retries += 1;
        }
        let alloc_size = get_allocation_size(size);
        if let Some(allowed) = self.allowed_memory_maximum {
            if self.total_allocated_memory + alloc_size > allowed {
                return Ok(None);
            }
        }
        if self.config.expandable_segments() {
            return self.try_allocate_expandable_block(stream, kind, size, tag.as_ref());
        }
        let ptr = match self.memory.allocate(alloc_size) {
            Ok(p) => p,
            Err(RawError::OutOfMemory) => return Ok(None),
            Err(e) => return Err(AllocError::from_raw(e, "device memory allocation")),
        };
        self.total_allocated_memory += alloc_size;
        let idx = self.arena.insert(Block::new(ptr, alloc_size, stream, kind));
        self.stats.segment.increase(kind, 1);
        self.stats.reserved_bytes.increase(kind, alloc_size);
        if alloc_size >= self.config.max_split_size() {
            self.stats.oversize_segments.increase(1);
        }
        self.stats.num_device_alloc += 1;
        self.trace(
            TraceAction::SegmentAlloc,
            ptr,
            alloc_size,
            stream,
            tag.as_ref(),
        );
        Ok(Some(idx))
    }

    /// Whether handing out `size` bytes of block `idx` leaves a remainder worth keeping.
    ///
    /// Note [Split rule]: a small-pool remainder is kept from 512 B, the smallest block, since
    /// 2 MiB small segments exist to be shared by many small tensors. A large-pool remainder is
    /// kept only above 1 MiB (strictly): no large-pool request fits in 1 MiB or less (they are
    /// all larger) and small ones never look there, so it goes out with the block and counts in
    /// `memory_allocated` (19 MiB asked of a 20 MiB segment shows 20 MiB allocated). Oversize
    /// requests are never split (Note [Oversize blocks]); expandable segments split at 512 B in
    /// both pools, since their free pages can be unmapped later.
    #[inline]
    fn should_split(&self, idx: u32, size: usize) -> bool {
        let b = &self.arena[idx];
        let remaining = b.size - size;
        if b.pool == PoolKind::Small || self.config.expandable_segments() {
            remaining >= MIN_BLOCK_SIZE
        } else {
            size < self.config.max_split_size() && remaining > SMALL_SIZE
        }
    }

    /// Hands out block `idx` (split first if asked), with its inactive-split bookkeeping.
    ///
    /// Note [Inactive split]: `inactive_split` counts the free pieces of split segments, memory
    /// `empty_cache` cannot return. Splitting an unsplit block creates one piece (the remainder);
    /// splitting a piece only shrinks it by `size`; handing a piece out whole removes it.
    /// Expandable segments keep these statistics at zero, as in PyTorch.
    fn alloc_found_block(
        &mut self,
        idx: u32,
        n: usize,
        size: usize,
        split: bool,
        tag: Option<Arc<str>>,
    ) -> DevicePtr {
        let (kind, stream, already_split, expandable) = {
            let b = &self.arena[idx];
            (b.pool, b.stream, b.is_split(), b.expandable != NIL)
        };
        if split {
            let rest_size = self.split_block(idx, size);
            if !expandable {
                if already_split {
                    self.stats.inactive_split_bytes.decrease(kind, size);
                } else {
                    self.stats.inactive_split_bytes.increase(kind, rest_size);
                    self.stats.inactive_split.increase(kind, 1);
                }
            }
        } else if already_split && !expandable {
            let whole = self.arena[idx].size;
            self.stats.inactive_split_bytes.decrease(kind, whole);
            self.stats.inactive_split.decrease(kind, 1);
        }
        let b = &mut self.arena[idx];
        b.allocated = true;
        b.requested = n;
        let (ptr, block_size) = (b.ptr, b.size);
        if self.history.enabled {
            self.history
                .record(TraceAction::Alloc, ptr, n as u64, stream, tag.as_ref());
        }
        self.arena.set_tag(idx, tag);
        self.active.insert(ptr, idx);
        let s = &mut self.stats;
        s.allocation.increase(kind, 1);
        s.allocated_bytes.increase(kind, block_size);
        self.window_peak = self.window_peak.max(s.allocated_bytes.all().current);
        s.active.increase(kind, 1);
        s.active_bytes.increase(kind, block_size);
        s.requested_bytes.increase(kind, n);
        if block_size >= self.config.max_split_size() {
            s.oversize_allocations.increase(1);
        }
        self.roles
            .allocated(ptr, block_size as u64, crate::site::run());
        // Cheap unless a peak is beaten: then one handle to the statement's name is cloned.
        let (allocated, reserved) = (
            s.allocated_bytes.all().current as u64,
            s.reserved_bytes.all().current as u64,
        );
        self.roles.sample(allocated, reserved);
        if allocated > self.peaks.allocated.allocated || reserved > self.peaks.reserved.reserved {
            let now = self.moment(self.arena.tag(idx).cloned());
            self.peaks.observe(now);
        }
        ptr
    }

    /// The allocator's state now, as made by a request from `site`.
    pub(crate) fn moment(
        &self,
        site: Option<std::sync::Arc<str>>,
    ) -> super::peak_moments::PeakMoment {
        let s = &self.stats;
        super::peak_moments::PeakMoment {
            allocated: s.allocated_bytes.all().current as u64,
            reserved: s.reserved_bytes.all().current as u64,
            segments: s.segment.all().current as u64,
            site,
            stack: crate::site::stack(),
            breakdown: self.roles.breakdown(s.allocated_bytes.all().current as u64),
        }
    }

    /// Cuts block `idx` down to `size` bytes; the rest becomes a free block after it, cached in
    /// the same pool (it keeps the stale requested size, as PyTorch's remainder does). Returns
    /// the rest's size.
    fn split_block(&mut self, idx: u32, size: usize) -> usize {
        let b = &self.arena[idx];
        let kind = b.pool;
        let mut rest = Block::new(b.ptr + size as u64, b.size - size, b.stream, kind);
        (rest.requested, rest.prev, rest.next, rest.expandable) =
            (b.requested, idx, b.next, b.expandable);
        let (rest_size, next) = (rest.size, rest.next);
        let r = self.arena.insert(rest);
        if next != NIL {
            self.arena[next].prev = r;
        }
        let b = &mut self.arena[idx];
        b.next = r;
        b.size = size;
        let (pool, arena) = match kind {
            PoolKind::Large => (&mut self.large, &mut self.arena),
            PoolKind::Small => (&mut self.small, &mut self.arena),
        };
        pool.insert(arena, r);
        rest_size
    }

    /// Block `ptr` holds `role` (ignored unless it is handed out here; Note [roles]).
    pub fn set_role(&mut self, ptr: DevicePtr, role: super::peak_moments::Role) {
        if let Some(&idx) = self.active.get(&ptr) {
            let size = self.arena[idx].size as u64;
            let tag = self.arena.tag(idx).cloned();
            self.roles.set(ptr, size, role, tag.as_ref());
        }
    }

    /// Takes back a handed-out block: it stops counting as allocated at once, then returns to its
    /// pool (no device free: the memory stays cached for the next request).
    pub fn free(&mut self, ptr: DevicePtr) -> Result<(), AllocError> {
        if ptr == 0 {
            return Ok(());
        }
        let idx = self
            .active
            .remove(&ptr)
            .ok_or(AllocError::InvalidPointer(ptr))?;
        self.roles.freed(ptr, self.arena.tag(idx));
        let b = &mut self.arena[idx];
        b.allocated = false;
        let (kind, size, requested, stream) = (b.pool, b.size, b.requested, b.stream);
        self.stats.allocation.decrease(kind, 1);
        self.stats.allocated_bytes.decrease(kind, size);
        if self.history.enabled {
            // The statement that frees it, as PyTorch's "all" context records the stack of the
            // free; the block's own statement when no script statement runs.
            let current = crate::site::current();
            let tag = current.as_ref().or(self.arena.tag(idx));
            self.history.record(
                TraceAction::FreeRequested,
                ptr,
                requested as u64,
                stream,
                tag,
            );
        }
        if size >= self.config.max_split_size() {
            self.stats.oversize_allocations.decrease(1);
        }
        if !self.insert_events(idx) {
            self.free_block(idx);
        }
        let s = &self.stats;
        let now = (
            s.allocated_bytes.all().current as u64,
            s.reserved_bytes.all().current as u64,
        );
        self.roles.sample(now.0, now.1);
        Ok(())
    }

    /// Returns a block to its pool, merging it with free neighbours of its segment (never
    /// across segments); the inactive-split change is netted and applied once.
    ///
    /// Note [Netting]: a merge removes pieces (−1 and −size per neighbour absorbed) and may
    /// leave one bigger piece (+1 and +size when the block is still split). PyTorch adds these
    /// up first and applies the sum as one increase or one decrease, so `memory_summary`'s Tot
    /// Alloc and Tot Freed columns of "Non-releasable memory" move by the net change only:
    /// freeing a tensor beside a free tail counts its size once as allocated, nothing as freed.
    pub fn free_block(&mut self, idx: u32) {
        let tag = self.arena.take_tag(idx);
        let b = &self.arena[idx];
        let (kind, original_size, requested, stream, ptr) =
            (b.pool, b.size, b.requested, b.stream, b.ptr);
        let (prev, next, expandable) = (b.prev, b.next, b.expandable != NIL);
        if self.history.enabled {
            let current = crate::site::current();
            self.history.record(
                TraceAction::FreeCompleted,
                ptr,
                requested as u64,
                stream,
                current.as_ref().or(tag.as_ref()),
            );
        }
        let (mut net_count, mut net_bytes) = (0i64, 0i64);
        for neighbour in [prev, next] {
            let subsumed = self.try_merge_blocks(idx, neighbour);
            if subsumed > 0 {
                net_count -= 1;
                net_bytes -= subsumed as i64;
            }
        }
        let (pool, arena) = match kind {
            PoolKind::Large => (&mut self.large, &mut self.arena),
            PoolKind::Small => (&mut self.small, &mut self.arena),
        };
        pool.insert(arena, idx);
        let b = &self.arena[idx];
        if b.is_split() {
            net_count += 1;
            net_bytes += b.size as i64;
        }
        let s = &mut self.stats;
        if !expandable {
            apply_net(&mut s.inactive_split, kind, net_count);
            apply_net(&mut s.inactive_split_bytes, kind, net_bytes);
        }
        s.active.decrease(kind, 1);
        s.active_bytes.decrease(kind, original_size);
        s.requested_bytes.decrease(kind, requested);
    }

    /// Absorbs free neighbour `src` into `dst` (which is in no pool); returns the bytes absorbed.
    #[inline]
    pub fn try_merge_blocks(&mut self, dst: u32, src: u32) -> usize {
        if src == NIL {
            return 0;
        }
        let s = &self.arena[src];
        if s.allocated || self.events.is_pending(src) || s.mapped != self.arena[dst].mapped {
            return 0;
        }
        self.merge(dst, src)
    }

    fn merge(&mut self, dst: u32, src: u32) -> usize {
        let s = &self.arena[src];
        let (ptr, size, prev, next, stream, mapped) =
            (s.ptr, s.size, s.prev, s.next, s.stream, s.mapped);
        let pool = self.pool_mut(s.pool);
        if mapped {
            pool.blocks.remove(stream, size, ptr);
        } else {
            pool.unmapped.remove(&(stream, ptr));
        }
        self.arena.discard(src);
        let d = &mut self.arena[dst];
        d.size += size;
        if d.prev == src {
            d.ptr = ptr;
            d.prev = prev;
            if prev != NIL {
                self.arena[prev].next = dst;
            }
        } else {
            d.next = next;
            if next != NIL {
                self.arena[next].prev = dst;
            }
        }
        size
    }
}

/// Applies a netted change to a stat array as one increase or one decrease.
#[inline]
fn apply_net(array: &mut super::stats::StatArray, kind: PoolKind, net: i64) {
    if net > 0 {
        array.increase(kind, net as usize);
    } else if net < 0 {
        array.decrease(kind, (-net) as usize);
    }
}
