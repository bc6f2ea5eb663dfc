//! Start-up of the REPL to its first prompt, on a pseudo-terminal, without a GPU (target ≤ 50 ms).
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};

/// Spawn the REPL and wait for `>>> `; the time from spawn to prompt.
fn time_to_prompt(home: &std::path::Path) -> Duration {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_torchlet"));
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("TERM", "xterm")
        .env_remove("TORCHLET_SIMULATE_CUDA");
    let started = Instant::now();
    let mut p = expectrl::Session::spawn(cmd).expect("spawn torchlet in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    p.expect(">>> ").expect("the first prompt");
    let elapsed = started.elapsed();
    p.send("\x04").expect("Ctrl-D");
    let _ = p.expect(expectrl::Eof);
    elapsed
}

fn startup(c: &mut Criterion) {
    let home = tempfile::tempdir().expect("temp dir");
    let mut group = c.benchmark_group("repl");
    group.sample_size(20);
    group.bench_function("start_to_first_prompt", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| time_to_prompt(home.path())).sum())
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);
