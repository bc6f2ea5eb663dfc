//! Fuzzing the script runner: random tensor programs from a grammar (creation, ops, views, `del`,
//! grad blocks, device moves, `backward`, allocator settings), and random text run, completed at
//! every offset and asked for help. Nothing may panic, and once every variable is deleted the GPU
//! holds exactly what it held before.
//!
//! CI runs a short pass; a long one is
//! `TORCHLET_FUZZ_CASES=200000 cargo test --release --test memory fuzz_programs:: -- --nocapture`.
//! Every failure proptest finds is shrunk to a small program, and each one found so far is a case
//! in `regressions` below or a test of its own.
use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use torchlet_session::Session;

/// Variable names the programs use (a small pool, so statements meet each other's values).
const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

fn cases(default: u32) -> u32 {
    std::env::var("TORCHLET_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A runner of `cases` cases that keeps no failure file (each failure found is a regression below).
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn shape() -> impl Strategy<Value = String> {
    prop::collection::vec(0usize..4, 0..4).prop_map(|dims| {
        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        format!("[{}]", dims.join(", "))
    })
}

fn options() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["cpu", "cuda"]),
        prop::sample::select(vec!["float32", "float16", "bfloat16", "float64", "int64"]),
        any::<bool>(),
    )
        .prop_map(|(device, dtype, grad)| {
            let grad = grad && !dtype.starts_with("int");
            format!("#{{device: \"{device}\", dtype: \"{dtype}\", requires_grad: {grad}}}")
        })
}

/// One statement of a tensor program.
fn statement() -> impl Strategy<Value = String> {
    let name = || prop::sample::select(NAMES.to_vec());
    let dim = -3i64..3;
    let unary = prop::sample::select(vec![
        "relu()",
        "exp()",
        "sum()",
        "mean()",
        "t()",
        "clone()",
        "detach()",
        "contiguous()",
        "cuda()",
        "cpu()",
        "half()",
        "float()",
        "double()",
        "flatten()",
        "squeeze()",
        "abs()",
        "sqrt()",
        "neg()",
        "sigmoid()",
        "tanh()",
        "reshape([-1])",
        "pow(2)",
        "clamp(-1, 1)",
        "argmax()",
        "requires_grad_()",
        "item()",
        "tolist()",
        "shape",
        "stride()",
    ]);
    let with_dim = prop::sample::select(vec![
        "sum",
        "mean",
        "softmax",
        "log_softmax",
        "unsqueeze",
        "squeeze",
        "max",
        "min",
        "argmax",
    ]);
    let binary = prop::sample::select(vec!["+", "-", "*", "/"]);
    prop_oneof![
        (
            name(),
            prop::sample::select(vec!["randn", "zeros", "ones", "empty"]),
            shape(),
            options()
        )
            .prop_map(|(n, f, s, o)| format!("let {n} = {f}({s}, {o});")),
        (name(), name(), unary).prop_map(|(n, a, u)| format!("let {n} = {a}.{u};")),
        (name(), name(), with_dim, dim).prop_map(|(n, a, f, d)| format!("let {n} = {a}.{f}({d});")),
        (name(), name(), binary, name())
            .prop_map(|(n, a, op, b)| format!("let {n} = {a} {op} {b};")),
        (name(), name(), name()).prop_map(|(n, a, b)| format!("let {n} = {a}.matmul({b});")),
        (name(), name(), name()).prop_map(|(n, a, b)| format!("let {n} = mse_loss({a}, {b});")),
        (name(), name(), 0i64..3).prop_map(|(n, a, i)| format!("let {n} = {a}[{i}];")),
        (name(), name(), 0i64..2, 0i64..3)
            .prop_map(|(n, a, d, l)| format!("let {n} = {a}.narrow({d}, 0, {l});")),
        (name(), name()).prop_map(|(a, b)| format!("{a}.add_({b});")),
        name().prop_map(|a| format!("{a}.sum().backward();")),
        name().prop_map(|a| format!("{a}.grad = ();")),
        name().prop_map(|a| format!("let g = {a}.grad;")),
        (name(), name()).prop_map(|(n, a)| format!("no_grad {{ let {n} = {a} * 2; }}")),
        name().prop_map(|a| format!("del {a};")),
        Just("empty_cache();".to_string()),
        Just("let keep = [a, b];".to_string()),
        Just("del keep[0];".to_string()),
        prop::sample::select(vec![
            "cuda::set_allocator_settings(\"expandable_segments:True\");",
            "cuda::set_allocator_settings(\"expandable_segments:False\");",
            "cuda::set_allocator_settings(\"max_split_size_mb:20\");",
            "cuda::set_allocator_settings(\"garbage_collection_threshold:0.5\");",
        ])
        .prop_map(str::to_string),
    ]
}

