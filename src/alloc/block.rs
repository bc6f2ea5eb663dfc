//! Blocks in an index arena, and the pools that keep free blocks ordered by (stream, size, address).

use std::collections::BTreeMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Index, IndexMut};
use std::sync::Arc;

use super::stats::PoolKind;
use super::{DevicePtr, StreamId};

/// "No block": the end of a segment's chain, or a block outside any expandable segment.
pub(crate) const NIL: u32 = u32::MAX;

/// One contiguous piece of a segment, handed out or cached.
#[derive(Clone, Debug)]
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
    /// The caller's tag of the allocation that holds this block.
    pub tag: Option<Arc<str>>,
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
            tag: None,
        }
    }

    /// A block is split when it shares its segment with neighbours.
    #[inline]
    pub fn is_split(&self) -> bool {
        self.prev != NIL || self.next != NIL
    }

    /// The key that orders free blocks for best fit.
    #[inline]
    pub fn key(&self) -> FreeKey {
        (self.stream, self.size, self.ptr)
    }
}

/// Blocks stored by index, with their slots reused, so links are plain integers.
#[derive(Default)]
pub(crate) struct Arena {
    slots: Vec<Option<Block>>,
    vacant: Vec<u32>,
}

impl Arena {
    /// Stores a block and returns its index.
    #[inline]
    pub fn insert(&mut self, block: Block) -> u32 {
        match self.vacant.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(block);
                i
            }
            None => {
                self.slots.push(Some(block));
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Drops the block at `i`, freeing its slot.
    #[inline]
    pub fn remove(&mut self, i: u32) -> Block {
        let b = self.slots[i as usize].take().expect("arena slot in use");
        self.vacant.push(i);
        b
    }

    /// Every live block with its index.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &Block)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, b)| b.as_ref().map(|b| (i as u32, b)))
    }
}

impl Index<u32> for Arena {
    type Output = Block;
    #[inline]
    fn index(&self, i: u32) -> &Block {
        self.slots[i as usize].as_ref().expect("arena slot in use")
    }
}

impl IndexMut<u32> for Arena {
    #[inline]
    fn index_mut(&mut self, i: u32) -> &mut Block {
        self.slots[i as usize].as_mut().expect("arena slot in use")
    }
}

/// Order of free blocks: stream, then size, then address (PyTorch's `BlockComparatorSize`).
pub(crate) type FreeKey = (StreamId, usize, DevicePtr);

/// The free blocks of one pool (small or large).
#[derive(Default)]
pub(crate) struct BlockPool {
    /// Mapped free blocks, best fit first.
    pub blocks: BTreeMap<FreeKey, u32>,
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
        self.blocks.insert(b.key(), i);
    }

    /// Takes a free block (mapped or not) out of this pool.
    #[inline]
    pub fn remove(&mut self, b: &Block) {
        if b.mapped {
            self.blocks.remove(&b.key());
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
