//! Shared by the integration tests: the devices every test body runs on, the lock on cuda:0, the
//! article's figures, and (in submodules) one test per device ([`device_test!`]), code run in a
//! session ([`script`]), tensors of known values ([`tensors`]), the binary as a child process
//! ([`binary`]) and Jupyter kernel processes on free ports ([`kernel_process`]).
//!
//! A test binary holds many areas' tests, and they share one process's devices: cuda:0's
//! allocator, its statistics, the random generators. So every test that uses cuda:0 holds the GPU
//! lock: shared ([`uses_gpu`], which [`devices`] and [`device_names`] take for it) when it only
//! computes there, exclusive ([`exclusive`], [`gpu`]) when it reads or changes what is
//! process-wide (memory figures, peaks, seeds, fault injection), so no other test allocates
//! meanwhile. `tests/memory/gpu_lock.rs` checks that every test naming CUDA follows this.
#![allow(dead_code)]

use std::cell::RefCell;
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use torchlet_alloc::DeviceAllocator;
use torchlet_core::device::{self, Device};

pub mod alloc;
pub mod binary;
pub mod device_test;
pub mod kernel_process;
pub mod script;
pub mod tensors;

// Each test binary uses some of these, none all of them.
#[allow(unused_imports)]
pub use alloc::fresh_allocator;
#[allow(unused_imports)]
pub use binary::{driver_has_a_gpu, repl_command, repo, text, torchlet, write_script};
#[allow(unused_imports)]
pub(crate) use device_test::device_test;
#[allow(unused_imports)]
pub use script::{
    command_text, dynamic, error, eval, int, outcome, plain, run, session_with, tensor_facts, value,
};
#[allow(unused_imports)]
pub use tensors::{iota, opts, sample_values, values_of};

static SPEC: OnceLock<&'static str> = OnceLock::new();
static GPU: RwLock<()> = RwLock::new(());

thread_local! {
    /// This thread's hold on [`GPU`]. A shared hold is kept until the thread ends (each test runs
    /// on its own thread), so a test need not keep a guard alive through its body.
    static HELD: RefCell<Held> = const { RefCell::new(Held::Nothing) };
}

enum Held {
    Nothing,
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Exclusive,
}

/// The simulated GPU most tests run on when no real one is asked for.
pub const SIMULATED_GPU: &str = "16GiB";

/// Whether the tests target a real GPU (`TORCHLET_TEST_DEVICE=cuda`) rather than a simulated one.
pub fn real_gpu() -> bool {
    std::env::var("TORCHLET_TEST_DEVICE").is_ok_and(|v| v == "cuda")
}

/// Fail a test that needs the real GPU when it runs without one (through `--include-ignored`).
///
/// Such tests are `#[ignore]`d unless built with `--features gpu-tests`.
pub fn require_real_gpu() {
    assert!(
        real_gpu(),
        "this test needs a real GPU: build it with --features gpu-tests and run it with TORCHLET_TEST_DEVICE=cuda"
    );
}

/// Set up the devices once: the real GPUs when asked for, else simulated ones sized by `spec`
/// ("16GiB", or "16GiB,8GiB" for two). Every call in one test binary must name the same spec.
pub fn setup_simulating(spec: &'static str) {
    let first = SPEC.get_or_init(|| {
        device::init(if real_gpu() { None } else { Some(spec) }).expect("device setup");
        spec
    });
    assert_eq!(*first, spec, "one test binary simulates one set of devices");
}

/// Set up the devices once: the real GPU when asked for, else a simulated 16 GiB cuda:0.
pub fn setup() {
    setup_simulating(SIMULATED_GPU);
}

/// Exclusive use of a simulated 16 GiB cuda:0, even where TORCHLET_TEST_DEVICE=cuda asks for the
/// real GPU, for tests whose figures are the simulated device's own (its name, its capacity). A
/// binary that calls this sets up no other devices.
pub fn setup_simulated_gpu() -> Exclusive {
    device::init(Some(SIMULATED_GPU)).expect("simulated GPU");
    lock()
}

/// Every device a test body runs on: the CPU and cuda:0 (simulated, or real when asked for).
/// Holds the GPU shared for the rest of the test (see [`uses_gpu`]).
pub fn devices() -> Vec<Device> {
    uses_gpu();
    vec![Device::Cpu, Device::Cuda(0)]
}

/// [`devices`] as scripts name them.
pub fn device_names() -> Vec<&'static str> {
    uses_gpu();
    vec!["cpu", "cuda"]
}

/// Mark this test as one that computes on cuda:0 without reading its process-wide figures: it holds
/// the GPU shared until the test ends, so the tests that read those figures wait for it. A no-op
/// while this thread holds the GPU already.
pub fn uses_gpu() {
    setup();
    shares_gpu_as_is();
}

