//! The retry path, its counters, the memory fraction, GC, and the out-of-memory message.
use crate::common;

use common::figures::{SEGMENT, TWO_X};
use torchlet_alloc::{
    AllocConfig, AllocError, CachingAllocator, DeviceAllocator, DevicePtr, RawError, RawMemory,
    SimulatedMemory,
};

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// Simulated memory that reports the device figures PyTorch measured on an H200.
struct H200Like {
    inner: SimulatedMemory,
    free: usize,
    total: usize,
    process: usize,
}

impl RawMemory for H200Like {
    fn allocate(&mut self, bytes: usize) -> Result<DevicePtr, RawError> {
        self.inner.allocate(bytes)
    }
    fn free(&mut self, ptr: DevicePtr, bytes: usize) -> Result<(), RawError> {
        self.inner.free(ptr, bytes)
    }
    fn mem_get_info(&self) -> Result<(usize, usize), RawError> {
        Ok((self.free, self.total))
    }
    fn process_memory_in_use(&self) -> Option<usize> {
        Some(self.process)
    }
}

/// 139.80 GiB as the H200 reported it (any value that prints as 139.80 GiB).
const H200_TOTAL: usize = 150_110_011_392;

fn h200(free: usize, process: usize) -> CachingAllocator<H200Like> {
    let memory = H200Like {
        inner: SimulatedMemory::new(16 * GIB),
        free,
        total: H200_TOTAL,
        process,
    };
    CachingAllocator::new(0, memory, AllocConfig::default())
}

fn to_torchlet(pytorch_message: &str) -> String {
    pytorch_message
        .replace("PYTORCH_CUDA_ALLOC_CONF=", "TORCHLET_CUDA_ALLOC_CONF=")
        .replace("by PyTorch", "by torchlet")
        .replace("non-PyTorch", "non-torchlet")
}

#[test]
fn oom_message_matches_measured_example_with_live_tensor() {
    // PyTorch 2.11's message on an H200: a 4 MB tensor alive, then a 200 GiB request.
    let measured = "CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 139.27 GiB is free. Including non-PyTorch memory, this process has 538.00 MiB memory in use. Of the allocated memory 3.81 MiB is allocated by PyTorch, and 16.19 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)";
    let a = h200((139.27 * GIB as f64) as usize, 538 * MIB);
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let e = a.malloc(200 * GIB, 0, None).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(e.to_string(), to_torchlet(measured));
    let s = a.memory_stats();
    assert_eq!(
        (
            s["num_ooms"],
            s["num_alloc_retries"],
            s["num_sync_all_streams"]
        ),
        (1, 1, 1)
    );
    // The split segment holding x survived the flush.
    assert_eq!(a.memory_reserved(), SEGMENT);
    a.free(x).unwrap();
}

#[test]
fn oom_message_matches_measured_fresh_process_file() {
    // Recorded by tests/data/record_torch_oom_message.py in a process with no other CUDA work.
    let measured = include_str!("../data/torch-oom-message.txt").trim_end();
    let a = h200((139.2 * GIB as f64) as usize, 610 * MIB);
    let e = a.malloc(200 * GIB, 0, None).unwrap_err();
    assert_eq!(e.to_string(), to_torchlet(measured));
    match e {
        AllocError::OutOfMemory { tried, total, .. } => {
            assert_eq!(tried, 200 * GIB as u64);
            assert_eq!(total, H200_TOTAL as u64);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn simulated_device_reports_its_own_capacity() {
    let a = CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default());
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let e = a.malloc(200 * GIB, 0, None).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "CUDA out of memory. Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 16.00 GiB \
             of which 15.98 GiB is free. Including non-torchlet memory, this process has 20.00 MiB memory in use. \
             Of the allocated memory 3.81 MiB is allocated by torchlet, and 16.19 MiB is reserved by torchlet"
        ),
        "{msg}"
    );
    assert_eq!(
        a.mem_get_info().unwrap(),
        ((16 * GIB - 20 * MIB) as u64, 16 * GIB as u64)
    );
    a.free(x).unwrap();
}

#[test]
fn tried_to_allocate_is_the_segment_size() {
    // A 4 MB tensor that does not fit reports the 20 MiB segment it asked for.
    let a = CachingAllocator::new(0, SimulatedMemory::new(30 * MIB), AllocConfig::default());
    let x = a.malloc(12 * MIB, 0, None).unwrap();
    let e = a.malloc(4_000_000, 0, None).unwrap_err();
    assert!(e.to_string().starts_with("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 30.00 MiB of which 18.00 MiB is free."), "{e}");
    a.free(x).unwrap();
}