/// Every name a program may bind, deleted (errors for unbound names are expected).
fn clean_up(s: &mut Session) {
    for name in NAMES.iter().chain(["g", "keep"].iter()) {
        s.execute(&format!("del {name};"));
    }
}

fn run_program(statements: &[String]) -> Result<(), TestCaseError> {
    let a = torchlet_core::device::cuda_allocator(0).unwrap();
    let (mut s, _) = Session::captured("<fuzz>");
    let before = a.memory_allocated();
    for statement in statements {
        s.execute(statement);
    }
    clean_up(&mut s);
    a.set_allocator_settings(
        "expandable_segments:False,max_split_size_mb:0,garbage_collection_threshold:0",
    )
    .ok();
    let after = a.memory_allocated();
    prop_assert_eq!(
        after,
        before,
        "memory left behind by:\n{}",
        statements.join("\n")
    );
    let alive = s.execute("1 + 1").value.map(|v| v.plain);
    prop_assert_eq!(alive.as_deref(), Some("2"));
    Ok(())
}

#[test]
fn random_tensor_programs_never_panic_or_leak() {
    let (_guard, a) = common::gpu();
    // The cuBLAS workspaces are the process's, made by the first matmul and backward.
    let (mut warm, _) = Session::captured("<warm>");
    warm.execute(r#"let w = ones(2, 2, #{device: "cuda", requires_grad: true}); w.matmul(w).sum().backward();"#);
    drop(warm);
    let _ = a;
    let mut runner = runner(cases(48));
    let programs = prop::collection::vec(statement(), 1..24);
    let outcome = runner.run(&programs, |p| run_program(&p));
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// Random text: any string, the language's punctuation, its keywords, and Python spellings mixed
/// with wide characters (the hints and completion slice the text they quote).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z_#{}()\\[\\];:.,=+*/<>!\"`$ 0-9\n-]{0,40}",
        "(del|let|no_grad|fn|__bind|__unshadow|__with_globals|if|for|x|\\.|=|;|\\{|\\}|\\(|\\)| ){0,16}",
        "(f|f'|f\"|'|\"|`|with|def|lambda|elif|import|x|:|\\[|\\]|\\{|\\}|\\(|\\)|//|#|₮|🕴|é|\n| ){0,16}",
        "(torch|\\.|cuda|x|zeros|\\(|:|\\?|help|₮|é|\"| ){0,12}",
    ]
}

#[test]
fn random_text_never_panics() {
    let (_guard, _) = common::gpu();
    let mut runner = runner(cases(256));
    let outcome = runner.run(&text(), |code| {
        let (mut s, _) = Session::captured("<fuzz>");
        s.execute(&code);
        let alive = s.execute("1 + 1").value.map(|v| v.plain);
        prop_assert_eq!(alive.as_deref(), Some("2"), "after {:?}", code);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// What a front end asks of a cell while it is typed: completion at every byte offset (inside
/// characters too), whether the cell is complete, and `name?` help. None of it may panic.
#[test]
fn random_text_completes_and_inspects_at_every_cursor() {
    let (_guard, _) = common::gpu();
    let mut runner = runner(cases(128));
    let (mut s, _) = Session::captured("<fuzz>");
    s.execute("let x = zeros(2, 3); fn f(a) { a }");
    let outcome = runner.run(&text(), |code| {
        for cursor in 0..=code.len() + 1 {
            let found = s.complete(&code, cursor);
            let _ = found.matches();
        }
        let _ = s.is_complete(&code);
        let _ = s.help_query(&code);
        let _ = s.help_query(&format!("{code}?"));
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// Programs the fuzzer found failing, each kept as it was minimised.
#[test]
fn regressions() {
    let (_guard, _) = common::gpu();
    let found: &[&[&str]] = &[
        // mse_loss of empty tensors wrote its 0-d result into a 0-byte block.
        &[
            "let a = randn([0], #{device: \"cpu\", dtype: \"float32\", requires_grad: false});",
            "let b = mse_loss(a, a);",
        ],
        // max(dim) of a 0-d tensor that requires grad indexed an empty list of dimensions.
        &[
            "let b = randn([], #{device: \"cpu\", dtype: \"float32\", requires_grad: true});",
            "let a = b.max(0);",
            "a.sum().backward();",
        ],
    ];
    for program in found {
        let statements: Vec<String> = program.iter().map(|s| s.to_string()).collect();
        run_program(&statements).unwrap_or_else(|e| panic!("{e}"));
    }
}
