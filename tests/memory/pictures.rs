//! Memory pictures in a session: `plot_memory()` as an SVG chart (bands by variable, reserved line,
//! legend), `:memplot on` drawing the chart after every input, `:mem`'s sparkline, and the clear errors of
//! `plot_memory()` and `cuda::dump_snapshot()` that leave the session usable.
use crate::common;

use std::rc::Rc;

use torchlet_session::{CapturedOutput, OutputEvent, Picture, Session};

fn session() -> (Session, Rc<CapturedOutput>) {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<pictures>");
    // Each test starts with its own, empty history.
    ok(
        &mut s,
        "let gpu = #{device: \"cuda\"}; cuda::record_memory_history(()); cuda::empty_cache();",
    );
    (s, out)
}

fn ok(s: &mut Session, code: &str) {
    let outcome = s.execute(code);
    assert!(outcome.error.is_none(), "{code}: {:?}", outcome.error);
}

fn error(s: &mut Session, code: &str) -> String {
    let e = s.execute(code).error.expect("an error");
    format!("{}: {}", e.kind, e.message)
}

fn pictures(out: &CapturedOutput) -> Vec<Picture> {
    out.events()
        .into_iter()
        .filter_map(|e| match e {
            OutputEvent::Picture(p) => Some(p),
            _ => None,
        })
        .collect()
}

/// The text of every `<text>` element of an SVG document, which must parse as XML.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn plot_memory_stacks_variables_and_draws_reserved_and_segments() {
    let (_g, _a) = common::gpu();
    let (mut s, out) = session();
    ok(
        &mut s,
        "cuda::record_memory_history();\nlet weights = empty([1000, 1000], gpu);\nlet acts = empty([2000, 1000], gpu);\ndel acts;\nempty_cache();\nplot_memory();\ncuda::record_memory_history(());",
    );
    let shown = pictures(&out);
    assert_eq!(shown.len(), 1, "{:?}", out.events());
    let picture = &shown[0];
    assert!(
        picture.plain.contains("weights") && picture.plain.contains("acts"),
        "{}",
        picture.plain
    );
    let texts = svg_texts(&picture.svg);
    for legend in [
        "weights",
        "acts",
        "reserved",
        "segment created",
        "segment released",
    ] {
        assert!(
            texts.iter().any(|t| t == legend),
            "no legend {legend:?} in {texts:?}"
        );
    }
    let doc = roxmltree::Document::parse(&picture.svg).unwrap();
    let filled = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon") || n.has_tag_name("path"))
        .count();
    assert!(filled >= 2, "the bands are drawn as shapes: {filled}");
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert!(lines >= 1, "the reserved line is a polyline");
}

#[test]
fn plot_memory_says_how_to_record_history_and_when_nothing_happened() {
    let (_g, _a) = common::gpu();
    let (mut s, _out) = session();
    let off = error(&mut s, "plot_memory()");
    assert!(off.contains("cuda::record_memory_history()"), "{off}");
    ok(&mut s, "cuda::record_memory_history();");
    let idle = error(&mut s, "plot_memory()");
    assert!(idle.contains("no GPU memory activity"), "{idle}");
    let cpu = error(&mut s, "plot_memory(\"cpu\")");
    assert!(cpu.contains("give a cuda device"), "{cpu}");
    ok(
        &mut s,
        "let x = ones([2, 2]); cuda::record_memory_history(());",
    );
}

#[test]
fn dump_snapshot_errors_say_what_to_do_and_the_session_goes_on() {
    let (_g, _a) = common::gpu();
    let (mut s, _out) = session();
    let off = error(&mut s, "cuda::dump_snapshot(\"s.json\")");
    assert!(
        off.starts_with("RuntimeError") && off.contains("cuda::record_memory_history()"),
        "{off}"
    );
    ok(
        &mut s,
        "cuda::record_memory_history(); let x = empty([10], gpu);",
    );
    let bad = error(&mut s, "cuda::dump_snapshot(\"/no/such/dir/s.json\")");
    assert!(
        bad.starts_with("OSError") && bad.contains("cannot write /no/such/dir/s.json"),
        "{bad}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    ok(
        &mut s,
        &format!(
            "cuda::dump_snapshot({:?}); cuda::record_memory_history(());",
            path.to_str().unwrap()
        ),
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let alloc = doc["device_traces"][0]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "alloc")
        .cloned()
        .expect("an alloc event");
    assert_eq!(alloc["user_metadata"], "x");
    assert_eq!(alloc["frames"][0]["filename"], "<pictures>");
}

/// The polygons of an SVG chart that have an area: more than one distinct x among their points.
fn drawn_areas(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("polygon"))
        .filter(|n| {
            let xs: std::collections::BTreeSet<&str> = n
                .attribute("points")
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| p.split(',').next())
                .collect();
            xs.len() > 1
        })
        .count()
}

