//! Expandable segments: page-mapped growth and its statistics (as PyTorch measured them on an
//! H200), on allocators of their own over simulated memory, and through cuda:0's allocator with
//! tensors made by a script (simulated, or the real GPU's cuMemCreate/cuMemMap pages with
//! TORCHLET_TEST_DEVICE=cuda).
use crate::common;

use common::figures::{SEGMENT, SMALL_SEGMENT, X};
use torchlet_alloc::{
    AllocConfig, CachingAllocator, DeviceAllocator, HistoryOptions, SimulatedMemory, TraceAction,
};
use torchlet_session::Session;

const MIB: u64 = 1 << 20;

fn expandable(capacity: usize) -> CachingAllocator<SimulatedMemory> {
    let cfg = AllocConfig::parse("expandable_segments:True").unwrap();
    CachingAllocator::new(0, SimulatedMemory::new(capacity), cfg)
}

#[test]
fn reserved_grows_in_pages_as_measured() {
    let a = expandable(16 << 30);
    let x = a.malloc(4_000_000, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), SEGMENT);
    let y = a.malloc(100_000_000, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), 104857600, "five 20 MiB pages");
    assert_eq!(y, x + X, "the segment grew in place after x");
    let z = a.malloc(1000, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), 104857600 + SMALL_SEGMENT);
    let s = a.memory_stats();
    assert_eq!(s["segment.all.current"], 0, "mappings are not segments");
    assert_eq!(s["inactive_split.all.current"], 0);
    assert_eq!(s["inactive_split_bytes.all.allocated"], 0);
    assert_eq!(s["num_device_alloc"], 3, "one per mapping");
    assert_eq!(a.memory_allocated(), X + 100000256 + 1024);
    // Memory in expandable segments is real, writable host memory.
    for (p, n) in [(x, 4_000_000usize), (y, 100_000_000), (z, 1000)] {
        let bytes = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) };
        bytes[0] = 7;
        bytes[n - 1] = 9;
        assert_eq!((bytes[0], bytes[n - 1]), (7, 9));
    }
    for p in [x, y, z] {
        a.free(p).unwrap();
    }
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
    assert_eq!(a.with_memory(|m| m.used()), 0);
    let s = a.memory_stats();
    assert_eq!(s["num_device_free"], 2, "one unmapping per free range");
}

#[test]
fn snapshot_reports_each_mapped_range_as_an_expandable_segment() {
    let a = expandable(16 << 30);
    a.record_memory_history(HistoryOptions::default());
    let x = a.malloc(4_000_000, 0, Some("x")).unwrap();
    let snap = a.snapshot();
    assert_eq!(snap.segments.len(), 1);
    let seg = &snap.segments[0];
    assert!(seg.is_expandable);
    assert_eq!((seg.address, seg.total_size), (x, 20 * MIB));
    assert_eq!(seg.blocks.len(), 2);
    let actions: Vec<TraceAction> = snap.device_traces[0].iter().map(|e| e.action).collect();
    assert_eq!(actions, vec![TraceAction::SegmentMap, TraceAction::Alloc]);
    a.free(x).unwrap();
    a.empty_cache();
    let last = a.snapshot().device_traces[0].last().unwrap().clone();
    assert_eq!(
        (last.action, last.size),
        (TraceAction::SegmentUnmap, 20 * MIB)
    );
}

#[test]
fn empty_cache_unmaps_only_whole_free_pages() {
    let a = expandable(16 << 30);
    // Three pages: x in the first, y spanning into the third.
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let y = a.malloc(50_000_000, 0, None).unwrap();
    assert_eq!(a.memory_reserved(), 60 * MIB);
    a.free(x).unwrap();
    a.empty_cache();
    // x's bytes share the first page with y's start: nothing can be unmapped.
    assert_eq!(a.memory_reserved(), 60 * MIB);
    a.free(y).unwrap();
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
}

#[test]
fn oom_unmaps_free_pages_then_retries() {
    // 60 MiB device: 40 MiB mapped for a, freed; 40 MiB for b on another stream needs a flush.
    let a = expandable(60 << 20);
    let p = a.malloc(40 << 20, 0, None).unwrap();
    a.free(p).unwrap();
    let q = a.malloc(40 << 20, 1, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["num_alloc_retries"], 1);
    assert_eq!(a.memory_reserved(), 40 * MIB);
    let e = a.malloc(40 << 20, 0, None).unwrap_err();
    assert!(e.is_out_of_memory());
    a.free(q).unwrap();
    a.empty_cache();
    assert_eq!(a.with_memory(|m| m.used()), 0);
}

