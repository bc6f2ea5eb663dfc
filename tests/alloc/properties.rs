//! Properties over random allocate/free/empty_cache/settings sequences: best fit is chosen, and the books always balance.

use std::collections::HashMap;

use proptest::prelude::*;
use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory, Snapshot};

const MIB: usize = 1 << 20;
const SETTINGS: [&str; 6] = [
    "max_split_size_mb:40",
    "roundup_power2_divisions:4",
    "roundup_power2_divisions:[1:0,16:2]",
    "expandable_segments:True",
    "expandable_segments:False",
    "garbage_collection_threshold:0.5",
];

#[derive(Clone, Debug)]
enum Op {
    Alloc { bytes: usize, stream: u64 },
    Free(usize),
    EmptyCache,
    Settings(usize),
    Fraction(f64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..=2 * MIB, 0u64..2).prop_map(|(bytes, stream)| Op::Alloc { bytes, stream }),
        3 => (MIB..=48 * MIB, 0u64..2).prop_map(|(bytes, stream)| Op::Alloc { bytes, stream }),
        8 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::EmptyCache),
        1 => (0..SETTINGS.len()).prop_map(Op::Settings),
        1 => prop_oneof![Just(0.5), Just(1.0)].prop_map(Op::Fraction),
    ]
}

/// Per pool (0 all, 1 large, 2 small) recomputations from the snapshot's blocks.
#[derive(Default)]
struct Recount {
    allocation: [i64; 3],
    allocated_bytes: [i64; 3],
    requested_bytes: [i64; 3],
    reserved_bytes: [i64; 3],
    segment: [i64; 3],
    inactive_split: [i64; 3],
    inactive_split_bytes: [i64; 3],
    oversize_allocations: i64,
    oversize_segments: i64,
}

fn recount(snap: &Snapshot, max_split: u64) -> Recount {
    let mut r = Recount::default();
    for seg in &snap.segments {
        let pools = [0, if seg.segment_type == "large" { 1 } else { 2 }];
        let split = seg.blocks.len() > 1;
        for p in pools {
            r.reserved_bytes[p] += seg.total_size as i64;
            if !seg.is_expandable {
                r.segment[p] += 1;
            }
            for b in &seg.blocks {
                if b.state == "active_allocated" {
                    r.allocation[p] += 1;
                    r.allocated_bytes[p] += b.size as i64;
                    r.requested_bytes[p] += b.requested_size as i64;
                } else if split && !seg.is_expandable {
                    r.inactive_split[p] += 1;
                    r.inactive_split_bytes[p] += b.size as i64;
                }
            }
        }
        if !seg.is_expandable && seg.total_size >= max_split {
            r.oversize_segments += 1;
        }
        r.oversize_allocations += seg
            .blocks
            .iter()
            .filter(|b| b.state == "active_allocated" && b.size >= max_split)
            .count() as i64;
    }
    r
}

fn check(
    a: &CachingAllocator<SimulatedMemory>,
    live: &HashMap<u64, usize>,
    split_changed: bool,
) -> Result<(), TestCaseError> {
    let s = a.memory_stats();
    let snap = a.snapshot();
    prop_assert!(a.memory_allocated() <= a.memory_reserved());
    // Segments never overlap and their blocks tile them exactly.
    let mut end = 0u64;
    for seg in &snap.segments {
        prop_assert!(seg.address >= end, "segments overlap");
        let mut addr = seg.address;
        for b in &seg.blocks {
            prop_assert_eq!(b.address, addr);
            prop_assert!(b.size > 0 && b.size % 512 == 0);
            addr += b.size;
        }
        prop_assert_eq!(addr, seg.address + seg.total_size);
        end = addr;
    }
    // Every live pointer is exactly one allocated block, with the size it asked for.
    let active: HashMap<u64, u64> = snap
        .segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state == "active_allocated")
        .map(|b| (b.address, b.requested_size))
        .collect();
    prop_assert_eq!(active.len(), live.len());
    for (p, n) in live {
        prop_assert_eq!(active.get(p).copied(), Some(*n as u64));
    }
    // Every current statistic equals a recount from the blocks.
    let max_split = s["max_split_size"] as u64;
    let r = recount(&snap, max_split);
    for (i, pool) in ["all", "large_pool", "small_pool"].iter().enumerate() {
        for (name, v) in [
            ("allocation", r.allocation[i]),
            ("active", r.allocation[i]),
            ("allocated_bytes", r.allocated_bytes[i]),
            ("active_bytes", r.allocated_bytes[i]),
            ("requested_bytes", r.requested_bytes[i]),
            ("reserved_bytes", r.reserved_bytes[i]),
            ("segment", r.segment[i]),
            ("inactive_split", r.inactive_split[i]),
            ("inactive_split_bytes", r.inactive_split_bytes[i]),
        ] {
            let key = format!("{name}.{pool}");
            prop_assert_eq!(s[&format!("{key}.current")], v, "{}", key);
            // Each stat is the sum of its increases minus its decreases, and never above its peak.
            prop_assert_eq!(
                s[&format!("{key}.current")],
                s[&format!("{key}.allocated")] - s[&format!("{key}.freed")]
            );
            let peak = s[&format!("{key}.peak")];
            prop_assert!(peak >= v, "{} peak {} below current {}", key, peak, v);
        }
    }
    if !split_changed {
        prop_assert_eq!(s["oversize_allocations.current"], r.oversize_allocations);
        prop_assert_eq!(s["oversize_segments.current"], r.oversize_segments);
    }
    // The simulated device holds exactly what the allocator reserved.
    prop_assert_eq!(a.with_memory(|m| m.used()) as u64, a.memory_reserved());
    Ok(())
}

