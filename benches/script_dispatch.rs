//! What a script statement costs on top of the op it runs: tensor op dispatch through the Rhai
//! engine on a 10×10 CPU tensor, plain int arithmetic with an `if`, and `let t = empty(...); del t`
//! on the simulated GPU (a cache hit); the tensor cases also with provenance naming each
//! statement, as a session runs them, against the same without names.
use std::rc::Rc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use torchlet_session::{CapturedOutput, InterruptHandle};

/// Time `iters` runs of `body` inside one compiled script loop (the loop's own few tens of
/// nanoseconds per turn are included: a statement never runs without one).
fn per_iteration(setup: &str, body: &str, iters: u64) -> Duration {
    timed_loop(setup, body, iters, false)
}

/// [`per_iteration`], with provenance on when `named`: each allocating statement is named
/// `FILE:LINE:COL: text` and the name travels with its allocations, as in a session.
fn timed_loop(setup: &str, body: &str, iters: u64, named: bool) -> Duration {
    let state = torchlet_rhai::State::default();
    let engine = torchlet_rhai::new_engine(
        Rc::new(CapturedOutput::default()),
        InterruptHandle::default(),
        &state,
    );
    let mut scope = rhai::Scope::new();
    engine
        .run_with_scope(&mut scope, setup)
        .expect("setup runs");
    let timed = |code: String| {
        let ast = engine.compile_with_scope(&scope, &code).expect("compiles");
        // As a session runs it: with CPython's lifetimes for temporaries.
        let ast = torchlet_rhai::Lifetimes::new(&engine).rewrite(
            &engine,
            &ast,
            &rhai::AST::empty(),
            &[],
            false,
        );
        let mut scope = scope.clone();
        if named {
            torchlet_rhai::runtime::provenance::begin_input(&state, "<bench>", &code);
        }
        let start = Instant::now();
        engine.run_ast_with_scope(&mut scope, &ast).expect("runs");
        let elapsed = start.elapsed();
        torchlet_rhai::runtime::provenance::end_input(&state);
        elapsed
    };
    timed(format!("for i in 0..{iters} {{ {body} }}"))
}

fn dispatch(c: &mut Criterion) {
    torchlet_core::device::init(Some("16GiB")).expect("simulated GPU");
    let mut group = c.benchmark_group("script");
    group.bench_function("x * 2 on a 10x10 cpu tensor", |b| {
        b.iter_custom(|iters| per_iteration("let x = ones(10, 10);", "let y = x * 2;", iters))
    });
    // Plain numbers through Rhai's operators and an `if`: what Python's number semantics
    // (registered operators instead of Rhai's fast built-ins) and `bool()` conditions cost.
    group.bench_function("j += 1; if j > 0 { k += j % 3; } (ints)", |b| {
        b.iter_custom(|iters| {
            per_iteration(
                "let j = 0; let k = 0;",
                "j += 1; if j > 0 { k += j % 3; }",
                iters,
            )
        })
    });
    group.bench_function("let t = empty(1000000) on cuda; del t", |b| {
        b.iter_custom(|iters| {
            per_iteration(
                "let d = #{device: \"cuda\"}; let warm = empty(1000000, d); warm = ();",
                "let t = empty(1000000, d); del t;",
                iters,
            )
        })
    });
    group.bench_function("x * 2 on a 10x10 cpu tensor, with provenance", |b| {
        b.iter_custom(|iters| timed_loop("let x = ones(10, 10);", "let y = x * 2;", iters, true))
    });
    group.bench_function(
        "let t = empty(1000000) on cuda; del t, with provenance",
        |b| {
            b.iter_custom(|iters| {
                timed_loop(
                    "let d = #{device: \"cuda\"}; let warm = empty(1000000, d); warm = ();",
                    "let t = empty(1000000, d); del t;",
                    iters,
                    true,
                )
            })
        },
    );
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
