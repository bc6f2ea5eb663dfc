//! torchlet's allocator sees PyTorch's requests in PyTorch's order: every program in `tests/parity/`
//! gives, event by event, the history PyTorch recorded for its Python twin on an H200.
//!
//! Each program runs in a fresh process (this test binary started again with `--exact
//! parity::run_one_program`), as its twin was recorded: a fresh allocator, no cuBLAS workspace yet. The
//! child records torchlet's history and its checkpoints as JSON; the parent compares them with
//! `tests/data/torch_traces/NAME.json` and, on the first difference, prints both sides' events
//! around it with the line of each program that caused them.
use crate::common;
use common::repo;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use serde_json::{json, Value};
use torchlet_alloc::{HistoryMode, HistoryOptions, TraceAction};
use torchlet_session::{CapturedOutput, Session, SessionOptions};

/// Where the child finds its program and writes its record.
const PROGRAM_ENV: &str = "TORCHLET_PARITY_PROGRAM";
const RECORD_ENV: &str = "TORCHLET_PARITY_RECORD";

/// How many events either side of the first difference a failure shows.
const CONTEXT: usize = 6;

/// On a real GPU the driver picks segment addresses, and with them which of two equal free blocks
/// a request reuses; PyTorch's process and torchlet's make different other device allocations, so
/// they get different addresses. The statistics of split free blocks (`inactive_split*`) are
/// therefore compared on the simulated GPU only, whose addresses rise as the driver's do.
const PLACEMENT_STATS: &str = "inactive_split";

use common::parity_known::{KNOWN, PLACEMENT_UNREPRODUCED};

pub(crate) fn traces_dir() -> PathBuf {
    repo().join("tests/data/torch_traces")
}

macro_rules! parity {
    ($($name:ident),* $(,)?) => {
        /// Every program of the corpus (recorded or waiting to be), so that none is left unchecked.
        const PROGRAMS: &[&str] = &[$(stringify!($name)),*];
        $(#[test] fn $name() { check(stringify!($name)); })*
    };
}

parity!(
    activations,
    allocator_sizes,
    article_del,
    article_del_empty_cache,
    article_empty_cache,
    article_no_grad,
    autocast_bf16,
    autograd_ops,
    bare_statements,
    batched_matmul,
    chains,
    checkpointing,
    comparisons,
    compound_assign,
    creation,
    cross_entropy_accum,
    elementwise,
    gpt4,
    gpt_block,
    grad_accumulation,
    half_roundtrip,
    index_ops,
    inplace_activations,
    inplace_no_grad,
    linear_layer_norm,
    loss_total_pitfall,
    matmul_variants,
    mlp3_adamw,
    mlp_mse_accum,
    mlp_sgd,
    mlp_varlen_adam,
    optim_adam,
    optim_adamw,
    optim_adamw_single,
    optim_sgd,
    python_scoping,
    reductions,
    shape_ops,
    soak_varlen,
    softmax_dims,
    tensor_arrays,
    transformer_block,
    views_and_copies,
    zero_grad_modes,
);

#[test]
fn every_recorded_trace_has_a_test() {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(traces_dir()).expect("tests/data/torch_traces exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if name.starts_with("py_") {
                // Python-only programs have no Rhai twin; parity_python.rs checks them.
                continue;
            }
            if !PROGRAMS.contains(&name.as_str()) {
                missing.push(name);
            }
            let twin = repo().join("tests/parity").join(format!(
                "{}.rhai",
                path.file_stem().unwrap().to_string_lossy()
            ));
            assert!(
                twin.exists(),
                "{} has no torchlet twin {}",
                path.display(),
                twin.display()
            );
        }
    }
    assert!(
        missing.is_empty(),
        "add these to parity!(…) in tests/memory/parity.rs: {missing:?}"
    );
}

