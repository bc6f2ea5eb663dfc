//! `memory_summary`, full and abbreviated, to the character, against PyTorch 2.11's on an H200.

use torchlet_alloc::{
    memory_summary, AllocConfig, CachingAllocator, DeviceAllocator, SimulatedMemory,
};

/// PyTorch's summary verbatim, after `x = randn(1000,1000).cuda(); temp = x*2`.
const FULL: &str = "\
|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 0                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   7813 KiB |   7813 KiB |   7813 KiB |      0 B   |
|       from large pool |   7813 KiB |   7813 KiB |   7813 KiB |      0 B   |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Active memory         |   7813 KiB |   7813 KiB |   7813 KiB |      0 B   |
|       from large pool |   7813 KiB |   7813 KiB |   7813 KiB |      0 B   |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Requested memory      |   7812 KiB |   7812 KiB |   7812 KiB |      0 B   |
|       from large pool |   7812 KiB |   7812 KiB |   7812 KiB |      0 B   |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|---------------------------------------------------------------------------|
| GPU reserved memory   |  20480 KiB |  20480 KiB |  20480 KiB |      0 B   |
|       from large pool |  20480 KiB |  20480 KiB |  20480 KiB |      0 B   |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Non-releasable memory |  12667 KiB |  16573 KiB |  16573 KiB |   3906 KiB |
|       from large pool |  12667 KiB |  16573 KiB |  16573 KiB |   3906 KiB |
|       from small pool |      0 KiB |      0 KiB |      0 KiB |      0 KiB |
|---------------------------------------------------------------------------|
| Allocations           |       2    |       2    |       2    |       0    |
|       from large pool |       2    |       2    |       2    |       0    |
|       from small pool |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Active allocs         |       2    |       2    |       2    |       0    |
|       from large pool |       2    |       2    |       2    |       0    |
|       from small pool |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| GPU reserved segments |       1    |       1    |       1    |       0    |
|       from large pool |       1    |       1    |       1    |       0    |
|       from small pool |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       1    |       1    |       1    |       0    |
|       from large pool |       1    |       1    |       1    |       0    |
|       from small pool |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       0    |       0    |       0    |
|===========================================================================|
";

/// PyTorch's abbreviated summary verbatim, the same process after `del temp;
/// torch.cuda.empty_cache()`. Non-releasable "Tot Alloc" is 20480 KiB because freeing temp is one
/// net increase (see `free_block`'s Note [Netting]), not a decrease and an increase.
const ABBREVIATED: &str = "\
|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 0                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   3906 KiB |   7813 KiB |   7813 KiB |   3906 KiB |
|---------------------------------------------------------------------------|
| Active memory         |   3906 KiB |   7813 KiB |   7813 KiB |   3906 KiB |
|---------------------------------------------------------------------------|
| Requested memory      |   3906 KiB |   7812 KiB |   7812 KiB |   3906 KiB |
|---------------------------------------------------------------------------|
| GPU reserved memory   |  20480 KiB |  20480 KiB |  20480 KiB |      0 B   |
|---------------------------------------------------------------------------|
| Non-releasable memory |  16573 KiB |  16573 KiB |  20480 KiB |   3906 KiB |
|---------------------------------------------------------------------------|
| Allocations           |       1    |       2    |       2    |       1    |
|---------------------------------------------------------------------------|
| Active allocs         |       1    |       2    |       2    |       1    |
|---------------------------------------------------------------------------|
| GPU reserved segments |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       1    |       1    |       1    |       0    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       0    |       0    |       0    |       0    |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       0    |       0    |       0    |
|===========================================================================|
";

const TORCHLET_HEADER: &str =
    "|                 torchlet CUDA memory summary, device ID 0                 |";

/// PyTorch's text with its one PyTorch-named line as torchlet prints it.
fn as_torchlet(pytorch: &str) -> String {
    pytorch
        .lines()
        .map(|l| {
            if l.contains("PyTorch CUDA memory summary") {
                TORCHLET_HEADER
            } else {
                l
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn full_and_abbreviated_summaries_match_pytorch() {
    let a = CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default());
    let x = a.malloc(4_000_000, 0, None).unwrap();
    let temp = a.malloc(4_000_000, 0, None).unwrap();
    assert_eq!(a.memory_summary(false), as_torchlet(FULL));
    a.free(temp).unwrap();
    a.empty_cache();
    assert_eq!(a.memory_summary(true), as_torchlet(ABBREVIATED));
    a.free(x).unwrap();
}

#[test]
fn every_line_is_77_columns() {
    let a = CachingAllocator::new(0, SimulatedMemory::default(), AllocConfig::default());
    for text in [a.memory_summary(false), a.memory_summary(true)] {
        assert!(text.ends_with("|\n"));
        for line in text.lines() {
            assert_eq!(line.chars().count(), 77, "{line:?}");
        }
    }
}

#[test]
fn units_follow_the_all_row_and_step_at_768() {
    let mut stats =
        CachingAllocator::new(3, SimulatedMemory::default(), AllocConfig::default()).memory_stats();
    // 1 GiB allocated in all / large; small stays 0 but prints in the all row's unit.
    for key in [
        "allocated_bytes.all.current",
        "allocated_bytes.large_pool.current",
    ] {
        stats.insert(key.into(), 1 << 30);
    }
    stats.insert("allocated_bytes.all.peak".into(), 786431);
    stats.insert("allocation.all.current".into(), 750_000);
    stats.insert("allocation.all.peak".into(), 1_234_567_890);
    stats.insert("num_ooms".into(), 7);
    let text = memory_summary(&stats, 3, false);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1],
        "|                 torchlet CUDA memory summary, device ID 3                 |"
    );
    assert_eq!(
        lines[3],
        "|            CUDA OOMs: 7            |        cudaMalloc retries: 0         |"
    );
    assert_eq!(
        lines[7],
        "| Allocated memory      |   1024 MiB | 786431 B   |      0 B   |      0 B   |"
    );
    assert_eq!(
        lines[9],
        "|       from small pool |      0 MiB |      0 B   |      0 B   |      0 B   |"
    );
    assert_eq!(
        lines[27],
        "| Allocations           |     750 K  |    1234 M  |       0    |       0    |"
    );
}
