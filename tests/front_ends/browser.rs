//! JupyterLab in headless chromium with the torchlet kernel: Run All, aborted cells, the article's numbers, the variables panel, highlighting.
//!
//! `tests/browser/setup.sh` makes `.venv-browser` (JupyterLab) and installs playwright-core;
//! `drive.mjs` drives Debian's chromium and records what the page shows; this file judges it.
//! Screenshots land in `target/browser/`. Without chromium or node the test fails saying how to
//! install them, unless TORCHLET_SKIP_BROWSER=1.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

#[path = "../browser/harness.rs"]
mod harness;

use crate::common::repo;

/// Where the screenshots and results.json go: `target/browser`, beside the test's build.
fn out_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_torchlet"));
    exe.parent()
        .and_then(Path::parent)
        .map_or_else(|| repo().join("target"), Path::to_path_buf)
        .join("browser")
}

/// The kernelspec `torchlet` with a simulated 16 GiB GPU, the notebooks, and quiet lab settings.
fn prepare(dir: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_torchlet"))
        .args(["kernel", "install", "--prefix"])
        .arg(dir)
        .args(["--display-name", "torchlet (simulated GPU)"])
        .args(["--env", "TORCHLET_SIMULATE_CUDA=16GiB"])
        .env_remove("TORCHLET_SIMULATE_CUDA")
        .stdout(Stdio::null())
        .status()
        .expect("run torchlet kernel install");
    assert!(status.success(), "torchlet kernel install failed");
    let notebooks = dir.join("root");
    std::fs::create_dir_all(&notebooks).unwrap();
    for source in [
        "tests/browser/run_all.ipynb",
        "tests/jupyter/article.ipynb",
        "tests/jupyter/article_python.ipynb",
    ] {
        let from = repo().join(source);
        std::fs::copy(&from, notebooks.join(from.file_name().unwrap())).unwrap();
    }
    // Every cell in the DOM (no windowing), and no news or update toasts over the notebook.
    let settings = [
        ("notebook-extension/tracker", r#"{"windowingMode": "none"}"#),
        (
            "apputils-extension/notification",
            r#"{"fetchNews": "false", "checkForUpdates": false}"#,
        ),
    ];
    for (name, json) in settings {
        let path = dir.join(format!("settings/@jupyterlab/{name}.jupyterlab-settings"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, json).unwrap();
    }
}

#[test]
fn jupyterlab_runs_the_notebooks_in_chromium() {
    let Some(tools) = harness::tools() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    harness::setup(dir.path());
    prepare(dir.path());
    let results = {
        let lab = harness::Lab::start(dir.path());
        harness::drive(&lab, &tools, &out_dir(), dir.path())
    };
    println!("screenshots in {}", out_dir().display());
    let mut failures = Vec::new();
    let steps = [
        "runAllChecks",
        "article",
        "variablesPanel",
        "highlighting",
        "pythonArticle",
    ];
    for step in steps {
        if let Some(why) = results[step]["failed"].as_str() {
            failures.push(format!("{step} failed in the browser:\n{why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    run_all_checks(&results["runAllChecks"]);
    article(&results["article"]);
    variables_panel(&results["variablesPanel"]);
    highlighting(&results["highlighting"]);
    python_article(&results["pythonArticle"]);
}

/// The cell's outputs of one MIME type, as text.
fn outputs<'a>(cell: &'a Value, mime: &str) -> Vec<&'a str> {
    cell["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["mime"] == mime)
        .filter_map(|o| o["text"].as_str())
        .collect()
}

fn numbered(prompt: &Value) -> bool {
    let p = prompt.as_str().unwrap_or("");
    p.starts_with('[') && p.ends_with("]:") && p[1..p.len() - 2].parse::<u32>().is_ok()
}

/// Issue 20's checks on run_all.ipynb.
fn run_all_checks(r: &Value) {
    let cells = r["afterRunAll"].as_array().expect("cells after Run All");
    let failing = r["failing"].as_u64().unwrap() as usize;
    let rerun = r["rerun"].as_u64().unwrap() as usize;
    let shown = |i: usize| format!("cell {i}: {}", cells[i]);
    for (i, cell) in cells.iter().enumerate().take(failing + 1) {
        assert!(numbered(&cell["prompt"]), "ran, so numbered: {}", shown(i));
    }
    let error = outputs(&cells[failing], "application/vnd.jupyter.stderr").join("");
    assert!(
        error.contains("RuntimeError: The size of tensor a (2) must match"),
        "the failure is shown: {}",
        shown(failing)
    );
    // (1) and (2): every cell queued behind the failure was aborted: no output, prompt [ ]:.
    for (i, cell) in cells.iter().enumerate().skip(failing + 1) {
        assert_eq!(
            cell["prompt"],
            "[ ]:",
            "aborted cells keep [ ]: {}",
            shown(i)
        );
        assert_eq!(cell["outputs"], Value::Array(vec![]), "{}", shown(i));
    }
    // (3): x = randn(1000, 1000).cuda() twice in Run All, then twice alone: 4000256 B each time.
    for cell in [
        &cells[rerun],
        &cells[rerun + 1],
        &r["rerunOnce"],
        &r["rerunTwice"],
    ] {
        assert_eq!(outputs(cell, "text/plain"), ["4000256"], "{cell}");
    }
    assert_ne!(r["rerunOnce"]["prompt"], r["rerunTwice"]["prompt"]);
    // (5): a grad-mode block, then `[…]` on the next line, without `;`.
    let no_grad = find(cells, "no_grad {");
    assert_eq!(
        outputs(no_grad, "text/plain"),
        ["[false, [3]]"],
        "{no_grad}"
    );
    // (8): every line printed before the reply, and the value.
    let printed = find(cells, "print(i)");
    let expected: String = (0..50).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        outputs(printed, "application/vnd.jupyter.stdout").join(""),
        expected
    );
    assert_eq!(outputs(printed, "text/plain"), ["printed 50 lines"]);
    // (4): %vars's HTML table has the tensor columns.
    let vars = find(cells, "%vars");
    let headers: Vec<&str> = vars["outputs"][0]["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for column in ["shape", "dtype", "device", "bytes", "storage"] {
        assert!(headers.contains(&column), "%vars lacks {column}: {vars}");
    }
    // The cell behind the failure, run alone afterwards: nothing aborted had run.
    assert_eq!(
        outputs(&r["probeAlone"], "text/plain"),
        ["0"],
        "{}",
        r["probeAlone"]
    );
}

/// The code cell whose source contains `text`.
fn find<'a>(cells: &'a [Value], text: &str) -> &'a Value {
    cells
        .iter()
        .find(|c| c["source"].as_str().is_some_and(|s| s.contains(text)))
        .unwrap_or_else(|| panic!("no cell with {text}"))
}

/// Every measuring cell of the article's notebook shows PyTorch's numbers (tests/data/torch-h200.json).
/// The article notebook `name`'s cells beside what the browser showed: every referenced step's
/// output is PyTorch's number from tests/data/torch-h200.json (`python` spells booleans `False`).
fn article_steps(name: &str, shown: &[Value], python: bool) {
    let read = |path: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(repo().join(path)).unwrap()).unwrap()
    };
    let notebook = read(name);
    let reference = read("tests/data/torch-h200.json");
    let code: Vec<&Value> = notebook["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cell_type"] == "code")
        .collect();
    assert_eq!(shown.len(), code.len());
    let mut checked = 0;
    for (cell, seen) in code.iter().zip(shown) {
        assert!(numbered(&seen["prompt"]), "{seen}");
        let Some([method, step]) = cell["metadata"]["torchlet"]["reference"]
            .as_array()
            .map(|r| [&r[0], &r[1]])
        else {
            continue;
        };
        let value = &reference[method.as_str().unwrap()][step.as_str().unwrap()];
        let expected = match (value.get("allocated"), value.as_bool()) {
            (Some(allocated), _) => format!("[{allocated}, {}]", value["reserved"]),
            (None, Some(b)) if python => if b { "True" } else { "False" }.to_string(),
            _ => value.to_string(),
        };
        assert_eq!(outputs(seen, "text/plain"), [expected.as_str()], "{step}");
        checked += 1;
    }
    assert_eq!(checked, 11, "every step of the four methods is checked");
}

