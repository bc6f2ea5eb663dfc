//! Shared by the integration tests: the devices every test body runs on, and a lock for the GPU's numbers.
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard, Once};

use torchlet::alloc::DeviceAllocator;
use torchlet::device::{self, Device};

static INIT: Once = Once::new();
static GPU: Mutex<()> = Mutex::new(());

/// Whether the tests target a real GPU (`TORCHLET_TEST_DEVICE=cuda`) rather than a simulated one.
pub fn real_gpu() -> bool {
    std::env::var("TORCHLET_TEST_DEVICE").is_ok_and(|v| v == "cuda")
}

/// Fail a test that needs the real GPU when it runs without one (through `--include-ignored`).
///
/// Such tests are `#[ignore]`d unless built with `TORCHLET_TEST_DEVICE=cuda` (see build.rs).
pub fn require_real_gpu() {
    assert!(
        real_gpu(),
        "this test needs a real GPU: build and run it with TORCHLET_TEST_DEVICE=cuda"
    );
}

/// Set up the devices once: the real GPU when asked for, else a simulated 16 GiB cuda:0.
pub fn setup() {
    INIT.call_once(|| {
        let spec = if real_gpu() { None } else { Some("16GiB") };
        device::init(spec).expect("device setup");
    });
}

/// Every device a test body runs on: the CPU and cuda:0 (simulated, or real when asked for).
pub fn devices() -> Vec<Device> {
    setup();
    vec![Device::Cpu, Device::Cuda(0)]
}

/// Exclusive use of cuda:0's allocator numbers, starting from an empty cache and fresh peaks.
pub fn gpu() -> (MutexGuard<'static, ()>, std::sync::Arc<dyn DeviceAllocator>) {
    setup();
    let guard = GPU.lock().unwrap_or_else(|e| e.into_inner());
    let a = device::cuda_allocator(0).expect("cuda:0");
    a.empty_cache();
    a.reset_peak_memory_stats();
    (guard, a)
}
