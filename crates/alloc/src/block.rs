//! Blocks in an index arena, and the pools that keep free blocks ordered by (stream, size, address).

use std::collections::BTreeMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use super::stats::PoolKind;
use super::{DevicePtr, StreamId};

/// "No block": the end of a segment's chain, or a block outside any expandable segment.
pub(crate) const NIL: u32 = u32::MAX;

/// One contiguous piece of a segment, handed out or cached: plain data, one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(crate) struct Block {
    pub ptr: DevicePtr,
    pub size: usize,
    /// The caller's byte count of the last allocation of this block (stale once freed, as in PyTorch).
    pub requested: usize,
    pub stream: StreamId,
    /// Physically adjacent blocks of the same segment.
    pub prev: u32,
    pub next: u32,
    pub pool: PoolKind,
    pub allocated: bool,
    /// False only for the unmapped address space of expandable segments.
    pub mapped: bool,
    /// Index of the expandable segment holding this block, or NIL.
    pub expandable: u32,
    /// Value of the pool's get-free-block counter when this block was cached (the GC age base).
    pub gc_count_base: u64,
    /// Whether the arena holds a caller's tag for this block (kept aside, off the hot path).
    pub tagged: bool,
    /// Whether this arena slot holds a block.
    live: bool,
}

impl Block {
    /// A whole segment (or unmapped range) of `size` bytes at `ptr`.
    pub fn new(ptr: DevicePtr, size: usize, stream: StreamId, pool: PoolKind) -> Block {
        Block {
            ptr,
            size,
            requested: 0,
            stream,
            prev: NIL,
            next: NIL,
            pool,
            allocated: false,
            mapped: true,
            expandable: NIL,
            gc_count_base: 0,
            tagged: false,
            live: true,
        }
    }

    /// A block is split when it shares its segment with neighbours.
    #[inline]
    pub fn is_split(&self) -> bool {
        self.prev != NIL || self.next != NIL
    }
}

/// Blocks stored by index, with their slots reused, so links are plain integers. Tags live in
/// a parallel table so that untagged blocks stay plain data.
#[derive(Default)]
pub(crate) struct Arena {
    slots: Vec<Block>,
    tags: Vec<Option<Arc<str>>>,
    vacant: Vec<u32>,
}

