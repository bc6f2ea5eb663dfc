//! Rounding, pools and segment sizes: one fresh tensor of n bytes at a time, against what PyTorch
//! 2.11 reported for each on an H200.
use crate::common;

use common::figures::SEGMENT;
use torchlet_alloc::{AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory};

/// (n requested, memory_reserved, memory_allocated, pool), each measured with PyTorch on an H200
/// (`empty_cache()` between rows).
const TABLE: &[(usize, u64, u64, &str)] = &[
    (1, 2097152, 512, "small"),
    (511, 2097152, 512, "small"),
    (512, 2097152, 512, "small"),
    (513, 2097152, 1024, "small"),
    (1000, 2097152, 1024, "small"),
    (1048575, 2097152, 1048576, "small"),
    (1048576, 2097152, 1048576, "small"),
    (1048577, 20971520, 1049088, "large"),
    (4000000, 20971520, 4000256, "large"),
    (10485759, 10485760, 10485760, "large"),
    (10485760, 10485760, 10485760, "large"),
    (11000000, 12582912, 11000320, "large"),
    (19922944, 20971520, 20971520, "large"),
    (20447232, 20971520, 20971520, "large"),
    (20971521, 23068672, 20972032, "large"),
    (100000000, 100663296, 100663296, "large"),
];

#[test]
fn size_table_matches_pytorch() {
    let a = common::fresh_allocator();
    for &(n, reserved, allocated, pool) in TABLE {
        let p = a.malloc(n, 0, None).unwrap();
        assert_eq!(a.memory_reserved(), reserved, "reserved for n={n}");
        assert_eq!(a.memory_allocated(), allocated, "allocated for n={n}");
        let stats = a.memory_stats();
        assert_eq!(
            stats[&format!("allocated_bytes.{pool}_pool.current")],
            allocated as i64,
            "pool for n={n}"
        );
        assert_eq!(stats["requested_bytes.all.current"], n as i64);
        a.free(p).unwrap();
        a.empty_cache();
        assert_eq!(a.memory_reserved(), 0);
    }
}

#[test]
fn split_remainder_follows_pool_rules() {
    let a = common::fresh_allocator();
    // Small pool: remainder of 2096640 after 512 is split off and counts as inactive split.
    let p = a.malloc(1, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["inactive_split_bytes.small_pool.current"], 2096640);
    assert_eq!(s["inactive_split.small_pool.current"], 1);
    a.free(p).unwrap();
    // 19 MiB: remainder of exactly 1 MiB is not > 1 MiB, so the whole segment is handed out.
    let p = a.malloc(19922944, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["inactive_split.large_pool.current"], 0);
    assert_eq!(s["allocated_bytes.large_pool.current"], SEGMENT as i64);
    assert_eq!(s["requested_bytes.large_pool.current"], 19922944);
    a.free(p).unwrap();
}

#[test]
fn zero_bytes_allocate_nothing() {
    let a = common::fresh_allocator();
    assert_eq!(a.malloc(0, 0, None).unwrap(), 0);
    assert_eq!(a.memory_reserved(), 0);
    assert_eq!(a.memory_stats()["num_device_alloc"], 0);
    a.free(0).unwrap();
}

#[test]
fn pointers_are_aligned_real_host_memory() {
    let a = common::fresh_allocator();
    let ptrs: Vec<u64> = (1..50)
        .map(|i| a.malloc(i * 97, 0, None).unwrap())
        .collect();
    for (i, &p) in ptrs.iter().enumerate() {
        assert_eq!(p % 512, 0);
        // The memory is real: write and read it back.
        let len = (i + 1) * 97;
        let bytes = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
        bytes.fill(i as u8);
        assert!(bytes.iter().all(|&b| b == i as u8));
    }
    for p in ptrs {
        a.free(p).unwrap();
    }
}

#[test]
fn one_exabyte_guard_fails_at_once() {
    let a = common::fresh_allocator();
    let e = a.malloc(1 << 60, 0, None).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(
        e.to_string(),
        "CUDA out of memory. Tried to allocate more than 1EB memory."
    );
    assert_eq!(a.memory_stats()["num_ooms"], 0);
}

#[test]
fn roundup_power2_divisions_change_rounding() {
    let cfg = AllocConfig::parse("roundup_power2_divisions:4").unwrap();
    // 1200 MiB lies in [1024, 2048) MiB; 4 divisions make 256 MiB steps, so 1280 MiB.
    assert_eq!(cfg.round_size(1200 << 20), 1280 << 20);
    // Sizes at or below 512*4 bytes keep plain 512-byte rounding.
    assert_eq!(cfg.round_size(2000), 2048);
    assert_eq!(cfg.round_size(1 << 30), 1 << 30);
    let a = CachingAllocator::new(0, SimulatedMemory::default(), cfg);
    let p = a.malloc(5 << 20 | 1, 0, None).unwrap();
    // 5 MiB+1 in [4, 8) MiB with 4 divisions rounds to 6 MiB.
    assert_eq!(a.memory_allocated(), 6 << 20);
    a.free(p).unwrap();
}