#[test]
fn flush_and_retry_frees_cached_segments_then_succeeds() {
    let a = CachingAllocator::new(0, SimulatedMemory::new(40 * MIB), AllocConfig::default());
    let p = a.malloc(30 * MIB, 0, None).unwrap();
    a.free(p).unwrap();
    // Blocks are never shared across streams, so stream 1 needs a new segment: the device is
    // full until the flush gives back the cached 30 MiB segment of stream 0.
    let q = a.malloc(20 * MIB, 1, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(
        s["num_alloc_retries"], 1,
        "cudaMalloc failed once, the flush retried"
    );
    assert_eq!(s["num_sync_all_streams"], 1);
    assert_eq!(s["num_ooms"], 0);
    assert_eq!(
        s["num_device_free"], 1,
        "the cached 30 MiB segment was released"
    );
    assert_eq!(a.memory_reserved(), 20 * MIB as u64);
    a.free(q).unwrap();
}

#[test]
fn oversize_blocks_are_freed_first_when_max_split_is_set() {
    let cfg = AllocConfig::parse("max_split_size_mb:20").unwrap();
    let a = CachingAllocator::new(0, SimulatedMemory::new(60 * MIB), cfg);
    let p = a.malloc(50 * MIB, 0, None).unwrap();
    a.free(p).unwrap();
    // 30 MiB may not reuse the 50 MiB oversize block (waste >= 20 MiB); try 2 frees it.
    let q = a.malloc(30 * MIB, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["num_alloc_retries"], 0, "try 2 sufficed, no full flush");
    assert_eq!(s["num_sync_all_streams"], 0);
    assert_eq!(s["num_device_free"], 1);
    assert_eq!(s["oversize_segments.current"], 1);
    assert_eq!(s["oversize_allocations.current"], 1);
    assert_eq!(s["max_split_size"], 20 * MIB as i64);
    a.free(q).unwrap();
}

#[test]
fn memory_fraction_limits_and_is_reported() {
    let a = CachingAllocator::new(0, SimulatedMemory::new(GIB), AllocConfig::default());
    a.set_memory_fraction(0.05).unwrap();
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let e = a.malloc(40 * MIB, 0, None).unwrap_err();
    assert!(
        e.to_string()
            .contains(" memory in use. 51.20 MiB allowed; Of the allocated memory 3.81 MiB"),
        "{e}"
    );
    let s = a.memory_stats();
    assert_eq!((s["num_alloc_retries"], s["num_ooms"]), (1, 1));
    assert!(a
        .set_memory_fraction(1.5)
        .unwrap_err()
        .to_string()
        .contains("between 0 and 1"));
    a.free(x).unwrap();
}

#[test]
fn memory_fraction_message_matches_measured_allowed_figure() {
    let a = h200(100 * GIB, 538 * MIB);
    a.set_memory_fraction(0.01).unwrap();
    let e = a.malloc(2 * GIB, 0, None).unwrap_err();
    assert!(
        e.to_string().contains(
            "this process has 538.00 MiB memory in use. 1.40 GiB allowed; Of the allocated memory"
        ),
        "{e}"
    );
}

#[test]
fn garbage_collection_frees_old_blocks_without_a_flush() {
    let cfg = AllocConfig::parse("garbage_collection_threshold:0.4").unwrap();
    let a = CachingAllocator::new(0, SimulatedMemory::new(100 * MIB), cfg);
    a.set_memory_fraction(1.0).unwrap();
    let old = a.malloc(30 * MIB, 0, None).unwrap();
    a.free(old).unwrap();
    // Age the 30 MiB block with large-pool searches on another stream.
    for _ in 0..5 {
        let f = a.malloc(2 * MIB, 1, None).unwrap();
        a.free(f).unwrap();
    }
    // 50 MiB reserved > 0.4 * 100 MiB: before the next device allocation GC frees the
    // blocks older than average (the 30 MiB one), not the recently used 20 MiB segment.
    let big = a.malloc(40 * MIB, 0, None).unwrap();
    let s = a.memory_stats();
    assert_eq!(s["num_device_free"], 1);
    assert_eq!(s["num_sync_all_streams"], 0);
    assert_eq!(s["num_alloc_retries"], 0);
    assert_eq!(a.memory_reserved(), 60 * MIB as u64);
    a.free(big).unwrap();
}

#[test]
fn state_survives_an_oom() {
    let a = CachingAllocator::new(0, SimulatedMemory::new(64 * MIB), AllocConfig::default());
    let x = a.malloc(4_000_000, 0, None).unwrap();
    assert!(a.malloc(100 * MIB, 0, None).unwrap_err().is_out_of_memory());
    let y = a.malloc(4_000_000, 0, None).unwrap();
    assert_eq!(a.memory_allocated(), TWO_X);
    a.free(x).unwrap();
    a.free(y).unwrap();
}