#[test]
fn every_pair_has_a_test() {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(repo().join("tests/parity")).expect("tests/parity exists") {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let twin = path.with_extension("py");
        if path.extension().is_some_and(|e| e == "rhai")
            && twin.exists()
            && !PROGRAMS.contains(&name.as_str())
        {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "add these pairs to parity!(…) in tests/memory/parity.rs: {missing:?}"
    );
}

/// Run `name.rhai` in a fresh process and compare its events and checkpoints with PyTorch's.
fn check(name: &str) {
    let trace = traces_dir().join(format!("{name}.json"));
    if !trace.exists() {
        // Run it anyway, so a pair is known to run before its trace is recorded.
        run_in_fresh_process(name);
        panic!(
            "{name}: no PyTorch trace recorded yet, so nothing was compared: tests/data/torch_traces/{name}.json \
             is missing. Record it on the H200 with `python3 tests/parity/record.py {name}` \
             (tests/parity/README.md says how) and commit it."
        );
    }
    let torch: Value = read_json(&trace);
    let ours = run_in_fresh_process(name);
    let program = repo().join("tests/parity").join(format!("{name}.rhai"));
    let rhai_lines: Vec<String> = std::fs::read_to_string(&program)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let known = KNOWN.iter().find(|(program, ..)| *program == name);
    let first_difference = compare_events(name, &torch, &ours, &rhai_lines, known.is_some());
    match (known, first_difference) {
        (Some(&(_, at, why)), Some(i)) => {
            assert_eq!(i, at, "{name}: the known difference ({why}) moved")
        }
        (Some(&(_, _, why)), None) => {
            panic!("{name} now matches PyTorch: remove it from KNOWN ({why})")
        }
        _ => {}
    }
    compare_checkpoints(name, &torch, &ours, first_difference);
    if !common::real_gpu() {
        compare_segments(name, &torch, &ours, first_difference);
    }
}

/// The statistics no choice of block changes: how many requests there were and the bytes asked.
const PLACEMENT_FREE: &[&str] = &[
    "allocation.",
    "active.",
    "requested_bytes.",
    "num_alloc_retries",
    "num_ooms",
    "oversize_allocations.",
];

/// One checkpoint's segments as (pool, size, blocks), each pool's in address order, without the
/// addresses: blocks of different pools never compete, so only the order inside a pool counts.
fn layout(checkpoint: &Value) -> Option<Vec<(String, u64, Value)>> {
    let segments = checkpoint.get("segments")?.as_array()?;
    let mut layout: Vec<(String, u64, Value)> = segments
        .iter()
        .map(|s| {
            let pool = s["pool"].as_str().unwrap_or("?").to_string();
            (
                pool,
                s["total_size"].as_u64().unwrap_or(0),
                s["blocks"].clone(),
            )
        })
        .collect();
    // A stable sort keeps the address order inside each pool.
    layout.sort_by(|a, b| a.0.cmp(&b.0));
    Some(layout)
}

/// Where PyTorch's trace keeps each checkpoint's segments (`record.py --addrs`), torchlet's must
/// be the same, block for block in address order: proof that each request took the same block.
fn compare_segments(name: &str, torch: &Value, ours: &Value, until: Option<usize>) {
    let theirs = torch["checkpoints"].as_array().expect("torch checkpoints");
    let mine = ours["checkpoints"]
        .as_array()
        .expect("torchlet checkpoints");
    let mut first_difference = None;
    for (t, m) in theirs.iter().zip(mine) {
        if until.is_some_and(|i| t["events"].as_u64().unwrap_or(0) as usize > i) {
            break;
        }
        let (Some(t_layout), Some(m_layout)) = (layout(t), layout(m)) else {
            continue;
        };
        if t_layout != m_layout {
            let show = |l: &[(String, u64, Value)]| -> String {
                l.iter()
                    .map(|(pool, size, blocks)| format!("  {pool:<5} {size:>10} {blocks}\n"))
                    .collect()
            };
            first_difference = Some(format!(
                "{name}: the segments at checkpoint '{}' differ (each pool's in address order)\nPyTorch:\n{}torchlet:\n{}",
                t["label"].as_str().unwrap_or(""),
                show(&t_layout),
                show(&m_layout)
            ));
            break;
        }
    }
    let unreproduced = PLACEMENT_UNREPRODUCED.iter().any(|(p, ..)| *p == name);
    if let (false, Some(message)) = (unreproduced, first_difference) {
        panic!("{message}");
    }
}

pub(crate) fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn run_in_fresh_process(name: &str) -> Value {
    let program = repo().join("tests/parity").join(format!("{name}.rhai"));
    let record = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "parity::run_one_program",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROGRAM_ENV, &program)
        .env(RECORD_ENV, record.path())
        .env_remove("TORCHLET_CUDA_ALLOC_CONF")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .output()
        .expect("the test binary starts again");
    assert!(
        out.status.success(),
        "{name}.rhai failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    read_json(record.path())
}

/// The child: run one program with history on, write what happened.
#[test]
#[ignore = "started by the parity tests, one fresh process per program"]
fn run_one_program() {
    let (Ok(program), Ok(record)) = (std::env::var(PROGRAM_ENV), std::env::var(RECORD_ENV)) else {
        // Run by hand (`--include-ignored`): it is an entry point of the parity tests, not a test.
        println!("run_one_program runs one parity program for the parity tests; nothing to run");
        return;
    };
    let (program, record) = (PathBuf::from(program), PathBuf::from(record));
    common::uses_gpu();
    let allocator = torchlet_core::device::cuda_allocator(0).expect("cuda:0");
    allocator.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 10_000_000,
        clear_history: true,
    });
    let events_so_far = {
        let allocator = allocator.clone();
        move || kept_events(&allocator.snapshot().device_traces[0]).len()
    };

    let lines: Rc<RefCell<Vec<(usize, usize)>>> = Rc::default();
    let checkpoints: Rc<RefCell<Vec<Value>>> = Rc::default();
    let options = SessionOptions {
        source_name: Some(program.display().to_string()),
        mark_lines: true,
    };
    let output = Rc::new(CapturedOutput::default());
    let mut session = Session::new(options, output.clone());
    {
        let lines = lines.clone();
        let count = events_so_far.clone();
        torchlet_rhai::runtime::lifetimes::register_line_hook(session.engine_mut(), move |line| {
            lines.borrow_mut().push((count(), line))
        });
    }
    {
        let checkpoints = checkpoints.clone();
        let lines = lines.clone();
        let allocator = allocator.clone();
        session
            .engine_mut()
            .register_fn("checkpoint", move |label: &str| {
                let line = lines.borrow().last().map(|&(_, line)| line);
                checkpoints.borrow_mut().push(json!({
                    "label": label,
                    "line": line,
                    "events": events_so_far(),
                    "memory_allocated": allocator.memory_allocated(),
                    "memory_reserved": allocator.memory_reserved(),
                    "memory_stats": allocator.memory_stats(),
                    "segments": segments(&allocator.snapshot()),
                }));
            });
    }
    let code = std::fs::read_to_string(&program).expect("the program exists");
    let outcome = session.execute(&code);
    if let Some(error) = outcome.error {
        panic!("{}\n{}", error.located(), output.stdout_text());
    }

    let trace = allocator.snapshot().device_traces[0].clone();
    let lines = lines.borrow();
    let kept = kept_events(&trace);
    let streams = stream_ordinals(&kept);
    let events: Vec<Value> = kept
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            // The line that ran last before this event was recorded.
            let line = lines
                .iter()
                .take_while(|&&(count, _)| count <= i)
                .last()
                .map(|&(_, l)| l);
            json!({"action": e.action.name(), "size": e.size, "line": line, "addr": e.addr, "stream": streams[i]})
        })
        .collect();
    let record_json = json!({"events": events, "checkpoints": *checkpoints.borrow()});
    std::fs::write(&record, record_json.to_string()).expect("the record is written");
}

