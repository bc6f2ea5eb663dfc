//! How long `memory_holders` and `explain_free` take with 10,000 live tensors on the simulated
//! GPU (the target: under 10 ms each).
use criterion::{criterion_group, criterion_main, Criterion};
use torchlet_session::Session;

/// A session holding `x` and 10,000 small tensors in `ts`, half of them views of one another.
fn crowded_session() -> Session {
    let (mut s, _) = Session::captured("<bench>");
    let outcome = s.execute(
        "x = randn(1000, 1000).cuda();
         ts = [];
         for i in 0..5000 { let t = empty(64, #{device: \"cuda\"}); ts.push(t); ts.push(t[0..8]); }",
    );
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    s
}

fn holders(c: &mut Criterion) {
    torchlet_core::device::init(Some("16GiB")).expect("simulated GPU");
    let s = crowded_session();
    assert!(s.memory_holders(0).len() > 5000);
    let mut group = c.benchmark_group("holders, 10000 live tensors");
    group.bench_function("memory_holders", |b| b.iter(|| s.memory_holders(0)));
    group.bench_function("explain_free(x)", |b| {
        b.iter(|| s.explain_free("x", 0).expect("x exists"))
    });
    group.finish();
}

criterion_group!(benches, holders);
criterion_main!(benches);