#[test]
fn freed_block_is_reused_and_grown() {
    let a = expandable(16 << 30);
    let x = a.malloc(30 << 20, 0, None).unwrap();
    let y = a.malloc(1 << 21, 0, None).unwrap();
    a.free(x).unwrap();
    // The 30 MiB hole is reused from its start for a smaller request.
    let z = a.malloc(10 << 20, 0, None).unwrap();
    assert_eq!(z, x);
    assert_eq!(a.memory_reserved(), 40 * MIB);
    for p in [y, z] {
        a.free(p).unwrap();
    }
    a.empty_cache();
    assert_eq!(a.memory_reserved(), 0);
}

/// Puts cuda:0's allocator back as the other tests expect it, however the test ends.
struct Restore<'a>(&'a dyn DeviceAllocator);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = self.0.set_allocator_settings("expandable_segments:False");
        self.0.record_memory_history(HistoryOptions::disabled());
    }
}

#[test]
fn tensors_grow_an_expandable_segment_of_cuda0_in_place() {
    let (_g, a) = common::gpu();
    let _restore = Restore(&*a);
    a.set_allocator_settings("expandable_segments:True")
        .unwrap();
    a.record_memory_history(HistoryOptions::disabled());
    a.record_memory_history(HistoryOptions::default());
    let (before, reserved) = (a.memory_stats(), a.memory_reserved());
    let grown =
        |key: &str, after: &std::collections::BTreeMap<String, i64>| after[key] - before[key];

    let (mut s, _) = Session::captured("<expandable>");
    common::run(
        &mut s,
        "let gpu = #{device: \"cuda\"}; let x = ones([1000, 1000], gpu);",
    );
    assert_eq!(a.memory_reserved() - reserved, SEGMENT, "one 20 MiB page");
    common::run(&mut s, "let y = full([25000000], 2.0, gpu);");
    assert_eq!(
        a.memory_reserved() - reserved,
        5 * SEGMENT,
        "five 20 MiB pages"
    );
    let address = |s: &mut Session, name: &str| -> u64 {
        common::eval(s, &format!("{name}.data_ptr()"))
            .parse()
            .unwrap()
    };
    let (px, py) = (address(&mut s, "x"), address(&mut s, "y"));
    assert_eq!(py, px + X, "y grew x's segment in place");
    common::run(&mut s, "let z = tensor([1.0, 2.0, 3.0], gpu);");
    assert_eq!(a.memory_reserved() - reserved, 5 * SEGMENT + SMALL_SEGMENT);
    let stats = a.memory_stats();
    assert_eq!(
        grown("segment.all.current", &stats),
        0,
        "mappings are not segments"
    );
    assert_eq!(grown("num_device_alloc", &stats), 3, "one per mapping");

    let snapshot = a.snapshot();
    let mapped: Vec<(u64, u64, &str)> = snapshot
        .segments
        .iter()
        .filter(|g| g.is_expandable)
        .map(|g| (g.address, g.total_size, g.segment_type))
        .collect();
    assert!(mapped.contains(&(px, 5 * SEGMENT, "large")), "{mapped:?}");
    assert_eq!(mapped.len(), 2, "{mapped:?}");
    let maps: Vec<(TraceAction, u64)> = snapshot.device_traces[0]
        .iter()
        .filter(|e| {
            matches!(
                e.action,
                TraceAction::SegmentMap | TraceAction::SegmentAlloc
            )
        })
        .map(|e| (e.action, e.size))
        .collect();
    use TraceAction::SegmentMap;
    assert_eq!(
        maps,
        [
            (SegmentMap, SEGMENT),
            (SegmentMap, 4 * SEGMENT),
            (SegmentMap, SMALL_SEGMENT)
        ]
    );

    // The mapped pages hold the tensors' data, first page to last.
    assert_eq!(
        common::eval(
            &mut s,
            "[x.sum().item(), y.min().item(), y.max().item(), y.narrow(0, 24999990, 10).sum().item(), z.sum().item()]"
        ),
        "[1000000.0, 2.0, 2.0, 20.0, 6.0]"
    );

    common::run(&mut s, "del x, y, z; empty_cache();");
    assert_eq!(a.memory_reserved(), reserved, "every page unmapped");
    let stats = a.memory_stats();
    assert_eq!(
        grown("num_device_free", &stats),
        2,
        "one unmapping per free range"
    );
    let last = snapshot_actions(&*a);
    assert_eq!(
        last.iter()
            .filter(|e| **e == TraceAction::SegmentUnmap)
            .count(),
        2
    );
}

fn snapshot_actions(a: &dyn DeviceAllocator) -> Vec<TraceAction> {
    a.snapshot().device_traces[0]
        .iter()
        .map(|e| e.action)
        .collect()
}
