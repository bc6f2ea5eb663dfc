//! Best fit, splitting and merging: the article's scenarios, measured with PyTorch on an H200 —
//! (a) `x = randn(1000,1000).cuda(); x = x.cpu(); del x` and (c) `…; temp = x*2; del temp;
//! empty_cache()` — and the rules behind them (same stream only, split thresholds, merges within
//! a segment).
use crate::common;

use common::figures::{SEGMENT, TAIL_AFTER_TWO_X, TWO_X, X, X_REQUESTED};
use torchlet_alloc::DeviceAllocator;

#[test]
fn scenario_a_free_keeps_segment_cached() {
    let a = common::fresh_allocator();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (0, 0));
    let x = a.malloc(X_REQUESTED as usize, 0, Some("x")).unwrap();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (X, SEGMENT));
    let s = a.memory_stats();
    assert_eq!(s["requested_bytes.all.current"], 4000000);
    assert_eq!(s["inactive_split_bytes.all.current"], 16971264);
    assert_eq!(s["segment.all.current"], 1);
    a.free(x).unwrap();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (0, SEGMENT));
    assert_eq!(a.max_memory_allocated(), X);
    a.empty_cache();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (0, 0));
    assert_eq!(a.memory_stats()["num_device_free"], 1);
}

#[test]
fn scenario_c_best_fit_reuses_tail_and_merges_back() {
    let a = common::fresh_allocator();
    let x = a.malloc(X_REQUESTED as usize, 0, None).unwrap();
    let temp = a.malloc(X_REQUESTED as usize, 0, None).unwrap();
    assert_eq!(temp, x + X, "temp is carved from x's free tail");
    assert_eq!(
        (a.memory_allocated(), a.memory_reserved()),
        (TWO_X, SEGMENT)
    );
    assert_eq!(
        a.memory_stats()["inactive_split_bytes.all.current"],
        TAIL_AFTER_TWO_X as i64
    );
    assert_eq!(a.memory_stats()["num_device_alloc"], 1);
    a.free(temp).unwrap();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (X, SEGMENT));
    assert_eq!(
        a.memory_stats()["inactive_split_bytes.all.current"],
        16971264
    );
    a.empty_cache();
    assert_eq!((a.memory_allocated(), a.memory_reserved()), (X, SEGMENT));
    assert_eq!(a.max_memory_allocated(), TWO_X);
    a.free(x).unwrap();
}

#[test]
fn best_fit_prefers_smallest_then_lowest_address() {
    let a = common::fresh_allocator();
    // Three small blocks with gaps: free 1 KiB at b and 1 KiB at d, 2 KiB at f.
    let ps: Vec<u64> = [1024, 512, 1024, 512, 2048, 512]
        .iter()
        .map(|&n| a.malloc(n, 0, None).unwrap())
        .collect();
    for &i in &[0usize, 2, 4] {
        a.free(ps[i]).unwrap();
    }
    // A 1 KiB request takes the lowest-addressed 1 KiB hole, not the 2 KiB one.
    let q = a.malloc(1000, 0, None).unwrap();
    assert_eq!(q, ps[0]);
    let r = a.malloc(1000, 0, None).unwrap();
    assert_eq!(r, ps[2]);
    // 1.5 KiB fits only the 2 KiB hole (splitting it).
    let t = a.malloc(1536, 0, None).unwrap();
    assert_eq!(t, ps[4]);
    for p in [q, r, t, ps[1], ps[3], ps[5]] {
        a.free(p).unwrap();
    }
    assert_eq!(a.memory_allocated(), 0);
    assert_eq!(a.memory_stats()["inactive_split.all.current"], 0);
}

#[test]
fn blocks_are_never_reused_across_streams() {
    let a = common::fresh_allocator();
    let x = a.malloc(X_REQUESTED as usize, 1, None).unwrap();
    a.free(x).unwrap();
    let y = a.malloc(X_REQUESTED as usize, 2, None).unwrap();
    assert_eq!(
        a.memory_reserved(),
        2 * SEGMENT,
        "stream 2 needs its own segment"
    );
    let z = a.malloc(X_REQUESTED as usize, 1, None).unwrap();
    assert_eq!(z, x, "stream 1 reuses its cached block");
    a.free(y).unwrap();
    a.free(z).unwrap();
}

#[test]
fn merging_never_crosses_segments() {
    let a = common::fresh_allocator();
    // Two 10 MiB requests: each gets its own exact-fit 10 MiB segment.
    let p = a.malloc(10 << 20, 0, None).unwrap();
    let q = a.malloc(10 << 20, 0, None).unwrap();
    a.free(p).unwrap();
    a.free(q).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["segment.all.current"], 2);
    assert_eq!(s["inactive_split.all.current"], 0);
    // A 20 MiB request does not fit either cached block and takes a new segment.
    let r = a.malloc(20 << 20, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), 40 << 20);
    a.free(r).unwrap();
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
    assert_eq!(a.memory_stats()["num_device_free"], 3);
}

#[test]
fn freeing_unknown_pointer_is_an_error() {
    let a = common::fresh_allocator();
    let x = a.malloc(X_REQUESTED as usize, 0, None).unwrap();
    let e = a.free(x + 512).unwrap_err();
    assert!(
        e.to_string().starts_with("invalid device pointer: 0x"),
        "{e}"
    );
    a.free(x).unwrap();
    assert!(a.free(x).is_err(), "double free is refused");
    assert_eq!(a.memory_allocated(), 0);
}