/// Device 0's segments in address order, as `harness.segments()` records PyTorch's: address,
/// size, pool and each block as `[size, state code]`.
fn segments(snapshot: &torchlet_alloc::Snapshot) -> Value {
    let code = |state: &str| {
        match state {
            "active_allocated" => "a",
            "inactive" => "i",
            "active_pending_free" => "p",
            other => other,
        }
        .to_string()
    };
    let mut segments: Vec<&torchlet_alloc::SegmentInfo> =
        snapshot.segments.iter().filter(|s| s.device == 0).collect();
    segments.sort_by_key(|s| s.address);
    segments
        .iter()
        .map(|s| {
            let blocks: Vec<Value> = s
                .blocks
                .iter()
                .map(|b| json!([b.size, code(b.state)]))
                .collect();
            json!({"address": s.address, "total_size": s.total_size, "pool": s.segment_type, "blocks": blocks})
        })
        .collect()
}

/// The events the comparison sees: what PyTorch's recorder keeps.
pub(crate) fn kept_events(
    trace: &[torchlet_alloc::TraceEntry],
) -> Vec<&torchlet_alloc::TraceEntry> {
    trace
        .iter()
        .filter(|e| !matches!(e.action, TraceAction::FreeRequested | TraceAction::Snapshot))
        .collect()
}