/// [`uses_gpu`] for tests that drive cuda:0 through the driver themselves (tests/gpu), without
/// setting torchlet's devices up.
pub fn shares_gpu_as_is() {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if matches!(*held, Held::Nothing) {
            *held = Held::Shared(GPU.read().unwrap_or_else(|e| e.into_inner()));
        }
    });
}

/// cuda:0 to this test alone, as a fresh process has it: no cuBLAS workspaces (an earlier test's
/// matrix products took them), an empty cache and fresh peaks.
pub fn exclusive() -> Exclusive {
    setup();
    let guard = lock();
    let a = device::cuda_allocator(0).expect("cuda:0");
    device::clear_blas_workspaces();
    a.empty_cache();
    a.reset_peak_memory_stats();
    guard
}

/// cuda:0 and the other devices to this test alone, as they are (no cache emptied), for a binary
/// whose simulated devices are `spec`.
pub fn exclusive_simulating(spec: &'static str) -> Exclusive {
    setup_simulating(spec);
    lock()
}

/// The GPU held by this thread alone; dropping it lets other tests use cuda:0 again.
pub struct Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

impl Drop for Exclusive {
    fn drop(&mut self) {
        HELD.with(|held| *held.borrow_mut() = Held::Nothing);
    }
}

fn lock() -> Exclusive {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        assert!(
            !matches!(*held, Held::Exclusive),
            "this test holds the GPU exclusively already"
        );
        // A shared hold from earlier in this test is given up first: waiting for the write lock
        // while holding a read lock would wait for ever.
        *held = Held::Nothing;
    });
    let guard = GPU.write().unwrap_or_else(|e| e.into_inner());
    HELD.with(|held| *held.borrow_mut() = Held::Exclusive);
    Exclusive(guard)
}

/// cuda:0 to this test alone, as it is, for tests that drive it through the driver themselves and
/// read its free memory (tests/gpu), without setting torchlet's devices up.
pub fn alone_as_is() -> Exclusive {
    lock()
}

/// [`exclusive`], with cuda:0's allocator.
pub fn gpu() -> (Exclusive, std::sync::Arc<dyn DeviceAllocator>) {
    let guard = exclusive();
    (guard, device::cuda_allocator(0).expect("cuda:0"))
}

/// The article's figures, as PyTorch reported them on the H200 (tests/data/torch-h200.json, checked
/// against it by tests/front_ends/scripts.rs) and as the caching allocator's rules make them.
pub mod figures {
    /// `x = randn(1000, 1000)` on the GPU: 4,000,000 bytes requested …
    pub const X_REQUESTED: u64 = 4_000_000;
    /// … rounded up to a multiple of 512: `memory_allocated()` while x lives.
    pub const X: u64 = 4_000_256;
    /// Two such tensors (x and `temp = x * 2`, or x and `y = x + 1`).
    pub const TWO_X: u64 = 2 * X;
    /// The large-pool segment x is carved from: `memory_reserved()` after x (20 MiB).
    pub const SEGMENT: u64 = 20 << 20;
    /// What is left of x's segment once x and temp are carved from it.
    pub const TAIL_AFTER_TWO_X: u64 = SEGMENT - TWO_X;
    /// The small-pool segment any request of 1 MiB or less is carved from (2 MiB).
    pub const SMALL_SEGMENT: u64 = 2 << 20;
}

/// Run `command` with its output in `log`, killed after `limit`: whether it succeeded, and the log
/// (ending with the exit status or the timeout when it failed).
pub fn run_logged(
    mut command: std::process::Command,
    log: &std::path::Path,
    limit: std::time::Duration,
) -> (bool, String) {
    let out = std::fs::File::create(log).expect("log file");
    command
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().expect("log handle"))
        .stderr(out);
    let mut child = command.spawn().expect("start a helper process");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a helper process") {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match status {
        Some(status) if status.success() => (true, text),
        Some(status) => (false, format!("{text}({status})")),
        None => (false, format!("{text}(timed out after {limit:?})")),
    }
}

