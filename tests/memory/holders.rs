//! Who holds GPU memory (`memory_holders`, `:holders`) and what freeing a variable would do
//! (`explain_free`, `:why`): every prediction is checked by doing it.
use crate::common;

use torchlet_session::explain_free::Way;
use torchlet_session::Session;

fn run(s: &mut Session, code: &str) -> String {
    let outcome = s.execute(code);
    if let Some(e) = outcome.error {
        panic!("{code}: {}", e.located());
    }
    outcome.value.map(|v| v.plain).unwrap_or_default()
}

/// The article's four ways for `x`, and the graph and view cases, each a setup and a variable.
const SCENARIOS: &[(&str, &str)] = &[
    // Method 1: x alone in its segment.
    ("let x = randn(1000, 1000).cuda();", "x"),
    // Method 2: y shares x's segment, so empty_cache cannot release it after del x.
    ("let x = randn(1000, 1000).cuda(); let y = randn(1000, 1000).cuda();", "x"),
    // A view keeps x's block alive.
    ("let x = randn(1000, 1000).cuda(); let v = x[0];", "x"),
    // The graph of loss saves x.
    (
        "let w = randn(1000, 1000, #{device: \"cuda\", requires_grad: true}); \
         let x = randn(1000, 1000, #{device: \"cuda\"}); let loss = (x * w).sum();",
        "x",
    ),
    // A list of tensors, and a tensor with a gradient.
    (
        "let keep = [randn(300, 300).cuda(), randn(2000, 2000).cuda()];",
        "keep",
    ),
    (
        "let p = randn(1000, 1000, #{device: \"cuda\", requires_grad: true}); (p * 2).sum().backward();",
        "p",
    ),
];

fn fresh(setup: &str) -> Session {
    let a = torchlet_core::device::cuda_allocator(0).unwrap();
    a.empty_cache();
    let (mut s, _) = Session::captured("<holders>");
    run(&mut s, "manual_seed(0);");
    run(&mut s, setup);
    s
}

#[test]
fn explain_free_predicts_what_each_way_does() {
    let (_guard, a) = common::gpu();
    for (setup, name) in SCENARIOS {
        let s = fresh(setup);
        let before = (a.memory_allocated(), a.memory_reserved(), a.memory_stats());
        let ways: Vec<Way> = s.explain_free(name, 0).expect("a variable").1;
        let after = (a.memory_allocated(), a.memory_reserved(), a.memory_stats());
        assert_eq!(before, after, "explain_free changed nothing");
        drop(s);
        assert_eq!(ways.len(), 4);
        for way in &ways {
            let mut s = fresh(setup);
            let (alloc0, reserved0) = (a.memory_allocated() as i64, a.memory_reserved() as i64);
            if !(way.code.contains(".cpu()") && *name == "keep") {
                run(&mut s, &format!("{};", way.code));
            } else {
                run(&mut s, &format!("del {name};"));
            }
            let done = (
                a.memory_allocated() as i64 - alloc0,
                a.memory_reserved() as i64 - reserved0,
            );
            assert_eq!(
                done,
                (way.allocated, way.reserved),
                "{setup} / {}: {}",
                way.code,
                way.why
            );
        }
    }
}

fn why(setup: &str, name: &str, code: &str) -> Way {
    let s = fresh(setup);
    let ways = s.explain_free(name, 0).unwrap().1;
    ways.into_iter().find(|w| w.code == code).unwrap()
}

#[test]
fn the_article_methods_get_pytorchs_numbers_and_a_reason() {
    let (_guard, _) = common::gpu();
    let del = why(SCENARIOS[0].0, "x", "del x");
    assert_eq!((del.allocated, del.reserved), (-4000256, 0));
    assert_eq!(
        del.why,
        "4000256 B that only `x` holds go back to the cache; the cache keeps the memory reserved"
    );
    let both = why(SCENARIOS[0].0, "x", "del x; empty_cache()");
    assert_eq!((both.allocated, both.reserved), (-4000256, -20971520));
    assert_eq!(
        both.why,
        "releases 1 segment (20971520 B) that holds no live block"
    );
    let shared = why(SCENARIOS[1].0, "x", "del x; empty_cache()");
    assert_eq!((shared.allocated, shared.reserved), (-4000256, 0));
    assert_eq!(
        shared.why,
        "every segment holds a live block: nothing is released; x's segment also holds `y` \
         (4000256 B), so empty_cache cannot release it"
    );
    let saved = why(SCENARIOS[3].0, "x", "del x");
    assert_eq!(saved.allocated, 0);
    assert!(
        saved
            .why
            .starts_with("the graph of `loss` also saves x (MulBackward0, 4000256 B)"),
        "{}",
        saved.why
    );
    let view = why(SCENARIOS[2].0, "x", "del x");
    assert!(
        view.why
            .starts_with("`v` also holds x's memory (4000256 B)"),
        "{}",
        view.why
    );
}