/// What an event is compared by: its action, its size and its stream's ordinal (the order the
/// stream first appeared in the trace, 0 for the default stream and where the record has none).
fn event_key(e: &Value) -> (String, u64, u64) {
    (
        e["action"].as_str().unwrap_or("?").to_string(),
        e["size"].as_u64().unwrap_or(0),
        e["stream"].as_u64().unwrap_or(0),
    )
}

/// Each kept event's stream as record.py writes it: the order the stream first appeared in.
pub(crate) fn stream_ordinals(events: &[&torchlet_alloc::TraceEntry]) -> Vec<u64> {
    let mut order = vec![0u64];
    events
        .iter()
        .map(|e| match order.iter().position(|&s| s == e.stream) {
            Some(i) => i as u64,
            None => {
                order.push(e.stream);
                (order.len() - 1) as u64
            }
        })
        .collect()
}

/// Note [autocast cache order]: leaving an autocast block frees the cached casts of weights,
/// which PyTorch walks in the order of a hash map keyed by their TensorImpl addresses (host
/// addresses, not reproducible); torchlet frees them in the order they were cached. Frees leave
/// the same pool in any order, so a run of frees PyTorch attributes to a `with torch.autocast`
/// line, or that record.py saw autocast's `__exit__` make (`autocast_exit`), is compared as a multiset: each side's run is sorted where torchlet has frees there too.
fn keys_up_to_cache_order(
    theirs: &[Value],
    mine: &[Value],
) -> (Vec<(String, u64, u64)>, Vec<(String, u64, u64)>) {
    let mut their_keys: Vec<_> = theirs.iter().map(event_key).collect();
    let mut my_keys: Vec<_> = mine.iter().map(event_key).collect();
    // `autocast_exit`: record.py saw autocast's `__exit__` make the free, where no program line
    // names the block (one a library enters, in a backward pass).
    let cache_free = |e: &Value| {
        e["action"] == "free_completed"
            && (e["autocast_exit"] == true
                || e["code"]
                    .as_str()
                    .is_some_and(|c| c.trim_start().starts_with("with torch.autocast")))
    };
    let mut i = 0;
    while i < theirs.len() {
        let end = (i..theirs.len())
            .find(|&j| !cache_free(&theirs[j]))
            .unwrap_or(theirs.len());
        let mine_frees =
            end <= my_keys.len() && my_keys[i..end].iter().all(|(a, ..)| a == "free_completed");
        if end - i > 1 && mine_frees {
            their_keys[i..end].sort();
            my_keys[i..end].sort();
        }
        i = end.max(i + 1);
    }
    (their_keys, my_keys)
}