impl Arena {
    /// Stores a block and returns its index.
    #[inline]
    pub fn insert(&mut self, block: Block) -> u32 {
        match self.vacant.pop() {
            Some(i) => {
                self.slots[i as usize] = block;
                i
            }
            None => {
                self.slots.push(block);
                self.tags.push(None);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Drops the block at `i`, freeing its slot.
    #[inline]
    pub fn remove(&mut self, i: u32) -> Block {
        self.discard(i);
        self.slots[i as usize]
    }

    /// Drops the block at `i` without handing it back.
    #[inline]
    pub fn discard(&mut self, i: u32) {
        let b = &mut self.slots[i as usize];
        debug_assert!(b.live, "arena slot in use");
        if b.tagged {
            b.tagged = false;
            self.tags[i as usize] = None;
        }
        b.live = false;
        self.vacant.push(i);
    }

    /// Sets (or clears) the caller's tag of block `i`.
    #[inline]
    pub fn set_tag(&mut self, i: u32, tag: Option<Arc<str>>) {
        let b = &mut self.slots[i as usize];
        if b.tagged || tag.is_some() {
            b.tagged = tag.is_some();
            self.tags[i as usize] = tag;
        }
    }

    /// Takes the caller's tag of block `i` away.
    #[inline]
    pub fn take_tag(&mut self, i: u32) -> Option<Arc<str>> {
        let b = &mut self.slots[i as usize];
        if !b.tagged {
            return None;
        }
        b.tagged = false;
        self.tags[i as usize].take()
    }

    /// The caller's tag of block `i`.
    #[inline]
    pub fn tag(&self, i: u32) -> Option<&Arc<str>> {
        if self.slots[i as usize].tagged {
            self.tags[i as usize].as_ref()
        } else {
            None
        }
    }

    /// Every live block with its index.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Block)> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, b)| b.live)
            .map(|(i, b)| (i as u32, b))
    }
}

impl Index<u32> for Arena {
    type Output = Block;
    #[inline]
    fn index(&self, i: u32) -> &Block {
        debug_assert!(self.slots[i as usize].live, "arena slot in use");
        &self.slots[i as usize]
    }
}

impl IndexMut<u32> for Arena {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut Block {
        debug_assert!(self.slots[i as usize].live, "arena slot in use");
        &mut self.slots[i as usize]
    }
}

/// Free blocks of one pool in best-fit order: stream, then size, then address (PyTorch's
/// `BlockComparatorSize`). One ordered map per stream, keyed `size << 64 | address`, keeps the
/// comparisons to one 128-bit compare on the hot path.
#[derive(Default)]
pub(crate) struct FreeBlocks {
    /// Sorted by stream; streams are few, so a short scan finds one.
    by_stream: Vec<(StreamId, BTreeMap<u128, u32>)>,
}

#[inline]
fn free_key(size: usize, ptr: DevicePtr) -> u128 {
    (size as u128) << 64 | ptr as u128
}

#[inline]
fn split_key(k: u128) -> (usize, DevicePtr) {
    ((k >> 64) as usize, k as u64)
}

impl FreeBlocks {
    #[inline]
    fn map(&self, stream: StreamId) -> Option<&BTreeMap<u128, u32>> {
        self.by_stream
            .iter()
            .find(|(s, _)| *s == stream)
            .map(|(_, m)| m)
    }

    #[inline]
    fn map_mut(&mut self, stream: StreamId) -> &mut BTreeMap<u128, u32> {
        let pos = match self.by_stream.iter().position(|(s, _)| *s == stream) {
            Some(p) => p,
            None => {
                let p = self.by_stream.partition_point(|(s, _)| *s < stream);
                self.by_stream.insert(p, (stream, BTreeMap::new()));
                p
            }
        };
        &mut self.by_stream[pos].1
    }

    /// Adds free block `idx`.
    #[inline]
    pub fn insert(&mut self, stream: StreamId, size: usize, ptr: DevicePtr, idx: u32) {
        self.map_mut(stream).insert(free_key(size, ptr), idx);
    }

    /// Removes the free block with this stream, size and address.
    #[inline]
    pub fn remove(&mut self, stream: StreamId, size: usize, ptr: DevicePtr) {
        if let Some((_, m)) = self.by_stream.iter_mut().find(|(s, _)| *s == stream) {
            m.remove(&free_key(size, ptr));
        }
    }

    /// The free blocks of `stream` of at least `size` bytes, best fit first: (size, address, index).
    #[inline]
    pub fn at_least(
        &self,
        stream: StreamId,
        size: usize,
    ) -> impl Iterator<Item = (usize, DevicePtr, u32)> + '_ {
        self.map(stream)
            .into_iter()
            .flat_map(move |m| m.range(free_key(size, 0)..))
            .map(|(k, i)| {
                let (size, ptr) = split_key(*k);
                (size, ptr, *i)
            })
    }

    /// The free blocks of `stream` smaller than `size` bytes, largest first.
    pub fn below(
        &self,
        stream: StreamId,
        size: usize,
    ) -> impl Iterator<Item = (usize, DevicePtr, u32)> + '_ {
        self.map(stream)
            .into_iter()
            .flat_map(move |m| m.range(..free_key(size, 0)).rev())
            .map(|(k, i)| {
                let (size, ptr) = split_key(*k);
                (size, ptr, *i)
            })
    }

    /// Every free block's index, in best-fit order across streams.
    pub fn indices(&self) -> Vec<u32> {
        self.by_stream
            .iter()
            .flat_map(|(_, m)| m.values().copied())
            .collect()
    }
}

/// The free blocks of one pool (small or large).
#[derive(Default)]
pub(crate) struct BlockPool {
    /// Mapped free blocks, best fit first.
    pub blocks: FreeBlocks,
    /// Unmapped ranges of expandable segments, by (stream, address).
    pub unmapped: BTreeMap<(StreamId, DevicePtr), u32>,
    /// Counts get-free-block calls while garbage collection is on: the age clock.
    pub get_free_blocks_call_count: u64,
}

impl BlockPool {
    /// Caches a free mapped block, stamping its GC age base.
    #[inline]
    pub fn insert(&mut self, arena: &mut Arena, i: u32) {
        let b = &mut arena[i];
        b.gc_count_base = self.get_free_blocks_call_count;
        self.blocks.insert(b.stream, b.size, b.ptr, i);
    }

    /// Takes a free block (mapped or not) out of this pool.
    #[inline]
    pub fn remove(&mut self, b: &Block) {
        if b.mapped {
            self.blocks.remove(b.stream, b.size, b.ptr);
        } else {
            self.unmapped.remove(&(b.stream, b.ptr));
        }
    }
}

/// Hashes 512-byte-aligned device addresses: cheap, and spreads them over the table.
#[derive(Default)]
pub(crate) struct PtrHasher(u64);

impl Hasher for PtrHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (n >> 9).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Map from a handed-out block's address to its index.
pub(crate) type PtrMap = std::collections::HashMap<DevicePtr, u32, BuildHasherDefault<PtrHasher>>;
