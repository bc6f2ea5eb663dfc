//! Snapshots and memory history: segments, blocks, states, the trace sequence PyTorch records,
//! tags, the ring buffer.
use crate::common;

use common::figures::{SEGMENT, SMALL_SEGMENT, TAIL_AFTER_TWO_X, TWO_X, X};
use torchlet_alloc::{DeviceAllocator, HistoryMode, HistoryOptions, TraceAction};

#[test]
fn snapshot_after_x_and_temp_matches_pytorch() {
    let a = common::fresh_allocator();
    let x = a.malloc(4_000_000, 0, Some("x")).unwrap();
    let temp = a.malloc(4_000_000, 0, Some("temp")).unwrap();
    let snap = a.snapshot();
    assert_eq!(snap.segments.len(), 1);
    let seg = &snap.segments[0];
    assert_eq!(
        (
            seg.total_size,
            seg.allocated_size,
            seg.active_size,
            seg.requested_size
        ),
        (SEGMENT, TWO_X, TWO_X, 8000000)
    );
    assert_eq!(
        (seg.segment_type, seg.is_expandable, seg.stream, seg.address),
        ("large", false, 0, x)
    );
    let blocks: Vec<(u64, u64, &str, Option<&str>)> = seg
        .blocks
        .iter()
        .map(|b| (b.size, b.requested_size, b.state, b.tag.as_deref()))
        .collect();
    assert_eq!(
        blocks,
        vec![
            (X, 4000000, "active_allocated", Some("x")),
            (X, 4000000, "active_allocated", Some("temp")),
            (TAIL_AFTER_TWO_X, 0, "inactive", None),
        ]
    );
    assert_eq!(seg.blocks[1].address, temp);
    assert_eq!(seg.blocks[2].address, temp + X);
    a.free(temp).unwrap();
    a.free(x).unwrap();
}

#[test]
fn trace_sequence_matches_pytorch() {
    // As PyTorch recorded it on an H200: x = randn(1000,1000); temp = x*2; del temp; empty_cache(); del x;
    // empty_cache(); an OOM attempt; a 1000-float tensor.
    let a = common::fresh_allocator();
    a.record_memory_history(HistoryOptions::default());
    let x = a.malloc(4_000_000, 0, Some("x")).unwrap();
    let temp = a.malloc(4_000_000, 0, Some("temp")).unwrap();
    a.free(temp).unwrap();
    a.empty_cache();
    a.free(x).unwrap();
    a.empty_cache();
    assert!(a
        .malloc(214748364800, 0, None)
        .unwrap_err()
        .is_out_of_memory());
    let y = a.malloc(4000, 0, Some("y")).unwrap();
    let trace = &a.snapshot().device_traces[0];
    let got: Vec<(TraceAction, u64)> = trace.iter().map(|e| (e.action, e.size)).collect();
    use TraceAction::*;
    assert_eq!(
        got,
        vec![
            (SegmentAlloc, SEGMENT),
            (Alloc, 4000000),
            (Alloc, 4000000),
            (FreeRequested, 4000000),
            (FreeCompleted, 4000000),
            (FreeRequested, 4000000),
            (FreeCompleted, 4000000),
            (SegmentFree, SEGMENT),
            (Oom, 214748364800),
            (SegmentAlloc, SMALL_SEGMENT),
            (Alloc, 4000),
        ]
    );
    // addr fields: segment and block addresses; oom carries the device's free bytes.
    assert_eq!(trace[0].addr, x);
    assert_eq!(trace[2].addr, x + X);
    assert_eq!(trace[8].addr, 16 << 30);
    assert_eq!(trace[10].addr, y);
    assert_eq!(trace[1].tag.as_deref(), Some("x"));
    assert_eq!(trace[3].tag.as_deref(), Some("temp"));
    assert!(trace.windows(2).all(|w| w[0].time_us <= w[1].time_us));
    let json = serde_json::to_value(&trace[8]).unwrap();
    assert_eq!(json["action"], "oom");
    assert_eq!(json["device_free"], 16u64 << 30);
    assert!(json.get("addr").is_none());
    let json = serde_json::to_value(&trace[1]).unwrap();
    assert_eq!(
        (
            json["action"].as_str(),
            json["addr"].as_u64(),
            json["tag"].as_str()
        ),
        (Some("alloc"), Some(x), Some("x"))
    );
    // The snapshot just taken shows up in the next one, with the active bytes.
    let last = a.snapshot().device_traces[0].last().cloned().unwrap();
    assert_eq!((last.action, last.addr, last.size), (Snapshot, 0, 4096));
    a.free(y).unwrap();
}

#[test]
fn ring_buffer_keeps_the_newest_entries() {
    let a = common::fresh_allocator();
    a.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 3,
        clear_history: false,
    });
    let ptrs: Vec<u64> = (1..=4)
        .map(|i| a.malloc(i * 512, 0, None).unwrap())
        .collect();
    let trace = &a.snapshot().device_traces[0];
    let sizes: Vec<u64> = trace.iter().map(|e| e.size).collect();
    assert_eq!(
        sizes,
        vec![1024, 1536, 2048],
        "oldest first, oldest dropped"
    );
    a.record_memory_history(HistoryOptions::disabled());
    assert!(
        a.snapshot().device_traces[0].is_empty(),
        "stopping clears the buffer"
    );
    a.free(ptrs[0]).unwrap();
    assert!(
        a.snapshot().device_traces[0].is_empty(),
        "nothing recorded while stopped"
    );
    a.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::State),
        ..HistoryOptions::default()
    });
    for p in &ptrs[1..] {
        a.free(*p).unwrap();
    }
    assert_eq!(
        a.snapshot().device_traces[0].len(),
        1,
        "\"state\" keeps a one-entry ring"
    );
    assert_eq!(HistoryMode::parse("all").unwrap(), HistoryMode::All);
    assert!(HistoryMode::parse("everything")
        .unwrap_err()
        .to_string()
        .contains("\"state\" or \"all\""));
}

#[test]
fn blocks_tile_segments_and_serialize() {
    let a = common::fresh_allocator();
    let ps: Vec<u64> = [100, 3_000_000, 700, 12_000_000]
        .iter()
        .map(|&n| a.malloc(n, 0, Some("t")).unwrap())
        .collect();
    a.free(ps[1]).unwrap();
    let snap = a.snapshot();
    // The 12 MB block is carved from the 20 MiB segment's tail, as best fit wants.
    assert_eq!(snap.segments.len(), 2);
    for seg in &snap.segments {
        let mut addr = seg.address;
        for b in &seg.blocks {
            assert_eq!(b.address, addr);
            addr += b.size;
        }
        assert_eq!(addr, seg.address + seg.total_size);
    }
    assert!(snap
        .segments
        .windows(2)
        .all(|w| w[0].address < w[1].address));
    let json = serde_json::to_value(&snap).unwrap();
    assert_eq!(json["allocator_settings"]["max_split_size"], -1);
    assert_eq!(json["segments"].as_array().unwrap().len(), 2);
    assert!(json["segments"][0]["blocks"][0]["state"].is_string());
    for (i, p) in ps.iter().enumerate() {
        if i != 1 {
            a.free(*p).unwrap();
        }
    }
}
