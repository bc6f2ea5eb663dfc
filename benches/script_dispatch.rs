//! What a script statement costs on top of the op it runs: tensor op dispatch through the Rhai
//! engine on a 10×10 CPU tensor, plain int arithmetic with an `if`, and `let t = empty(...); del t`
//! on the simulated GPU (a cache hit); the tensor cases also with provenance naming each
//! statement, as a session runs them, against the same without names; and a script function's
//! statement with and without the mark that names it inside the function.
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
    let code = format!("for i in 0..{iters} {{ {body} }}");
    timed_code(setup, &code, named, false)
}

/// `iters` calls of a script function whose statement is `x * 2` on a 10×10 CPU tensor, with
/// provenance; with `marked`, the function's statements are marked as a session marks them
/// (`torchlet_rhai::source::fn_marks`), so each also names itself and the call that led there.
fn timed_calls(iters: u64, marked: bool) -> Duration {
    let code = format!(
        "fn step(x) {{\n    let y = x * 2;\n    y\n}}\nfor i in 0..{iters} {{ let z = step(x); }}"
    );
    timed_code("let x = ones(10, 10);", &code, true, marked)
}

/// The time `code` takes after `setup`, as a session runs it (CPython's lifetimes for
/// temporaries), with statement names when `named` and function marks when `marked`.
fn timed_code(setup: &str, code: &str, named: bool, marked: bool) -> Duration {
    use torchlet_rhai::source::fn_marks;
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
    let mut ast = engine.compile_with_scope(&scope, code).expect("compiles");
    let spans = fn_marks::function_spans(&ast);
    if let Some(text) = marked
        .then(|| fn_marks::marked(&ast, code, 0, &spans))
        .flatten()
    {
        let with_marks = engine
            .compile_with_scope(&scope, &text)
            .expect("marks compile");
        ast = rhai::AST::new(ast.statements().to_vec(), with_marks.shared_lib().clone());
    }
    let ast = torchlet_rhai::Lifetimes::new(&engine).rewrite(
        &engine,
        &ast,
        &rhai::AST::empty(),
        &[],
        false,
    );
    if named {
        torchlet_rhai::runtime::provenance::begin_input(&state, "<bench>", code, spans);
    }
    let start = Instant::now();
    engine.run_ast_with_scope(&mut scope, &ast).expect("runs");
    let elapsed = start.elapsed();
    torchlet_rhai::runtime::provenance::end_input(&state);
    elapsed
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
    group.bench_function("a script function's x * 2, with provenance", |b| {
        b.iter_custom(|iters| timed_calls(iters, false))
    });
    group.bench_function(
        "a script function's x * 2, with provenance and its statement marked",
        |b| b.iter_custom(|iters| timed_calls(iters, true)),
    );
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