#[test]
fn memory_holders_names_variables_items_gradients_and_graphs() {
    let (_guard, _) = common::gpu();
    let mut s = fresh(
        "let w = randn(100, 100, #{device: \"cuda\", requires_grad: true});
         let keep = [randn(10, 10).cuda()];
         let state = #{m: randn(20, 20).cuda()};
         let h = (w * 2).exp();
         (w * 3).sum().backward();",
    );
    let rows = run(
        &mut s,
        "let out = \"\"; for b in memory_holders() { out += `${b.size}: ${b.holders}\n`; } out",
    );
    for expected in [
        "40448: [\"w\", \"a leaf of `h`'s graph\"]",
        "40448: [\"h\", \"saved by ExpBackward0 of `h`\"]",
        "40448: [\"w.grad\", \"a leaf's .grad in `h`'s graph\"]",
        "512: [\"keep[0]\"]",
        "2048: [\"state.m\"]",
    ] {
        assert!(rows.contains(expected), "{expected} in {rows}");
    }
}

#[test]
fn the_commands_print_tables() {
    let (_guard, _) = common::gpu();
    let mut s = fresh("let x = randn(1000, 1000).cuda(); let y = x[1];");
    let holders = s.run_command(":holders").unwrap().value.unwrap();
    assert!(
        holders
            .plain
            .starts_with("cuda:0: 1 live block, 4000256 B allocated"),
        "{}",
        holders.plain
    );
    assert!(holders.plain.contains("x, y"), "{}", holders.plain);
    assert!(holders.html.unwrap().contains("<td>x, y</td>"));
    let why = s.run_command(":why x").unwrap().value.unwrap();
    assert!(
        why.plain.starts_with("what freeing `x` would do now:"),
        "{}",
        why.plain
    );
    assert!(why.plain.contains("del x; empty_cache()"), "{}", why.plain);
    let missing = s.run_command(":why nope").unwrap().error.unwrap();
    assert!(
        missing.message.contains("'nope' is not defined"),
        "{}",
        missing.message
    );
    let echoed = run(&mut s, "explain_free(x)");
    assert_eq!(echoed, why.plain);
}

#[test]
fn empty_cache_report_names_what_pins_each_segment() {
    let (_guard, _) = common::gpu();
    let mut s = fresh(SCENARIOS[1].0);
    let report = run(&mut s, "del x; empty_cache(); empty_cache_report()");
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(
        lines[0],
        "cuda:0: empty_cache keeps 1 segment (20971520 B), each pinned by live blocks:"
    );
    assert!(
        lines[1].ends_with("(20971520 B): `y` (4000256 B)"),
        "{report}"
    );
    assert_eq!(
        run(&mut s, "del y; empty_cache(); empty_cache_report()"),
        "cuda:0: empty_cache leaves no segment: nothing is pinned"
    );
}

#[test]
fn the_trace_says_what_empty_cache_could_not_release() {
    let (_guard, _) = common::gpu();
    let output = std::rc::Rc::new(torchlet_session::CapturedOutput::default());
    let mut s = Session::new(Default::default(), output.clone());
    run(
        &mut s,
        "let x = randn(1000, 1000).cuda(); let y = randn(1000, 1000).cuda();",
    );
    s.run_command(":trace on").unwrap();
    output.clear();
    run(&mut s, "del x; empty_cache();");
    let text = output.stdout_text();
    assert!(
        text.contains("[trace] cuda:0: empty_cache keeps 1 segment (20971520 B)"),
        "{text}"
    );
    assert!(text.contains("`y` (4000256 B)"), "{text}");
}

#[test]
fn every_allocation_names_the_statement_that_made_it() {
    let (_guard, a) = common::gpu();
    a.record_memory_history(torchlet_alloc::HistoryOptions {
        enabled: Some(torchlet_alloc::HistoryMode::All),
        max_entries: 1000,
        clear_history: true,
    });
    let mut s = fresh("let x = randn(1000, 1000).cuda();\nfor i in 0..2 {\n    let t = x * 2;\n}");
    let trace = a.snapshot().device_traces[0].clone();
    a.record_memory_history(torchlet_alloc::HistoryOptions {
        enabled: None,
        max_entries: 1,
        clear_history: true,
    });
    let tags: Vec<String> = trace
        .iter()
        .filter(|e| e.action == torchlet_alloc::TraceAction::Alloc)
        .filter_map(|e| e.tag.as_deref().map(str::to_string))
        .collect();
    assert_eq!(
        tags,
        [
            "<holders>:1:1: let x = randn(1000, 1000).cuda();",
            "<holders>:3:9: let t = x * 2;",
            "<holders>:3:9: let t = x * 2;",
        ]
    );
    let made = run(&mut s, "memory_holders().map(|b| b.made_by)");
    assert!(made.contains("<holders>:3:9: let t = x * 2;"), "{made}");
}

