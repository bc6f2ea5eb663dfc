//! Streams: blocks are reused only on the stream that allocated them, and a block used on other
//! streams (`record_stream`) stays active after its free until the next request completes it
//! (Note [events complete at the next request]).
use crate::common;

use torchlet_alloc::{
    CachingAllocator, DeviceAllocator, HistoryMode, HistoryOptions, SimulatedMemory, TraceAction,
};

const SIDE: u64 = 7;
const OTHER: u64 = 9;

fn recording() -> CachingAllocator<SimulatedMemory> {
    let a = common::fresh_allocator();
    a.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 1000,
        clear_history: true,
    });
    a
}

fn actions(a: &dyn DeviceAllocator) -> Vec<(TraceAction, u64)> {
    a.snapshot().device_traces[0]
        .iter()
        .filter(|e| e.action != TraceAction::Snapshot)
        .map(|e| (e.action, e.stream))
        .collect()
}

#[test]
fn a_block_freed_on_one_stream_is_reused_only_there() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, SIDE, None).unwrap();
    a.free(x).unwrap();
    let y = a.malloc(4_000_000, 0, None).unwrap();
    assert_ne!(
        x, y,
        "the default stream may not take the side stream's block"
    );
    assert_eq!(a.memory_stats()["segment.all.current"], 2);
    let z = a.malloc(4_000_000, SIDE, None).unwrap();
    assert_eq!(x, z, "the side stream takes its own block again");
}

#[test]
fn a_free_waits_for_the_streams_the_block_was_used_on() {
    let a = recording();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    a.record_stream(x, SIDE).unwrap();
    a.record_stream(x, OTHER).unwrap();
    a.record_stream(x, 0).unwrap(); // its own stream: ignored
    a.free(x).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["allocated_bytes.all.current"], 0);
    assert_eq!(
        s["active_bytes.all.current"], 4_000_256,
        "pending frees count as active"
    );
    let snapshot = a.snapshot();
    let state = snapshot.segments[0].blocks[0].state;
    assert_eq!(state, "active_pending_free");
    let last = *actions(&a).last().unwrap();
    assert_eq!(
        last,
        (TraceAction::FreeRequested, 0),
        "the free waits: no free_completed yet"
    );
    let y = a.malloc(4_000_000, 0, None).unwrap();
    assert_eq!(
        x, y,
        "the next request completes the free first and reuses the block"
    );
    let tail: Vec<_> = actions(&a).into_iter().rev().take(2).collect();
    assert_eq!(
        tail,
        [(TraceAction::Alloc, 0), (TraceAction::FreeCompleted, 0)]
    );
}

#[test]
fn a_pending_block_does_not_merge_until_its_free_completes() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let y = a.malloc(4_000_000, 0, None).unwrap();
    a.record_stream(x, SIDE).unwrap();
    a.free(y).unwrap();
    a.free(x).unwrap();
    // y merged with the free tail; x still waits, so it stays a block of its own.
    let states: Vec<_> = a.snapshot().segments[0]
        .blocks
        .iter()
        .map(|b| b.state)
        .collect();
    assert_eq!(states, ["active_pending_free", "inactive"]);
    a.empty_cache();
    assert_eq!(
        a.memory_reserved(),
        0,
        "empty_cache waits for every stream, then releases"
    );
}

#[test]
fn record_stream_of_an_unknown_pointer_is_an_error() {
    let a = common::fresh_allocator();
    assert!(a.record_stream(0x1234, SIDE).is_err());
}
