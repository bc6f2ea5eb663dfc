//! `memory_stats`: the 122 keys, increase/decrease/peak semantics, inactive-split netting, resets,
//! as PyTorch 2.11 reports them.
use crate::common;

use common::figures::{SEGMENT, SMALL_SEGMENT, TAIL_AFTER_TWO_X, TWO_X, X};
use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory};

#[test]
fn there_are_exactly_122_sorted_keys() {
    let s = common::fresh_allocator().memory_stats();
    assert_eq!(s.len(), 122);
    for name in [
        "allocation",
        "allocated_bytes",
        "active",
        "active_bytes",
        "inactive_split",
        "inactive_split_bytes",
        "requested_bytes",
        "reserved_bytes",
        "segment",
    ] {
        for pool in ["all", "large_pool", "small_pool"] {
            for metric in ["current", "peak", "allocated", "freed"] {
                assert_eq!(s[&format!("{name}.{pool}.{metric}")], 0);
            }
        }
    }
    for name in ["oversize_allocations", "oversize_segments"] {
        for metric in ["current", "peak", "allocated", "freed"] {
            assert!(s.contains_key(&format!("{name}.{metric}")));
        }
    }
    for k in [
        "num_alloc_retries",
        "num_ooms",
        "num_sync_all_streams",
        "num_device_alloc",
        "num_device_free",
    ] {
        assert_eq!(s[k], 0);
    }
    assert_eq!(
        s["max_split_size"], -1,
        "unlimited reads as -1, as measured"
    );
    let keys: Vec<&String> = s.keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn inactive_split_changes_are_netted_once() {
    // x, temp = x*2, del temp, empty_cache, measured on an H200: freeing temp beside the free
    // tail is one net increase of 4000256 B (a 12971008 B piece goes, a 16971264 B one comes).
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let temp = a.malloc(4_000_000, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(
        s["inactive_split_bytes.all.current"],
        TAIL_AFTER_TWO_X as i64
    );
    assert_eq!(s["inactive_split_bytes.all.peak"], 16971264);
    assert_eq!(s["inactive_split_bytes.all.allocated"], 16971264);
    assert_eq!(s["inactive_split_bytes.all.freed"], X as i64);
    a.free(temp).unwrap();
    a.empty_cache();
    let s = a.memory_stats();
    // Merging temp with the tail: -12971008 and +16971264 applied as one increase of 4000256.
    assert_eq!(s["inactive_split_bytes.all.current"], 16971264);
    assert_eq!(s["inactive_split_bytes.all.allocated"], SEGMENT as i64);
    assert_eq!(s["inactive_split_bytes.all.freed"], X as i64);
    assert_eq!(s["inactive_split.all.allocated"], 1);
    assert_eq!(s["inactive_split.all.freed"], 0);
    assert_eq!(s["allocation.all.current"], 1);
    assert_eq!(s["allocation.all.peak"], 2);
    assert_eq!(s["requested_bytes.all.freed"], 4000000);
    assert_eq!(s["num_sync_all_streams"], 1);
    a.free(x).unwrap();
    let s = a.memory_stats();
    // x merges with the whole tail: the segment is whole again, nothing is non-releasable.
    assert_eq!(s["inactive_split.all.current"], 0);
    assert_eq!(s["inactive_split_bytes.all.current"], 0);
    assert_eq!(s["inactive_split_bytes.all.freed"], X as i64 + 16971264);
}

#[test]
fn whole_block_of_split_segment_leaving_the_pool_decreases_inactive_split() {
    let a = common::fresh_allocator();
    let x = a.malloc(1000, 0, None).unwrap();
    let y = a.malloc(1000, 0, None).unwrap();
    a.free(x).unwrap();
    // x's 1024-byte hole is an inactive split block; taking it whole removes it.
    assert_eq!(a.memory_stats()["inactive_split.small_pool.current"], 2);
    let z = a.malloc(1024, 0, None).unwrap();
    assert_eq!(z, x);
    let s = a.memory_stats();
    assert_eq!(s["inactive_split.small_pool.current"], 1);
    assert_eq!(
        s["inactive_split_bytes.small_pool.current"],
        SMALL_SEGMENT as i64 - 2048
    );
    a.free(y).unwrap();
    a.free(z).unwrap();
}

#[test]
fn reset_peak_and_accumulated() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let y = a.malloc(4_000_000, 0, None).unwrap();
    a.free(y).unwrap();
    a.empty_cache();
    assert_eq!(a.max_memory_allocated(), TWO_X);
    a.reset_peak_memory_stats();
    assert_eq!(a.max_memory_allocated(), X);
    assert_eq!(a.max_memory_reserved(), SEGMENT);
    let s = a.memory_stats();
    assert_eq!(s["allocation.all.peak"], 1);
    assert_eq!(
        s["allocated_bytes.all.allocated"], TWO_X as i64,
        "totals survive a peak reset"
    );
    a.reset_accumulated_memory_stats();
    let s = a.memory_stats();
    for (k, v) in &s {
        if k.ends_with(".allocated") || k.ends_with(".freed") || (k.starts_with("num_")) {
            assert_eq!(*v, 0, "{k}");
        }
    }
    assert_eq!(
        s["allocated_bytes.all.current"], X as i64,
        "current values survive"
    );
    assert_eq!(s["allocated_bytes.all.peak"], X as i64);
    a.free(x).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["allocated_bytes.all.freed"], X as i64);
}

#[test]
fn segment_and_device_counters() {
    let a = common::fresh_allocator();
    let small = a.malloc(100, 0, None).unwrap();
    let large = a.malloc(2 << 20, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["segment.small_pool.current"], 1);
    assert_eq!(s["segment.large_pool.current"], 1);
    assert_eq!(s["reserved_bytes.small_pool.current"], SMALL_SEGMENT as i64);
    assert_eq!(s["reserved_bytes.large_pool.current"], SEGMENT as i64);
    assert_eq!(s["num_device_alloc"], 2);
    a.free(small).unwrap();
    a.free(large).unwrap();
    a.empty_cache();
    let s = a.memory_stats();
    assert_eq!(s["segment.all.freed"], 2);
    assert_eq!(s["num_device_free"], 2);
    assert_eq!(
        s["reserved_bytes.all.peak"],
        SMALL_SEGMENT as i64 + SEGMENT as i64
    );
}

#[test]
fn oversize_counters_follow_max_split_size() {
    let cfg = AllocConfig::parse("max_split_size_mb:64").unwrap();
    let a = CachingAllocator::new(0, SimulatedMemory::default(), cfg);
    let big = a.malloc(100 << 20, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["oversize_allocations.current"], 1);
    assert_eq!(s["oversize_segments.current"], 1);
    assert_eq!(s["max_split_size"], 64 << 20);
    a.free(big).unwrap();
    // An oversize block is not split for a smaller request, and a small request never takes it.
    let mid = a.malloc(30 << 20, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), (100 << 20) + (30 << 20));
    // 90 MiB may take the cached 100 MiB block whole (waste < 20 MiB).
    let reuse = a.malloc(90 << 20, 0, None).unwrap();
    assert_eq!(reuse, big);
    assert_eq!(
        a.memory_stats()["allocated_bytes.all.current"],
        (130 << 20) as i64
    );
    a.free(mid).unwrap();
    a.free(reuse).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["oversize_allocations.current"], 0);
    assert_eq!(s["oversize_allocations.allocated"], 2);
}
