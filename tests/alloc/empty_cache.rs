//! `empty_cache`: only wholly free segments go back to the device, and every call counts a sync,
//! even with nothing to wait for (measured on an H200).
use crate::common;

use common::figures::{SEGMENT, X};
use torchlet_alloc::{DeviceAllocator, HistoryOptions, TraceAction};

/// `x = randn(1000,1000).cuda(); empty_cache()`: x's segment is split (x and a free tail), so it
/// stays reserved, as PyTorch measured on an H200.
#[test]
fn scenario_b_empty_cache_keeps_split_segment() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    a.empty_cache();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (X, SEGMENT));
    assert_eq!(a.memory_stats()["num_sync_all_streams"], 1);
    a.free(x).unwrap();
    a.empty_cache();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (0, 0));
}

#[test]
fn every_call_counts_a_sync_even_with_nothing_to_release() {
    let a = common::fresh_allocator();
    a.empty_cache();
    a.empty_cache();
    let s = a.memory_stats();
    assert_eq!(s["num_sync_all_streams"], 2);
    assert_eq!(s["num_device_free"], 0);
}

#[test]
fn releases_whole_free_segments_only() {
    let a = common::fresh_allocator();
    let keep = a.malloc(1000, 0, None).unwrap(); // small segment stays split
    let gone_small = a.malloc(1 << 20, 1, None).unwrap(); // its own small segment on stream 1
    let big = a.malloc(30 << 20, 0, None).unwrap(); // its own 30 MiB segment
    let part = a.malloc(4_000_000, 0, None).unwrap(); // split 20 MiB segment
    a.free(gone_small).unwrap();
    a.free(big).unwrap();
    assert_eq!(a.memory_reserved(), (2 << 20) * 2 + (30 << 20) + (20 << 20));
    a.empty_cache();
    assert_eq!(a.memory_reserved(), (2 << 20) + (20 << 20));
    let s = a.memory_stats();
    assert_eq!(s["num_device_free"], 2);
    assert_eq!(s["segment.all.current"], 2);
    assert_eq!(
        s["inactive_split.all.current"], 2,
        "the free tails of the kept segments"
    );
    assert_eq!(a.with_memory(|m| m.used()) as u64, a.memory_reserved());
    a.free(keep).unwrap();
    a.free(part).unwrap();
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
    assert_eq!(a.with_memory(|m| m.used()), 0);
}

#[test]
fn large_pool_is_released_before_small_pool() {
    let a = common::fresh_allocator();
    a.record_memory_history(HistoryOptions::default());
    let s = a.malloc(100, 0, None).unwrap();
    let l = a.malloc(4_000_000, 0, None).unwrap();
    a.free(s).unwrap();
    a.free(l).unwrap();
    a.empty_cache();
    let frees: Vec<u64> = a.snapshot().device_traces[0]
        .iter()
        .filter(|e| e.action == TraceAction::SegmentFree)
        .map(|e| e.size)
        .collect();
    assert_eq!(frees, vec![20 << 20, 2 << 20]);
}

#[test]
fn memory_freed_by_empty_cache_is_reallocated_fresh() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    a.free(x).unwrap();
    a.empty_cache();
    let y = a.malloc(4_000_000, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["num_device_alloc"], 2);
    assert_eq!(s["reserved_bytes.all.allocated"], 2 * SEGMENT as i64);
    assert_eq!(s["reserved_bytes.all.freed"], SEGMENT as i64);
    a.free(y).unwrap();
}
