//! `torchlet run --snapshot`: the MLP training script's snapshot, as JSON and as a pickle, is what
//! PyTorch's memory viewer needs (final segments that the trace replays to, statements as frames,
//! variables as user metadata), Python's pickle loads it, and the viewer opens it in headless
//! Chromium with no error and shapes drawn in every view.
use crate::common::repo;
use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

const MLP: &str = "scripts/05_training_loop.rhai";

/// Run the MLP script with `--snapshot out` on a simulated 80 GiB GPU (the real one when asked).
fn snapshot_of_mlp(out: &Path) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_torchlet"));
    if std::env::var("TORCHLET_TEST_DEVICE").as_deref() != Ok("cuda") {
        cmd.arg("--simulate-cuda=80GiB");
    }
    let run = cmd
        .args(["run", "--snapshot"])
        .arg(out)
        .arg(repo().join(MLP))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("for PyTorch's memory viewer"), "{stderr}");
}

fn key(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} is no integer in {v}"))
}

/// Replays the trace from empty (history was on from the start) and compares with the final segments.
fn assert_trace_replays_to_segments(doc: &Value) {
    let (mut segments, mut blocks) = (BTreeSet::new(), BTreeSet::new());
    for e in doc["device_traces"][0].as_array().unwrap() {
        let segment = || (key(e, "addr"), key(e, "size"));
        match e["action"].as_str().unwrap() {
            "segment_alloc" => assert!(segments.insert(segment()), "{e}"),
            "segment_free" => assert!(segments.remove(&segment()), "{e}"),
            "alloc" => assert!(blocks.insert(key(e, "addr")), "{e}"),
            "free_completed" => assert!(blocks.remove(&key(e, "addr")), "{e}"),
            _ => {}
        }
    }
    let final_segments: BTreeSet<(u64, u64)> = doc["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (key(s, "address"), key(s, "total_size")))
        .collect();
    assert_eq!(segments, final_segments);
    let live: BTreeSet<u64> = doc["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["blocks"].as_array().unwrap())
        .filter(|b| b["state"] == "active_allocated")
        .map(|b| key(b, "address"))
        .collect();
    assert_eq!(blocks, live);
}

/// Every event names its statement as a frame of the script; assignments name their variable.
fn assert_events_name_statements_and_variables(doc: &Value) {
    let trace = doc["device_traces"][0].as_array().unwrap();
    assert!(trace.len() > 100, "{} events", trace.len());
    // cuBLAS takes its 32 MiB workspaces outside any statement's request: the only untagged blocks.
    let workspace = |e: &Value| e["size"] == 32 << 20 && e["frames"] == serde_json::json!([]);
    for e in trace.iter().filter(|e| !workspace(e)) {
        let frame = &e["frames"][0];
        assert!(frame["filename"].as_str().unwrap().ends_with(MLP), "{e}");
        assert!(frame["line"].as_u64().unwrap() > 0, "{e}");
        assert!(!frame["name"].as_str().unwrap().is_empty(), "{e}");
    }
    let named = |variable: &str, statement: &str| {
        trace.iter().any(|e| {
            e["action"] == "alloc"
                && e["user_metadata"] == variable
                && e["frames"][0]["name"]
                    .as_str()
                    .unwrap()
                    .starts_with(statement)
        })
    };
    assert!(named("x", "let x = randn(512, 2, dev)"));
    assert!(named("loss", "let loss = mse_loss("));
    // Segments come in address order, which on a real GPU need not put a tensor's segment first.
    let live: Vec<&Value> = doc["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["blocks"].as_array().unwrap())
        .collect();
    assert!(
        live.iter().any(|b| b["user_metadata"].is_string()),
        "{live:?}"
    );
}

#[test]
fn the_mlp_snapshot_replays_and_names_statements_and_variables() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mlp.json");
    snapshot_of_mlp(&out);
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_trace_replays_to_segments(&doc);
    assert_events_name_statements_and_variables(&doc);
    assert!(doc["allocator_settings"].is_object());
}

#[test]
fn the_pickle_is_protocol_3_and_python_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mlp.pickle");
    snapshot_of_mlp(&out);
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(
        &bytes[..2],
        b"\x80\x03",
        "a protocol-3 pickle starts with PROTO 3"
    );
    let check = "import pickle, sys; d = pickle.load(open(sys.argv[1], 'rb')); \
                 t = d['device_traces'][0]; \
                 assert isinstance(d['segments'], list) and d['segments'], d.keys(); \
                 assert {'frames', 'action', 'addr', 'size'} <= set(t[0]), t[0]; \
                 assert any(e.get('user_metadata') == 'x' for e in t); \
                 print(len(t))";
    let python = Command::new("python3")
        .args(["-c", check])
        .arg(&out)
        .output()
        .expect("python3 is needed to load the pickle");
    let stdout = String::from_utf8_lossy(&python.stdout);
    assert!(
        python.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&python.stderr)
    );
    assert!(stdout.trim().parse::<usize>().unwrap() > 100, "{stdout}");
}

/// Whether the browser check can run; `None` with a reason to skip, a panic with how to install.
fn browser_tools() -> Option<()> {
    let missing: Vec<&str> = [("node", "nodejs npm"), ("chromium", "chromium")]
        .iter()
        .filter(|(tool, _)| Command::new(tool).arg("--version").output().is_err())
        .map(|(tool, _)| *tool)
        .collect();
    if missing.is_empty() {
        return Some(());
    }
    if std::env::var("TORCHLET_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("skipped: TORCHLET_SKIP_BROWSER=1 and {missing:?} missing");
        return None;
    }
    panic!(
        "the viewer check needs {missing:?} on the PATH: `apt-get install -y chromium nodejs npm` \
         (Debian; scripts/test.sh installs them), or set TORCHLET_SKIP_BROWSER=1 to skip it"
    );
}

/// `python3 -m http.server` over `dir` on a free port; killed on drop.
struct Server(Child, u16);

impl Server {
    fn start(dir: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 -m http.server");
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "http.server did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Server(child, port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_viewer_opens_the_mlp_snapshot_in_every_view() {
    if browser_tools().is_none() {
        return;
    }
    let harness = repo().join("tests/memory_viz");
    let setup = Command::new("bash")
        .arg(harness.join("setup.sh"))
        .status()
        .unwrap();
    assert!(setup.success(), "tests/memory_viz/setup.sh (npm ci) failed");
    let dir = tempfile::tempdir().unwrap();
    for file in std::fs::read_dir(harness.join("viewer")).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, dir.path().join(file.file_name().unwrap())).unwrap();
    }
    snapshot_of_mlp(&dir.path().join("mlp.json"));
    let server = Server::start(dir.path());
    let check = Command::new("node")
        .arg(harness.join("viewer/check.mjs"))
        .arg(format!("http://127.0.0.1:{}", server.1))
        .arg("mlp.json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    let stderr = String::from_utf8_lossy(&check.stderr);
    let views: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(views.len(), 4, "{stdout}{stderr}");
    for view in &views {
        assert_eq!(view["errors"], serde_json::json!([]), "{view}");
        let shapes = key(view, "polygons") + key(view, "rects") + key(view, "pres");
        assert!(shapes > 0, "nothing drawn: {view}");
    }
    assert!(check.status.success(), "{stdout}{stderr}");
}
