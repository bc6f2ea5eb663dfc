//! What torchlet adds after PyTorch's out-of-memory message: free blocks against the request, the
//! reserved-but-free bytes by cause, the biggest holders, and a replay under other settings.
use crate::common;

use torchlet_alloc::{
    AllocConfig, CachingAllocator, DeviceAllocator, DevicePtr, HistoryOptions, OomDiagnosis,
    PoolKind, ReplayVerdict, SimulatedMemory,
};

/// How the Rhai language starts the memory history, as the notes spell it.
const RECORD: &str = "cuda::record_memory_history()";

const MIB: usize = 1 << 20;
/// `empty(1500000)` in float32, asked and rounded: three fit in a 20 MiB segment.
const SIX_MB_ASKED: usize = 6_000_000;
const SIX_MB: usize = 6_000_128;
/// `empty(2500000)` in float32, asked and rounded.
const TEN_MB_ASKED: usize = 10_000_000;
const TEN_MB: usize = 10_000_384;
/// What is left of a 20 MiB segment after three 6 MB blocks.
const TAIL: u64 = (20 * MIB - 3 * SIX_MB) as u64;

/// Script 06's fragmentation on a device of 90 MiB: four 20 MiB segments each keep their middle
/// 6 MB tensor, so the 10 MB request needs a fifth segment that does not fit.
fn fragment(a: &dyn DeviceAllocator) -> Vec<DevicePtr> {
    let all: Vec<DevicePtr> = (0..12)
        .map(|_| a.malloc(SIX_MB_ASKED, 0, None).unwrap())
        .collect();
    let mut kept = Vec::new();
    for (i, ptr) in all.into_iter().enumerate() {
        if i % 3 == 1 {
            kept.push(ptr);
        } else {
            a.free(ptr).unwrap();
        }
    }
    kept
}

fn device(config: &str) -> CachingAllocator<SimulatedMemory> {
    let config = AllocConfig::parse(config).unwrap();
    CachingAllocator::new(0, SimulatedMemory::new(90 * MIB), config)
}

fn fragmentation_oom(a: &dyn DeviceAllocator) -> OomDiagnosis {
    let _kept = fragment(a);
    let e = a
        .malloc(TEN_MB_ASKED, 0, None)
        .expect_err("a fifth segment does not fit");
    assert!(e.is_out_of_memory(), "{e}");
    a.take_oom_diagnosis().expect("a diagnosis")
}

#[test]
fn the_fragmentation_oom_names_its_causes_and_the_setting_that_avoids_it() {
    let a = device("");
    a.record_memory_history(HistoryOptions::default());
    let d = fragmentation_oom(&a);
    assert_eq!(d.request, TEN_MB as u64);
    assert_eq!(d.pool, PoolKind::Large);
    // The biggest free piece: the two freed 6 MB blocks after the kept one, merged with the tail.
    assert_eq!(d.largest_free_large, (SIX_MB as u64) + TAIL);
    assert_eq!(d.largest_free_small, 0);
    assert_eq!(d.split_tails, 4 * (2 * SIX_MB as u64 + TAIL));
    assert_eq!(d.cached_segments, 0);
    assert_eq!(d.rounding, 4 * 128);
    // In one expandable segment the freed neighbours form a 12 MB hole; no max_split_size_mb
    // changes 20 MiB segments, which are below every value tried.
    assert_eq!(
        d.replay,
        ReplayVerdict::Judged {
            events: 12 + 8 * 2 + 4,
            expandable: Some(true),
            max_split_mb: None,
        }
    );
    let lines = d.lines(RECORD);
    assert!(
        lines[0].contains("the largest there is 8971264 B"),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("expandable_segments:True would have avoided it"),
        "{lines:?}"
    );
    assert!(a.take_oom_diagnosis().is_none(), "taken once");
}

