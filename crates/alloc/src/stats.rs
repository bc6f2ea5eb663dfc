//! The allocator's statistics (PyTorch's `DeviceStats`) and their 122 flat `memory_stats` keys.

use std::collections::BTreeMap;

/// Which pool a block or segment belongs to; the value is its index in a [`StatArray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Blocks whose rounded size is above 1 MiB.
    Large = 1,
    /// Blocks whose rounded size is 1 MiB or less.
    Small = 2,
}

impl PoolKind {
    /// The pool a rounded size goes to.
    #[inline]
    pub fn of_size(rounded: usize) -> PoolKind {
        if rounded <= super::size::SMALL_SIZE {
            PoolKind::Small
        } else {
            PoolKind::Large
        }
    }
    /// `"large"` or `"small"`, as snapshots name it.
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Large => "large",
            PoolKind::Small => "small",
        }
    }
}

/// One statistic: its current value, peak, and accumulated increases and decreases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Current value.
    pub current: i64,
    /// Highest current value since the last peak reset.
    pub peak: i64,
    /// Sum of all increases since the last accumulated reset.
    pub allocated: i64,
    /// Sum of all decreases since the last accumulated reset.
    pub freed: i64,
}

impl Stat {
    /// Adds `x` (PyTorch's `increase`).
    #[inline]
    pub fn increase(&mut self, x: i64) {
        self.current += x;
        self.peak = self.peak.max(self.current);
        self.allocated += x;
    }
    /// Subtracts `x` (PyTorch's `decrease`).
    #[inline]
    pub fn decrease(&mut self, x: i64) {
        self.current -= x;
        self.freed += x;
    }
    fn reset_peak(&mut self) {
        self.peak = self.current;
    }
    fn reset_accumulated(&mut self) {
        self.allocated = 0;
        self.freed = 0;
    }
}

/// A statistic kept for all pools together and for each pool (`all`, `large_pool`, `small_pool`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatArray(pub [Stat; 3]);

impl StatArray {
    /// Increases the `all` entry and the entry of `pool`.
    #[inline]
    pub fn increase(&mut self, pool: PoolKind, x: usize) {
        self.0[0].increase(x as i64);
        self.0[pool as usize].increase(x as i64);
    }
    /// Decreases the `all` entry and the entry of `pool`.
    #[inline]
    pub fn decrease(&mut self, pool: PoolKind, x: usize) {
        self.0[0].decrease(x as i64);
        self.0[pool as usize].decrease(x as i64);
    }
    /// The `all` entry.
    pub fn all(&self) -> &Stat {
        &self.0[0]
    }
}

/// Every statistic of one device's allocator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Blocks handed out.
    pub allocation: StatArray,
    /// Bytes of blocks handed out.
    pub allocated_bytes: StatArray,
    /// Blocks handed out or waiting to be freed.
    pub active: StatArray,
    /// Bytes of active blocks.
    pub active_bytes: StatArray,
    /// Free blocks in split segments.
    pub inactive_split: StatArray,
    /// Bytes of free blocks in split segments ("non-releasable").
    pub inactive_split_bytes: StatArray,
    /// Callers' unrounded request sizes of active blocks.
    pub requested_bytes: StatArray,
    /// Bytes of segments held from the device.
    pub reserved_bytes: StatArray,
    /// Segments held from the device.
    pub segment: StatArray,
    /// Handed-out blocks of at least max_split_size.
    pub oversize_allocations: Stat,
    /// Segments of at least max_split_size.
    pub oversize_segments: Stat,
    /// Flush-and-retry allocation attempts.
    pub num_alloc_retries: i64,
    /// Out-of-memory errors raised.
    pub num_ooms: i64,
    /// Waits for all streams (every `empty_cache` and cache flush).
    pub num_sync_all_streams: i64,
    /// Device allocations (segments and expandable mappings).
    pub num_device_alloc: i64,
    /// Device frees (segments and expandable unmappings).
    pub num_device_free: i64,
}

/// The key prefixes of the nine stat arrays in `memory_stats`.
pub const ARRAY_NAMES: [&str; 9] = [
    "allocation",
    "allocated_bytes",
    "active",
    "active_bytes",
    "inactive_split",
    "inactive_split_bytes",
    "requested_bytes",
    "reserved_bytes",
    "segment",
];

const POOL_NAMES: [&str; 3] = ["all", "large_pool", "small_pool"];

fn put_stat(map: &mut BTreeMap<String, i64>, prefix: &str, s: &Stat) {
    map.insert(format!("{prefix}.current"), s.current);
    map.insert(format!("{prefix}.peak"), s.peak);
    map.insert(format!("{prefix}.allocated"), s.allocated);
    map.insert(format!("{prefix}.freed"), s.freed);
}

impl DeviceStats {
    fn arrays(&self) -> [&StatArray; 9] {
        [
            &self.allocation,
            &self.allocated_bytes,
            &self.active,
            &self.active_bytes,
            &self.inactive_split,
            &self.inactive_split_bytes,
            &self.requested_bytes,
            &self.reserved_bytes,
            &self.segment,
        ]
    }

    fn arrays_mut(&mut self) -> [&mut StatArray; 9] {
        [
            &mut self.allocation,
            &mut self.allocated_bytes,
            &mut self.active,
            &mut self.active_bytes,
            &mut self.inactive_split,
            &mut self.inactive_split_bytes,
            &mut self.requested_bytes,
            &mut self.reserved_bytes,
            &mut self.segment,
        ]
    }

    /// The 122 flat keys of `torch.cuda.memory_stats()`, sorted; `max_split_size` is -1 when unlimited.
    pub fn to_map(&self, max_split_size: usize) -> BTreeMap<String, i64> {
        let mut map = BTreeMap::new();
        for (name, array) in ARRAY_NAMES.iter().zip(self.arrays()) {
            for (pool, stat) in POOL_NAMES.iter().zip(array.0.iter()) {
                put_stat(&mut map, &format!("{name}.{pool}"), stat);
            }
        }
        put_stat(&mut map, "oversize_allocations", &self.oversize_allocations);
        put_stat(&mut map, "oversize_segments", &self.oversize_segments);
        map.insert("num_alloc_retries".into(), self.num_alloc_retries);
        map.insert("num_ooms".into(), self.num_ooms);
        map.insert("num_sync_all_streams".into(), self.num_sync_all_streams);
        map.insert("num_device_alloc".into(), self.num_device_alloc);
        map.insert("num_device_free".into(), self.num_device_free);
        // SIZE_MAX read as a signed 64-bit integer, as PyTorch reports it.
        map.insert("max_split_size".into(), max_split_size as u64 as i64);
        map
    }

    /// Sets every peak to its current value.
    pub fn reset_peak(&mut self) {
        for array in self.arrays_mut() {
            array.0.iter_mut().for_each(Stat::reset_peak);
        }
        self.oversize_allocations.reset_peak();
        self.oversize_segments.reset_peak();
    }

    /// Zeroes every allocated/freed total and the five `num_*` counters.
    pub fn reset_accumulated(&mut self) {
        for array in self.arrays_mut() {
            array.0.iter_mut().for_each(Stat::reset_accumulated);
        }
        self.oversize_allocations.reset_accumulated();
        self.oversize_segments.reset_accumulated();
        self.num_alloc_retries = 0;
        self.num_ooms = 0;
        self.num_sync_all_streams = 0;
        self.num_device_alloc = 0;
        self.num_device_free = 0;
    }
}
