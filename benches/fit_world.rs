//! `torchlet fit --world-size N` of a Llama 3 8B FSDP2 training step, shapes only: the ranks it
//! simulates at world sizes 8 (every rank) and 1024 (ranks 0, 1 and 1023) (target ≤ 5 s at 1024).
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

/// One `fit` of `models/train.py llama3-8b … parallel=fsdp` as a world of `world`; its wall time.
fn fit(world: usize) -> Duration {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_torchlet"))
        .current_dir(repo)
        .args([
            "fit",
            "models/train.py",
            "llama3-8b",
            "batch=1",
            "seq=4096",
            "parallel=fsdp",
        ])
        .args(["--gpu", "H100-80GB", "--world-size", &world.to_string()])
        .output()
        .expect("torchlet fit runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    started.elapsed()
}

fn world_sizes(c: &mut Criterion) {
    let mut group = c.benchmark_group("fit_fsdp2_llama3_8b");
    group.sample_size(10);
    for world in [8, 1024] {
        group.bench_function(format!("world_size_{world}"), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| fit(world)).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, world_sizes);
criterion_main!(benches);
