//! Leak warnings: a loop whose every iteration leaves more graph held, still held when its step
//! is over, is named once, with the variable that holds it and what to write instead; a loop
//! that frees what it makes, builds a model or data, or runs a forward pass that backward
//! releases later says nothing; and what is said is the same on every run.
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

/// The loss of one small forward pass, as a statement.
const LOSS: &str = "let loss = mse_loss(x.matmul(w).relu().matmul(v), y);";

/// The one warning `code` makes, after checking it names `line` and says `advice`.
fn one_warning(code: &str, line: usize, advice: &str) -> String {
    let err = stderr_of(code);
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("warning: line {line}: GPU memory grows by ")),
        "{err}"
    );
    assert!(err.contains(advice), "{err}");
    err
}

#[test]
fn a_list_of_losses_is_named_with_its_advice() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let losses = [];\nfor i in 0..6 {{\n    {LOSS}\n    losses.push(loss);\n}}"
    );
    one_warning(
        &code,
        7,
        "`losses` keeps each iteration's graph in a new item; keep a number (`loss.item()`)",
    );
}

#[test]
fn a_hidden_state_never_detached_is_named_with_its_advice() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let u = randn(64, 64, #{{device: \"cuda\", requires_grad: true}});
let h = zeros(512, 64, #{{device: \"cuda\"}});
for t in 0..6 {{
    h = (x.matmul(w) + h.matmul(u)).tanh();
}}"
    );
    one_warning(
        &code,
        8,
        "`h` carries the graph of every earlier iteration; detach it once per iteration (`h = h.detach()`)",
    );
}

#[test]
fn a_cache_keyed_by_step_is_named_with_its_advice() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let cache = #{{}};\nfor step in 0..6 {{\n    {LOSS}\n    cache[`step${{step}}`] = loss;\n}}"
    );
    one_warning(
        &code,
        7,
        "`cache` keeps each iteration's graph under a new key",
    );
}

#[test]
fn closures_that_capture_a_graph_are_named_with_their_advice() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}fn report(loss) {{ || loss.item() }}
let on_done = [];
for step in 0..6 {{
    {LOSS}
    on_done.push(report(loss));
}}"
    );
    one_warning(
        &code,
        8,
        "`on_done` keeps functions that captured each iteration's graph",
    );
}

#[test]
fn building_layers_and_data_is_no_leak() {
    let (_guard, _) = common::gpu();
    let code = "let layers = [];
for l in 0..6 { layers.push(#{w: randn(256, 256, #{device: \"cuda\", requires_grad: true})}); }
let data = [];
for i in 0..6 { data.push(randn(1000, #{device: \"cuda\"})); }
let by_name = #{};
for i in 0..6 { by_name[`batch${i}`] = randn(1000, #{device: \"cuda\"}); }";
    assert_eq!(stderr_of(code), "");
}

/// Six layers and a forward pass over them, which grows the graph on every layer.
const LAYERS: &str = "let layers = [];
for l in 0..6 { layers.push(#{w: randn(64, 64, #{device: \"cuda\", requires_grad: true})}); }
";

#[test]
fn a_forward_pass_over_layers_that_backward_releases_is_no_leak() {
    let (_guard, _) = common::gpu();
    let forward = "let h = x.matmul(w);\n    for p in layers { h = h.matmul(p.w).relu(); }";
    let in_steps = format!(
        "{SETUP}{LAYERS}for step in 0..4 {{\n    {forward}\n    h.sum().backward();\n    w.grad = ();\n}}"
    );
    assert_eq!(stderr_of(&in_steps), "");
    let once = format!("{SETUP}{LAYERS}{forward}\nh.sum().backward();");
    assert_eq!(stderr_of(&once), "");
}

#[test]
fn a_sum_of_losses_released_after_its_loop_is_no_leak() {
    let (_guard, _) = common::gpu();
    let code = format!(
        "{SETUP}let total = 0.0;\nfor i in 0..6 {{\n    {LOSS}\n    total = total + loss;\n}}\ntotal = 0.0;"
    );
    assert_eq!(stderr_of(&code), "");
}

#[test]
fn the_warning_is_the_same_on_every_run() {
    let (_guard, _) = common::gpu();
    // `h`, `x` and the layer outputs all reach the same graph: which one is named must not
    // depend on a hash map's order.
    let code = format!(
        "{SETUP}{LAYERS}let a = x.matmul(w);\nfor p in layers {{\n    let h = a.matmul(p.w);\n    a = h.relu();\n    let q = a * 2.0;\n}}"
    );
    let first = stderr_of(&code);
    assert!(first.contains("warning: line 9: "), "{first}");
    for _ in 0..19 {
        assert_eq!(stderr_of(&code), first);
    }
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
