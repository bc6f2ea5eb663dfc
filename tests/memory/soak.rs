//! Soak: long runs on the simulated GPU keep reserved memory, the process's resident memory and
//! the allocator's history flat (a few seconds even in a debug build); run with
//! `cargo test --test memory soak:: -- --nocapture` to see the curves' endpoints.
use crate::common;

use torchlet_session::Session;

/// The process's resident set size in bytes (Linux).
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Run `rounds` inputs of `code`, sampling (reserved, RSS, trace length) after each.
fn curve(s: &mut Session, code: &str, rounds: usize) -> Vec<(u64, u64, usize)> {
    let a = torchlet_core::device::cuda_allocator(0).unwrap();
    (0..rounds)
        .map(|_| {
            common::run(s, code);
            let trace = a.snapshot().device_traces.first().map_or(0, Vec::len);
            (a.memory_reserved(), rss(), trace)
        })
        .collect()
}

/// Flat: reserved and trace length equal from the second sample on; RSS within 8 MiB of it.
fn assert_flat(name: &str, samples: &[(u64, u64, usize)]) {
    let (first, last) = (samples[1], samples[samples.len() - 1]);
    println!(
        "{name}: reserved {} -> {} B, RSS {:.1} -> {:.1} MiB, history {} -> {} entries",
        first.0,
        last.0,
        first.1 as f64 / 1048576.0,
        last.1 as f64 / 1048576.0,
        first.2,
        last.2
    );
    assert_eq!(first.0, last.0, "{name}: reserved grew");
    assert_eq!(first.2, last.2, "{name}: history grew with recording off");
    assert!(last.1 <= first.1 + (8 << 20), "{name}: RSS grew");
}

#[test]
fn a_million_empty_and_del() {
    let (_guard, _) = common::gpu();
    let (mut s, _) = Session::captured("<soak>");
    let code = r#"for i in 0..10000 { let x = empty(1000, 1000, #{device: "cuda"}); del x; }"#;
    assert_flat("1e6 empty+del", &curve(&mut s, code, 100));
}

#[test]
fn ten_thousand_mlp_steps() {
    let (_guard, _) = common::gpu();
    let (mut s, _) = Session::captured("<soak>");
    common::run(
        &mut s,
        r#"let dev = #{device: "cuda"};
        let x = randn(256, 64, dev); let y = randn(256, 1, dev);
        let w1 = randn(64, 128, #{device: "cuda", requires_grad: true});
        let w2 = randn(128, 1, #{device: "cuda", requires_grad: true});"#,
    );
    let step = r#"for i in 0..100 {
        let loss = mse_loss(x.matmul(w1).relu().matmul(w2), y);
        loss.backward();
        no_grad { w1.sub_(w1.grad * 0.001); w2.sub_(w2.grad * 0.001); }
        w1.grad = (); w2.grad = ();
    }"#;
    assert_flat("1e4 MLP steps", &curve(&mut s, step, 100));
}