/// The index of the first differing event; unless `expected`, a difference fails the test with
/// both sides' events around it.
pub(crate) fn compare_events(
    name: &str,
    torch: &Value,
    ours: &Value,
    rhai_lines: &[String],
    expected: bool,
) -> Option<usize> {
    let theirs = torch["events"].as_array().expect("torch events");
    let mine = ours["events"].as_array().expect("torchlet events");
    let (their_keys, my_keys) = keys_up_to_cache_order(theirs, mine);
    let first_difference =
        (0..theirs.len().max(mine.len())).find(|&i| their_keys.get(i) != my_keys.get(i));
    let i = first_difference?;
    if expected {
        return Some(i);
    }
    let show = |events: &[Value], code: &dyn Fn(&Value) -> String| -> String {
        let from = i.saturating_sub(CONTEXT);
        let to = (i + CONTEXT + 1).min(events.len());
        (from..to)
            .map(|j| {
                let e = &events[j];
                let mark = if j == i { ">>" } else { "  " };
                let (action, size, stream) = event_key(e);
                let on = if stream > 0 {
                    format!(" (stream {stream})")
                } else {
                    String::new()
                };
                format!("{mark} {j:4} {action:<15} {size:>12}{on}  {}\n", code(e))
            })
            .collect()
    };
    let python = |e: &Value| {
        format!(
            "line {}: {}",
            e["line"].as_u64().map_or("?".into(), |l| l.to_string()),
            e["code"].as_str().unwrap_or("")
        )
    };
    let rhai = |e: &Value| match e["line"].as_u64() {
        Some(l) => format!(
            "line {l}: {}",
            rhai_lines.get(l as usize - 1).map_or("", |s| s.trim())
        ),
        None => "line ?".into(),
    };
    panic!(
        "{name}: event {i} differs ({} events in PyTorch, {} in torchlet)\n\
         PyTorch ({name}.py):\n{}torchlet ({name}.rhai):\n{}",
        theirs.len(),
        mine.len(),
        show(theirs, &python),
        show(mine, &rhai),
    );
}

/// Checkpoints must agree in labels, event counts, allocated, reserved and every `memory_stats`
/// key, up to the first differing event (all of them when there is none).
pub(crate) fn compare_checkpoints(name: &str, torch: &Value, ours: &Value, until: Option<usize>) {
    let theirs = torch["checkpoints"].as_array().expect("torch checkpoints");
    let mine = ours["checkpoints"]
        .as_array()
        .expect("torchlet checkpoints");
    let labels = |c: &[Value]| -> Vec<String> {
        c.iter()
            .map(|c| c["label"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        labels(theirs),
        labels(mine),
        "{name}: the checkpoints differ"
    );
    let stats = |v: &Value| -> BTreeMap<String, i64> {
        serde_json::from_value(v["memory_stats"].clone()).expect("stats are a map of ints")
    };
    let unreproduced = PLACEMENT_UNREPRODUCED
        .iter()
        .find(|(p, ..)| *p == name)
        .map(|&(_, from, why)| (from, why));
    let mut placement_differs = false;
    for (t, m) in theirs.iter().zip(mine) {
        let label = t["label"].as_str().unwrap();
        if until.is_some_and(|i| t["events"].as_u64().unwrap_or(0) as usize > i) {
            break;
        }
        if let Some((from, why)) = unreproduced.filter(|(from, _)| *from == label) {
            let differs = stats(t)
                .iter()
                .filter(|(k, _)| k.starts_with(PLACEMENT_STATS))
                .any(|(k, v)| stats(m).get(k) != Some(v));
            assert!(
                differs || common::real_gpu(),
                "{name}: the split statistics at '{from}' now match PyTorch: remove it from PLACEMENT_UNREPRODUCED ({why})"
            );
            placement_differs = true;
        }
        let keys: &[&str] = if placement_differs {
            &["events"]
        } else {
            &["events", "memory_allocated", "memory_reserved"]
        };
        for key in keys {
            assert_eq!(t[key], m[key], "{name}: {key} at checkpoint '{label}'");
        }
        let (t_stats, m_stats) = (stats(t), stats(m));
        let differing: Vec<String> = t_stats
            .iter()
            .filter(|(k, _)| !(common::real_gpu() && k.starts_with(PLACEMENT_STATS)))
            .filter(|(k, _)| !placement_differs || PLACEMENT_FREE.iter().any(|p| k.starts_with(p)))
            .filter_map(|(k, v)| match m_stats.get(k) {
                Some(mine) if mine == v => None,
                Some(mine) => Some(format!("{k}: PyTorch {v}, torchlet {mine}")),
                None => Some(format!("{k}: PyTorch {v}, torchlet has no such key")),
            })
            .collect();
        assert!(
            differing.is_empty(),
            "{name}: memory_stats at checkpoint '{label}' differ:\n  {}",
            differing.join("\n  ")
        );
    }
}