#[test]
fn with_expandable_segments_on_the_replay_says_so() {
    let a = device("expandable_segments:True");
    a.record_memory_history(HistoryOptions::default());
    let _kept: Vec<DevicePtr> = (0..13)
        .map(|_| a.malloc(SIX_MB_ASKED, 0, None).unwrap())
        .collect();
    let e = a
        .malloc(TEN_MB_ASKED, 0, None)
        .expect_err("the device is full");
    assert!(e.is_out_of_memory());
    let d = a.take_oom_diagnosis().unwrap();
    let ReplayVerdict::Judged { expandable, .. } = d.replay else {
        panic!("{:?}", d.replay)
    };
    assert_eq!(expandable, None, "already on");
    assert!(d.lines(RECORD)[2].contains("expandable_segments is already on"));
}

#[test]
fn without_a_complete_history_the_notes_say_how_to_get_one() {
    // no GPU lock: its allocators are its own, over simulated memory.
    // History off.
    let a = device("");
    assert_eq!(fragmentation_oom(&a).replay, ReplayVerdict::NoHistory);
    // History started while memory was reserved: the replay would start from the wrong state.
    let b = device("");
    let early = b.malloc(SIX_MB_ASKED, 0, None).unwrap();
    b.free(early).unwrap();
    b.record_memory_history(HistoryOptions::default());
    let d = fragmentation_oom(&b);
    assert_eq!(d.replay, ReplayVerdict::NoHistory);
    assert!(
        d.lines(RECORD)[2]
            .contains("call cuda::record_memory_history() before the first allocation"),
        "{:?}",
        d.lines(RECORD)
    );
    // A ring buffer that dropped its oldest entries.
    let c = device("");
    c.record_memory_history(HistoryOptions {
        max_entries: 5,
        ..Default::default()
    });
    assert_eq!(fragmentation_oom(&c).replay, ReplayVerdict::NoHistory);
}

#[test]
fn an_injected_failure_is_not_reproduced_by_the_replay() {
    let a = device("");
    a.record_memory_history(HistoryOptions::default());
    let _x = a.malloc(SIX_MB_ASKED, 0, None).unwrap();
    a.fail_after(Some(0));
    assert!(a.malloc(SIX_MB_ASKED, 0, None).is_err());
    let d = a.take_oom_diagnosis().unwrap();
    assert_eq!(d.replay, ReplayVerdict::NotReproduced { events: 2 });
    assert!(
        d.lines(RECORD)[2].contains("cannot be judged"),
        "{:?}",
        d.lines(RECORD)
    );
}

#[test]
fn an_uncaught_oom_in_a_script_ends_with_the_notes_and_the_biggest_holders() {
    let (_guard, allocator) = common::gpu();
    let (mut s, _) = torchlet_session::Session::captured("<oom>");
    let (_, total) = allocator.mem_get_info().unwrap();
    let fraction = (90 * MIB) as f64 / total as f64;
    let setup = format!(
        "cuda::record_memory_history(); cuda::set_per_process_memory_fraction({fraction});
         ts = [];
         for i in 0..12 {{ ts.push(empty(1500000, #{{device: \"cuda\"}})); }}
         kept = [];
         for i in 0..12 {{ if i % 3 == 1 {{ kept.push(ts[i]); }} }}
         ts = ();"
    );
    let outcome = s.execute(&setup);
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let error = s
        .execute("big = empty(2500000, #{device: \"cuda\"});")
        .error
        .expect("out of memory");
    assert_eq!(error.kind, "OutOfMemoryError");
    let lines: Vec<&str> = error.message.lines().collect();
    assert!(
        lines[0].starts_with("CUDA out of memory. Tried to allocate 20.00 MiB"),
        "{lines:?}"
    );
    assert!(
        lines[1].contains("the largest there is 8971264 B"),
        "{lines:?}"
    );
    assert!(
        lines[3].contains("expandable_segments:True would have avoided it"),
        "{lines:?}"
    );
    // Four blocks held the same way (items of one list) are one holder, added up.
    let holders = lines[4]
        .strip_prefix("torchlet: the biggest holders: ")
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        holders.starts_with("4 blocks of `kept[…]` 24000512 B (22.89 MiB)"),
        "{holders}"
    );
    // The session is usable, and the next failure speaks only of itself.
    let outcome = s.execute(
        "kept = (); cuda::set_per_process_memory_fraction(1.0); cuda::record_memory_history(()); 1",
    );
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    allocator.empty_cache();
}