fn article(r: &Value) {
    let shown = r["cells"].as_array().expect("article cells");
    article_steps("tests/jupyter/article.ipynb", shown, false);
    let memory = shown
        .iter()
        .find(|c| c["source"] == "%mem")
        .expect("the %mem cell");
    let html = outputs(memory, "text/html").join("");
    assert!(html.contains("cuda:0"), "%mem shows the device: {memory}");
    inline_plot(&r["inlinePlot"]);
}

/// The same four methods in Python, run by the torchlet (Python) kernel in JupyterLab: PyTorch's
/// numbers, from the kernel the notebook's toolbar names.
fn python_article(r: &Value) {
    let shown = r["cells"].as_array().expect("Python article cells");
    article_steps("tests/jupyter/article_python.ipynb", shown, true);
    let kernel = r["kernel"].as_str().unwrap_or_default();
    assert!(
        kernel.ends_with("Python"),
        "the torchlet (Python) kernel ran it: {kernel}"
    );
}

/// The article's last cell, `plot_memory()`, shows its SVG as a picture of a useful size.
fn inline_plot(plot: &Value) {
    assert_eq!(plot["found"], true, "an image/svg+xml output: {plot}");
    assert_eq!(plot["rendered"], true, "the browser drew it: {plot}");
    let width = plot["width"].as_u64().unwrap_or(0);
    assert!(width >= 400, "a readable width: {plot}");
    // At 1280×800 with the sidebar open, none of it (the newest statements) is cut off.
    assert_eq!(plot["cut"], 0, "the chart fits the output area: {plot}");
}