/// A module's parameters in a map, a nested model, and an Adam that has taken a step.
const CONTAINERS: &str = "manual_seed(0);
let l1 = nn::linear_params(256, 256, #{device: \"cuda\"});
let model = #{blocks: [#{fc: nn::linear_params(128, 128, #{device: \"cuda\"})}]};
let w = randn(512, 512, #{device: \"cuda\", requires_grad: true});
let opt = optim::Adam([w]);
(w * 2).sum().backward();
opt.step();";

#[test]
fn explanations_reach_attributes_items_and_optimizer_state() {
    let (_guard, _) = common::gpu();
    let mut s = fresh(CONTAINERS);
    for (path, bytes) in [
        ("l1.weight", 262144),
        ("model.blocks[0].fc.weight", 65536),
        ("opt.state[w].exp_avg", 1048576),
    ] {
        let shown = run(&mut s, &format!("explain_free({path})"));
        assert!(
            shown.starts_with(&format!("what freeing `{path}` would do now:")),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("{bytes} B that only `{path}` holds")),
            "{shown}"
        );
        let why = s.run_command(&format!(":why {path}")).unwrap();
        assert!(why.error.is_none(), "{:?}", why.error);
        assert_eq!(
            why.value.unwrap().plain,
            shown,
            ":why {path} says what explain_free says"
        );
    }
    let vars = s.run_command(":vars").unwrap().value.unwrap().plain;
    for path in [
        "l1.weight",
        "l1.bias",
        "model.blocks[0].fc.weight",
        "opt.state[w].exp_avg_sq",
    ] {
        assert!(
            vars.lines().any(|l| l.starts_with(path)),
            "{path} in\n{vars}"
        );
    }
    let holders = s.run_command(":holders").unwrap().value.unwrap().plain;
    assert!(holders.contains("opt.state[w].exp_avg"), "{holders}");
    let missing = s
        .execute("explain_free(l1.nothing)")
        .error
        .expect("no such member");
    assert!(!missing.message.is_empty());
    let expr = s.execute("explain_free(w + 1)").error.expect("not a path");
    assert!(
        expr.message.contains("a variable or a path"),
        "{}",
        expr.message
    );
}

#[test]
fn containers_and_optimizers_print_as_pytorch_prints_them() {
    let (_guard, _) = common::gpu();
    let mut s = fresh(CONTAINERS);
    for code in [
        "l1",
        "[w, w]",
        "#{w: w, opt: opt}",
        "opt",
        "opt.state",
        "model",
    ] {
        let shown = run(&mut s, code);
        assert!(!shown.contains("::"), "{code} shows a Rust type: {shown}");
        assert!(
            !shown.contains("Tensor"),
            "{code} shows a type name: {shown}"
        );
    }
    assert!(run(&mut s, "opt").starts_with("Adam (\nParameter Group 0\n"));
    assert!(run(&mut s, "opt.state").starts_with("defaultdict(<class 'dict'>, {tensor([["));
    assert!(run(&mut s, "l1").starts_with("#{\"bias\": tensor(["));
}

#[test]
fn memory_holders_echoes_as_the_holders_table_and_stays_a_list_of_maps() {
    let (_guard, _) = common::gpu();
    let mut s = fresh("let x = randn(1000, 1000).cuda();\nlet y = x * 2;");
    let table = run(&mut s, "memory_holders()");
    assert!(
        table.starts_with("cuda:0: 2 live blocks, 8000512 B allocated"),
        "{table}"
    );
    assert!(table.contains("held by"), "{table}");
    assert!(
        table.contains("made by <holders>:2:1: let y = x * 2;"),
        "{table}"
    );
    assert!(!table.contains("#{"), "{table}");
    // The value is still the maps: a list made from it echoes as one.
    let sizes = run(&mut s, "memory_holders().map(|b| b.size)");
    assert_eq!(sizes, "[4000256, 4000256]");
    let names = run(&mut s, "let h = memory_holders(); h.map(|b| b.holders[0])");
    assert!(
        names.contains("\"x\"") && names.contains("\"y\""),
        "{names}"
    );
}
