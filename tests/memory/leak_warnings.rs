//! Leak warnings: a loop whose every iteration leaves more GPU memory is named once, with the
//! variable that grows and why; a loop that frees what it makes says nothing.
use crate::common;

use std::rc::Rc;

use torchlet_session::{CapturedOutput, Session, SessionOptions};

fn stderr_of(code: &str) -> String {
    let output = Rc::new(CapturedOutput::default());
    let options = SessionOptions {
        source_name: Some("<leak>".into()),
        ..Default::default()
    };
    let mut s = Session::new(options, output.clone());
    let outcome = s.execute(code);
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    output.stderr_text()
}

const SETUP: &str = r#"manual_seed(0);
let x = randn(512, 2, #{device: "cuda"});
let y = randn(512, 1, #{device: "cuda"});
let w = randn(2, 64, #{device: "cuda", requires_grad: true});
let v = randn(64, 1, #{device: "cuda", requires_grad: true});
"#;

#[test]
fn summing_losses_as_tensors_is_named_with_its_cause() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let total = 0.0;
for i in 0..6 {{
    let loss = mse_loss(x.matmul(w).relu().matmul(v), y);
    total = total + loss;
}}"
    );
    let err = stderr_of(&code);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.starts_with("warning: line 7: GPU memory grows by "),
        "{err}"
    );
    assert!(
        err.contains("`total` holds each iteration's graph"),
        "{err}"
    );
}

#[test]
fn a_list_that_keeps_a_tensor_per_iteration_is_named() {
    let (_guard, _) = common::gpu();
    let code = "let keep = [];\nfor i in 0..5 { keep.push(randn(1000, #{device: \"cuda\"})); }";
    let err = stderr_of(code);
    assert_eq!(
        err.trim(),
        "warning: line 2: GPU memory grows by 4096 B (4.00 KiB) on every iteration of this loop: \
         `keep` keeps more of it on every pass"
    );
}

#[test]
fn a_training_loop_that_frees_its_graph_is_quiet() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let total = 0.0;
for i in 0..8 {{
    let loss = mse_loss(x.matmul(w).relu().matmul(v), y);
    loss.backward();
    total += loss.item();
    w.grad = (); v.grad = ();
}}"
    );
    assert_eq!(stderr_of(&code), "");
}