#[test]
fn memplot_draws_the_chart_in_the_running_input_after_every_input() {
    let (_g, _a) = common::gpu();
    let (mut s, out) = session();
    let on = s.run_command(":memplot on").unwrap();
    assert!(on.error.is_none(), "{:?}", on.error);
    ok(&mut s, "let a = empty([1000], gpu);");
    ok(&mut s, "let b = empty([1000], gpu);");
    let shown = pictures(&out);
    assert_eq!(shown.len(), 2, "{:?}", out.events());
    let id = shown[0].display_id.clone().expect("a display id");
    // Each in the output of the input that ran, none an update of an earlier cell's chart.
    assert!(!shown[0].update && !shown[1].update, "shown where it ran");
    assert_eq!(shown[1].display_id.as_deref(), Some(id.as_str()));
    // The first chart already shows `a`: one statement run is drawn one step wide.
    assert!(svg_texts(&shown[0].svg).iter().any(|t| t == "a"));
    assert!(drawn_areas(&shown[0].svg) > 0, "{}", shown[0].svg);
    assert!(svg_texts(&shown[1].svg).iter().any(|t| t == "b"));
    s.run_command(":memplot off").unwrap();
    out.clear();
    ok(
        &mut s,
        "let c = empty([1000], gpu); cuda::record_memory_history(());",
    );
    assert!(pictures(&out).is_empty());
    let mem = s.run_command(":mem").unwrap().value.unwrap().plain;
    let spark = mem.lines().last().unwrap();
    assert!(
        spark.starts_with("allocated after each of the last") && spark.contains("between inputs"),
        "{mem}"
    );
    assert!(spark.chars().any(|c| ('▁'..='█').contains(&c)), "{spark}");
}

#[test]
fn the_chart_scales_names_lists_and_shows_the_cell_on_its_axis() {
    let (_g, _a) = common::gpu();
    common::uses_gpu();
    let (mut s, out) = Session::captured("In[5]");
    ok(
        &mut s,
        "let gpu = #{device: \"cuda\"}; cuda::record_memory_history(()); cuda::empty_cache();",
    );
    ok(
        &mut s,
        "cuda::record_memory_history();\nlet xs = [];\nxs.push(empty([1000, 1000], gpu));\nxs.push(empty([1000, 1000], gpu));\nplot_memory();\ncuda::record_memory_history(());",
    );
    let shown = pictures(&out);
    let svg = &shown.last().expect("a chart").svg;
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    let root = doc.root_element();
    // It scales to the output area: a viewBox, no width in pixels.
    assert_eq!(root.attribute("viewBox"), Some("0 0 960 480"), "{svg}");
    assert_eq!(root.attribute("width"), Some("100%"), "{svg}");
    let texts = svg_texts(svg);
    assert!(
        texts.iter().any(|t| t == "xs"),
        "the list's tensors under its name: {texts:?}"
    );
    assert!(!texts.iter().any(|t| t == "(no variable)"), "{texts:?}");
    assert!(
        texts.iter().any(|t| t == "[5] L3"),
        "the cell and line on the axis: {texts:?}"
    );
}

#[test]
fn snapshot_frees_carry_the_freeing_statement_and_workspaces_say_what_they_are() {
    let (_g, _a) = common::gpu();
    let (mut s, _out) = session();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frees.json");
    ok(
        &mut s,
        &format!(
            "cuda::record_memory_history();
let temp = empty([1000], gpu);
let other = 1;
del temp;
let a = ones([64, 64], gpu);
let loss = a.matmul(a).sum();
cuda::dump_snapshot({:?}); cuda::record_memory_history(());",
            path.to_str().unwrap()
        ),
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let trace = doc["device_traces"][0].as_array().unwrap();
    let alloc = trace.iter().find(|e| e["action"] == "alloc").unwrap();
    let free = trace
        .iter()
        .find(|e| e["action"] == "free_requested" && e["addr"] == alloc["addr"])
        .expect("temp's free");
    assert_eq!(alloc["frames"][0]["line"], 2);
    assert_eq!(free["frames"][0]["line"], 4, "{free}");
    // The workspace the matmul took is no variable's, whatever its statement assigns.
    let workspaces = torchlet_core::device::blas_workspaces();
    let ws = workspaces
        .iter()
        .flat_map(|(_, w)| w)
        .next()
        .expect("a workspace");
    let labelled = |e: &serde_json::Value| {
        e["addr"] == ws.ptr
            && e["user_metadata"]
                .as_str()
                .is_some_and(|m| m.contains("cuBLAS workspace"))
    };
    let blocks = doc["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["blocks"].as_array().unwrap().clone());
    let block_labelled = blocks
        .filter(|b| b["address"] == ws.ptr && b["state"] == "active_allocated")
        .all(|b| {
            b["user_metadata"]
                .as_str()
                .is_some_and(|m| m.contains("cuBLAS workspace"))
        });
    assert!(block_labelled);
    let first_workspace = trace
        .iter()
        .any(|e| e["action"] == "alloc" && e["addr"] == ws.ptr);
    if first_workspace {
        assert!(
            trace.iter().any(labelled),
            "the workspace's alloc is labelled"
        );
    }
}
