//! Values die when CPython would drop them: chain temporaries, bare statements, rebinding, `del`.
//!
//! Each test reads the simulated GPU's allocator: its peak for how many temporaries were alive at
//! once, and its history for the order in which blocks came back.
use crate::common;

use common::figures::X;
use torchlet_alloc::{HistoryMode, HistoryOptions, TraceAction};
use torchlet_session::Session;

/// 1024×1024 float32: one 4 MiB block.
const MIB4: u64 = 4 << 20;

/// Requested sizes of the blocks freed while `code` ran, in order.
fn frees_during(session: &mut Session, code: &str) -> Vec<u64> {
    let a = torchlet_core::device::cuda_allocator(0).unwrap();
    a.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 100_000,
        clear_history: true,
    });
    common::run(session, code);
    let trace = a.snapshot().device_traces[0].clone();
    a.record_memory_history(HistoryOptions {
        enabled: None,
        max_entries: 1,
        clear_history: true,
    });
    trace
        .iter()
        .filter(|e| e.action == TraceAction::FreeCompleted)
        .map(|e| e.size)
        .collect()
}

#[test]
fn a_method_chain_frees_each_temporary_once_the_next_call_returns() {
    let (_g, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = randn(1024, 1024).cuda();");
    let base = a.memory_allocated();
    a.reset_peak_memory_stats();
    common::run(&mut s, "let y = x.exp().sin().cos().relu();");
    // x, and at most the input and the output of one call: two 4 MiB temporaries, not four.
    assert_eq!(a.max_memory_allocated() - base, 2 * MIB4);
    assert_eq!(a.memory_allocated() - base, MIB4, "only y stays");
}

#[test]
fn nested_calls_and_chains_on_call_results_free_as_they_go() {
    let (_g, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = randn(1024, 1024).cuda();");
    let base = a.memory_allocated();
    a.reset_peak_memory_stats();
    common::run(&mut s, "let y = (x * 2).exp().sqrt().relu();");
    assert_eq!(a.max_memory_allocated() - base, 2 * MIB4);
    assert_eq!(a.memory_allocated() - base, MIB4);
}

#[test]
fn a_bare_expression_statement_is_freed_before_the_next_statement() {
    let (_g, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = randn(1024, 1024).cuda(); let seen = ();");
    let base = a.memory_allocated();
    common::run(&mut s, "x.exp(); seen = memory_allocated(); 0");
    let seen = s.scope().get_value::<i64>("seen").unwrap() as u64;
    assert_eq!(
        seen, base,
        "x.exp()'s value is gone when the next statement runs"
    );
}

#[test]
fn a_statement_inside_a_block_is_freed_at_once_too() {
    let (_g, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = randn(1024, 1024).cuda(); let seen = ();");
    let base = a.memory_allocated();
    common::run(
        &mut s,
        "for i in 0..1 { x.exp(); seen = memory_allocated(); } 0",
    );
    assert_eq!(s.scope().get_value::<i64>("seen").unwrap() as u64, base);
    common::run(&mut s, "no_grad { x.exp(); seen = memory_allocated(); }; 0");
    assert_eq!(s.scope().get_value::<i64>("seen").unwrap() as u64, base);
    // The block's last statement is a temporary too when nobody uses the block's value.
    common::run(&mut s, "no_grad { x.exp(); } seen = memory_allocated(); 0");
    assert_eq!(s.scope().get_value::<i64>("seen").unwrap() as u64, base);
}

#[test]
fn the_last_value_of_an_input_is_kept_for_the_echo() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(&mut s, "let x = ones(2).cuda();");
    let outcome = s.execute("x * 2");
    assert_eq!(
        outcome.value.expect("an echo").plain,
        "tensor([2., 2.], device='cuda:0')"
    );
}

#[test]
fn del_of_an_array_frees_its_items_last_to_first() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let ts = [empty(100).cuda(), empty(200).cuda(), empty(300).cuda()];",
    );
    assert_eq!(frees_during(&mut s, "del ts;"), vec![1200, 800, 400]);
}

#[test]
fn rebinding_an_array_frees_its_items_last_to_first() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let ts = [empty(100).cuda(), empty(200).cuda(), empty(300).cuda()];",
    );
    assert_eq!(frees_during(&mut s, "ts = [];"), vec![1200, 800, 400]);
}

#[test]
fn a_removed_item_is_freed_by_its_statement() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let ts = [empty(100).cuda(), empty(200).cuda(), empty(300).cuda()];",
    );
    assert_eq!(frees_during(&mut s, "ts.remove(1); 0"), vec![800]);
}

#[test]
fn chains_on_variables_still_change_them_in_place() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let ts = []; ts.push(1); ts.push(2); let w = ones(2, #{requires_grad: true});",
    );
    common::run(
        &mut s,
        "(w * w).sum().backward(); w.grad.zero_(); let g = w.grad.sum().item();",
    );
    assert_eq!(s.scope().get_value::<rhai::Array>("ts").unwrap().len(), 2);
    assert_eq!(s.scope().get_value::<f64>("g").unwrap(), 0.0);
}

#[test]
fn a_missing_method_on_a_temporary_is_still_an_attribute_error() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    let e = s
        .execute("let x = ones(2);\nx.exp().frobnicate()")
        .error
        .unwrap();
    assert_eq!(e.kind, "AttributeError");
    assert_eq!(e.message, "'Tensor' object has no attribute 'frobnicate'");
    assert_eq!(e.line, Some(2));
}

#[test]
fn let_of_a_bound_name_at_top_level_frees_the_old_value() {
    let (_g, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    let base = a.memory_allocated();
    common::run(&mut s, "let x = randn(1000, 1000).cuda();");
    common::run(&mut s, "let x = randn(1000, 1000).cuda();"); // a notebook cell run twice
    assert_eq!(a.memory_allocated() - base, X);
    common::run(&mut s, "let y = x * 2; let y = x * 3;");
    assert_eq!(a.memory_allocated() - base, 2 * X);
    common::run(&mut s, "del x; del y;");
    assert_eq!(a.memory_allocated(), base);
}

#[test]
fn let_after_del_and_let_of_a_constant_name_still_work() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let x = 1; del x; let x = 2; const c = 1; let c = 3; let r = x + c;",
    );
    assert_eq!(s.scope().get_value::<i64>("r").unwrap(), 5);
}

#[test]
fn every_binary_operator_frees_its_left_operand_first_as_cpython_does() {
    let (_g, _a) = common::gpu();
    for row in torchlet_core::tensor::BINARY_METHODS {
        let (mut s, _) = Session::captured("<test>");
        common::run(
            &mut s,
            "let a = randn(2, 100).cuda(); let b = randn(100).cuda();",
        );
        // Two temporaries, 800 and 400 bytes: the left one goes first.
        let code = format!("let y = (a * 1) {} (b * 1);", row.operator);
        assert_eq!(frees_during(&mut s, &code), vec![800, 400], "{code}");
    }
}