/// The parity corpus's known differences from PyTorch (`tests/memory/parity.rs`, `tests/memory/fit.rs`).
pub mod parity_known {
    /// Differences torchlet still has: (program, first differing event, why). Each is asserted
    /// where it starts, so a fix (or a new, earlier difference) fails until this table is updated;
    /// checkpoints before it are still compared in full.
    pub const KNOWN: &[(&str, usize, &str)] = &[
        (
            "py_zoo_llama_lora",
            1655,
            "the end of the first checkpointed recomputation (layer 1's, in backward), whose \
             events are PyTorch's up to its early stop: PyTorch then first frees two 8-byte blocks, \
             torchlet the recomputed MLP's 32768 B and 16384 B buffers; which tensors PyTorch's \
             8-byte blocks are is not yet found (every event before, the two plain training steps \
             and the recomputation included, is PyTorch's)",
        ),
        (
        "py_sdpa_efficient",
        101,
        "q, k and v are one leaf: after the memory-efficient backward PyTorch frees two of its three \
         transposed gradients before it allocates their sum, torchlet allocates the sum first; the \
         order of PyTorch's InputBuffer for one input fed three times is not yet traced",
        ),
    ];

    /// Programs whose segments the simulated GPU cannot place in PyTorch's address order: the
    /// checkpoint where the split statistics first differ, and why. Their segments are not compared,
    /// and from that checkpoint on only the figures placement cannot change are (`PLACEMENT_FREE` in
    /// `tests/memory/parity.rs`); at that checkpoint the split statistics must differ, so
    /// that the list stays true. Which block a request takes decides whether its remainder is split
    /// off, so the bytes of blocks and segments (`memory_allocated` too) follow placement.
    pub const PLACEMENT_UNREPRODUCED: &[(&str, &str, &str)] = &[(
        "py_checkpoint_reentrant",
        "autocast forward",
        "every event is PyTorch's (recorded on an H100); leaving the autocast block frees the five \
         cached casts, small-pool neighbours, in the order of PyTorch's hash map of their host \
         addresses (the program's two recordings differ in it), and that order decides how many \
         inactive splits the small pool counts; Note [autocast cache order]",
    ), (
        "py_losses",
        "label_smoothing sum, nll_loss sum backward",
        "every event is PyTorch's (recorded on an H100); in the small pool one block more is split \
         here than in PyTorch in the last section's backward, which of equal free blocks best fit \
         took, which their addresses decide; Note [segment placement]",
    ), (
        "py_zoo_unet",
        "step 0 backward",
        "every event is PyTorch's (recorded on an H100); in the small pool two more blocks are split \
         in PyTorch than here through the first backward, which of equal free blocks best fit \
         took, which their addresses decide; Note [segment placement]",
    ), (
        "py_ops_reach",
        "elementwise backward",
        "every event is PyTorch's (recorded on an H100); in the small pool more blocks are split in \
         PyTorch than here through the elementwise backward, which of equal free blocks best fit \
         took, which their addresses decide; Note [segment placement]",
    ), (
        "py_ddp_mlp",
        "step 0 backward",
        "every event is PyTorch's; only the small pool's split free blocks differ by one (their \
         count and peak bytes), from which of equal free blocks best fit took, which their \
         addresses decide; Note [segment placement]",
    ), (
        "gpt4",
        "backward 0",
        "the H200's driver puts ~74 MiB of cuBLAS's and PyTorch's own code beside the segments \
         and gpt4's 64 MiB segments of backward in chunks of their own; Note [segment placement]",
    ), (
        "py_sequential_sgd",
        "step 2 backward",
        "every event is PyTorch's; only the peak of split free bytes differs, from which of two equal \
         free blocks best fit took, which their addresses decide; Note [segment placement]",
    ), (
        "py_gpt_modules",
        "step 0 optimizer",
        "every event is PyTorch's; only the peak count of split free blocks differs, from which of \
         equal free blocks best fit took, which their addresses decide; Note [segment placement]",
    ), (
        "py_sdpa_flash",
        "dropout forward",
        "every event is PyTorch's; after flash's second RNG state one more free small block is split \
         in PyTorch than here, which of equal free blocks best fit took, in segments the driver placed in \
         another order (tests/parity/placement_diff.py, tests/data/placement/)",
    ), (
        "py_llama_lora",
        "step 0 backward",
        "every event is PyTorch's; in the small pool one block more is split here by the end of \
         the first backward, which of equal free blocks best fit took, in segments the driver placed in another order \
         (tests/parity/placement_diff.py, tests/data/placement/)",
    ), (
        "py_zoo_gpt2",
        "step 0 backward",
        "every event is transformers' GPT-2's; in the small pool one block fewer is split here by \
         the end of the first backward, which of equal free blocks best fit took, in segments the driver placed in another order \
         (tests/parity/placement_diff.py, tests/data/placement/)",
    ), (
        "py_zoo_resnet",
        "step 0 optimizer",
        "every event is torchvision's ResNet-18's; after the first SGD step one more free large \
         block is split here, which of equal free blocks best fit took, in segments the driver placed in another order \
         (tests/parity/placement_diff.py, tests/data/placement/)",
    )];
}