/// The block best fit must pick for `bytes` on `stream`, from a snapshot taken just before:
/// same stream and pool, smallest size, lowest address, within the oversize rules.
/// `None` when expandable segments are involved (their blocks may grow) or nothing fits.
fn predicted_fit(
    a: &CachingAllocator<SimulatedMemory>,
    snap: &Snapshot,
    bytes: usize,
    stream: u64,
) -> Option<Option<u64>> {
    let cfg = a.config();
    if cfg.expandable_segments() || snap.segments.iter().any(|s| s.is_expandable) {
        return None;
    }
    let size = cfg.round_size(bytes) as u64;
    let pool = if size <= MIB as u64 { "small" } else { "large" };
    let best = snap
        .segments
        .iter()
        .filter(|s| s.stream == stream && s.segment_type == pool)
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state == "inactive" && b.size >= size)
        .min_by_key(|b| (b.size, b.address));
    let max_split = cfg.max_split_size() as u64;
    Some(best.and_then(|b| {
        let too_big = if size < max_split {
            b.size >= max_split
        } else {
            b.size >= size + cfg.max_non_split_rounding() as u64
        };
        (!too_big).then_some(b.address)
    }))
}

fn stamp(p: u64, n: usize) {
    // SAFETY: p..p+n is a live allocation this test owns.
    let bytes = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) };
    let tag = (p >> 9) as u8;
    bytes[0] = tag;
    bytes[n - 1] = tag ^ 0xff;
}

fn stamped(p: u64, n: usize) -> bool {
    // SAFETY: as in `stamp`.
    let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n) };
    let tag = (p >> 9) as u8;
    bytes[0] == tag && bytes[n - 1] == tag ^ 0xff
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn books_balance_under_random_use(ops in proptest::collection::vec(op(), 1..80)) {
        let a = CachingAllocator::new(0, SimulatedMemory::new(200 * MIB), AllocConfig::default());
        let mut live: HashMap<u64, usize> = HashMap::new();
        let mut order: Vec<u64> = Vec::new();
        let mut split_changed = false;
        for op in ops {
            match op {
                Op::Alloc { bytes, stream } => {
                    let before = a.snapshot();
                    let segments_before = a.memory_stats()["num_device_alloc"];
                    let predicted = predicted_fit(&a, &before, bytes, stream);
                    let result = a.malloc(bytes, stream, Some("p"));
                    match (predicted, &result) {
                        (Some(Some(addr)), r) => prop_assert_eq!(r.as_ref().ok(), Some(&addr), "best fit"),
                        (Some(None), Ok(_)) => prop_assert!(a.memory_stats()["num_device_alloc"] > segments_before, "no cached block fit, so a new segment"),
                        _ => {}
                    }
                    match result {
                    Ok(p) => {
                        stamp(p, bytes);
                        live.insert(p, bytes);
                        order.push(p);
                    }
                    Err(e) => prop_assert!(e.is_out_of_memory(), "{}", e),
                    }
                }
                Op::Free(i) if !order.is_empty() => {
                    let p = order.swap_remove(i % order.len());
                    let n = live.remove(&p).unwrap();
                    prop_assert!(stamped(p, n), "another block overwrote this one");
                    a.free(p).unwrap();
                }
                Op::Free(_) => {}
                Op::EmptyCache => a.empty_cache(),
                Op::Settings(i) => {
                    split_changed |= SETTINGS[i].starts_with("max_split");
                    a.set_allocator_settings(SETTINGS[i]).unwrap();
                }
                Op::Fraction(f) => a.set_memory_fraction(f).unwrap(),
            }
            check(&a, &live, split_changed)?;
        }
        for (p, n) in live.drain() {
            prop_assert!(stamped(p, n));
            a.free(p).unwrap();
        }
        a.empty_cache();
        check(&a, &live, split_changed)?;
        prop_assert_eq!(a.memory_reserved(), 0);
        prop_assert_eq!(a.memory_allocated(), 0);
        prop_assert_eq!(a.with_memory(|m| m.used()), 0);
        prop_assert!(a.snapshot().segments.is_empty());
    }
}