/// The Variables panel lists x with its shape, dtype and device; its rich view draws its block in its segment.
fn variables_panel(r: &Value) {
    let rows = r["rows"].as_array().expect("variables rows");
    let x = rows
        .iter()
        .find(|row| row["name"] == "x")
        .unwrap_or_else(|| panic!("x is listed: {r}"));
    let detail = x["detail"].as_str().unwrap_or("");
    for part in ["[1000, 1000]", "float32", "cuda:0", "3.81 MiB"] {
        assert!(detail.contains(part), "x's row shows {part}: {x}");
    }
    // The size leads, and the panel's default width shows it.
    assert!(detail.starts_with("3.81 MiB"), "{x}");
    assert_eq!(x["sizeVisible"], true, "x's size is on screen: {x}");
    assert!(
        rows.iter().any(|row| row["name"] == "ran_after_error"),
        "{r}"
    );
    let rich = &r["rich"];
    assert_eq!(rich["own"], 1, "x's block is marked once: {rich}");
    assert!(
        rich["blocks"].as_u64().unwrap_or(0) >= 2,
        "the segment's other blocks: {rich}"
    );
    let text = rich["text"].as_str().unwrap_or("");
    assert!(text.contains("block of 3.81 MiB at offset"), "{text}");
    assert!(text.contains("20.00 MiB large segment"), "{text}");
}

/// After `#{device: "cuda", …}` the cell is not one colour, and backtick strings are strings.
fn highlighting(r: &Value) {
    let lines: Vec<Vec<(&str, &str)>> = r["lines"]
        .as_array()
        .expect("highlighted lines")
        .iter()
        .map(|line| {
            let runs = line.as_array().into_iter().flatten();
            runs.map(|t| (t["text"].as_str().unwrap(), t["color"].as_str().unwrap()))
                .collect()
        })
        .collect();
    let color = |line: usize, text: &str| -> &str {
        let found = lines[line].iter().find(|(t, _)| t.contains(text));
        found
            .unwrap_or_else(|| panic!("no {text} on line {line}: {r}"))
            .1
    };
    let string = color(0, "\"cuda\"");
    // JavaScript's template strings have a string colour of their own, as they should.
    let plain = color(0, ";");
    assert_ne!(
        color(1, "`device"),
        plain,
        "a backtick string is coloured: {r}"
    );
    assert_ne!(color(1, "`device"), color(1, "msg"), "{r}");
    assert_ne!(
        color(1, "let"),
        string,
        "the line after the map is not one colour: {r}"
    );
    assert_ne!(color(0, "true"), string, "{r}");
    let later: std::collections::HashSet<&str> =
        lines[1..].iter().flatten().map(|(_, c)| *c).collect();
    assert!(
        later.len() >= 3,
        "the lines after `#{{` have several colours: {r}"
    );
}
