//! One run of a script for `torchlet fit` (shapes only, or with values to check it): each
//! device's peaks and where they were reached, and the first out-of-memory error, as JSON the
//! `fit` front end reads.
use std::rc::Rc;
use std::time::Instant;

use serde_json::{json, Value};

use super::{Session, SessionOptions, StdioFrontend};
use torchlet_alloc::{PeakMoment, Role, Sample};

/// Record every allocator's timeline from now on (`torchlet fit --report`).
pub fn record_timelines() {
    torchlet_alloc::record_timelines(true);
}

/// A byte size as `--gpu` and `--reserve` take it: "24GiB", "24GB", "512MiB".
pub fn parse_size(s: &str) -> Result<u64, String> {
    torchlet_core::device::parse_size(s)
}

/// Simulate GPUs of `sizes` (`"80GiB,24GiB"`) shapes only; before anything else touches devices.
pub fn init_shapes_only(sizes: &str) -> Result<(), String> {
    // The registry words its errors for --simulate-cuda; here the sizes came from --gpu.
    torchlet_core::device::init_shapes_only(sizes)
        .map_err(|e| e.trim_start_matches("--simulate-cuda: ").to_string())
}

/// Simulate GPUs of `sizes` with values (`torchlet fit --values`), to check a shapes-only run.
pub fn init_with_values(sizes: &str) -> Result<(), String> {
    torchlet_core::device::init(Some(sizes))
        .map_err(|e| e.trim_start_matches("--simulate-cuda: ").to_string())
}

/// Run `text` (named `source`) with `args` on the devices set up; the report as JSON. With `quiet`, what
/// the script prints is dropped (a sweep runs it many times).
pub fn run(source: &str, text: &str, args: &[String], quiet: bool) -> Value {
    let started = Instant::now();
    let mut session = if quiet {
        Session::captured(source).0
    } else {
        let options = SessionOptions {
            source_name: Some(source.to_string()),
            ..Default::default()
        };
        Session::new(options, Rc::new(StdioFrontend))
    };
    session.set_args(args);
    let outcome = session.execute(text);
    let error = outcome.error.map(|e| {
        json!({
            "kind": e.kind,
            "message": e.message,
            "at": format!("{}:{}", e.source.clone().unwrap_or_default(), e.line.unwrap_or(0)),
            "oom": e.kind == "OutOfMemoryError",
        })
    });
    // The report is taken before the session (and its tensors) goes.
    let report = report(started, error);
    drop(session);
    report
}

/// The report of a run that started at `started` and ended with `error` (null when it ran to its
/// end): each started GPU's peaks and timeline, the mode, the time and host memory it took. Taken
/// while the program's tensors are still alive.
pub fn report(started: Instant, error: Option<Value>) -> Value {
    let cublas: Vec<usize> = torchlet_core::device::blas_workspaces()
        .into_iter()
        .filter(|(_, w)| !w.is_empty())
        .map(|(index, _)| index)
        .collect();
    let devices: Vec<Value> = torchlet_core::device::started_cuda_allocators()
        .into_iter()
        .map(|(index, a)| {
            let peaks = a.peak_moments();
            let (_, total) = a.mem_get_info().unwrap_or((0, 0));
            json!({
                "index": index,
                "capacity": total,
                "peak_allocated": moment(&peaks.allocated),
                "peak_reserved": moment(&peaks.reserved),
                // Whether cuBLAS loaded (its handle's memory is outside the allocator).
                "cublas": cublas.contains(&index),
                "timeline": timeline(&a.timeline()),
            })
        })
        .collect();
    json!({
        "mode": if torchlet_core::device::shapes_only() { "shapes only" } else { "with values" },
        "devices": devices,
        "error": error,
        "seconds": started.elapsed().as_secs_f64(),
        "max_rss_bytes": max_rss_bytes(),
        "estimated_workspaces": torchlet_core::tensor::conv_workspace::estimated_workspaces(),
    })
}

/// The estimate note for what this process has run so far.
pub fn estimate_note_now() -> String {
    estimate_note(&json!(
        torchlet_core::tensor::conv_workspace::estimated_workspaces()
    ))
}

/// The note that the cuDNN workspaces of some convolutions are estimated (Note [cuDNN
/// workspaces]): empty when every convolution's shape was recorded.
pub fn estimate_note(cases: &Value) -> String {
    let cases: Vec<&str> = cases
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str())
        .collect();
    if cases.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "note: cuDNN's workspace is estimated for {} convolution shape(s) torchlet has no recording of \
         (scaled from the nearest recorded one); the peaks may differ from PyTorch's by that much:\n",
        cases.len()
    );
    for c in cases.iter().take(5) {
        out += &format!("  {c}\n");
    }
    if cases.len() > 5 {
        out += &format!("  … and {} more\n", cases.len() - 5);
    }
    out
}

/// At most this many points of a timeline go into the report (a page draws them all).
const POINTS: usize = 1200;

/// The timeline as `[parameters, gradients, optimizer state, saved, other, workspaces, reserved]`
/// rows, thinned to [`POINTS`] by keeping each stretch's highest moment (so no peak is lost);
/// null when none was recorded.
fn timeline(samples: &[Sample]) -> Value {
    if samples.is_empty() {
        return Value::Null;
    }
    let order = [
        Role::Parameter,
        Role::Gradient,
        Role::OptimizerState,
        Role::Saved,
        Role::Other,
        Role::Workspace,
    ];
    let stretch = samples.len().div_ceil(POINTS);
    let points: Vec<Value> = samples
        .chunks(stretch)
        .map(|c| {
            let top = c
                .iter()
                .max_by_key(|s| (s.by_role.iter().sum::<u64>(), s.reserved))
                .expect("chunks are not empty");
            let reserved = c.iter().map(|s| s.reserved).max().unwrap_or(0);
            let mut row: Vec<u64> = order.iter().map(|r| top.by_role[*r as usize]).collect();
            row.push(reserved);
            json!(row)
        })
        .collect();
    json!({
        "columns": ["parameters", "gradients", "optimizer_state", "saved_for_backward", "other_tensors", "workspaces", "reserved"],
        "events": samples.len(),
        "points": points,
    })
}

fn moment(m: &PeakMoment) -> Value {
    json!({
        "allocated": m.allocated,
        "reserved": m.reserved,
        "segments": m.segments,
        "fragmentation": m.fragmentation(),
        "site": m.site.as_deref(),
        "stack": m.stack.as_deref().map(|s| s.lines().collect::<Vec<_>>()),
        "breakdown": breakdown(m),
    })
}

/// What the reserved bytes at a peak are, by what holds them; the parts add up to reserved.
fn breakdown(m: &PeakMoment) -> Value {
    let b = &m.breakdown;
    let saved: Vec<Value> = b
        .saved_by_site
        .iter()
        .map(|(site, bytes)| json!({"site": site.as_deref(), "bytes": bytes}))
        .collect();
    json!({
        "parameters": b.of(Role::Parameter),
        "gradients": b.of(Role::Gradient),
        "optimizer_state": b.of(Role::OptimizerState),
        "saved_for_backward": b.of(Role::Saved),
        "saved_by_statement": saved,
        "other_tensors": b.of(Role::Other),
        "statement": b.statement,
        "workspaces": b.of(Role::Workspace),
        "cached_free": m.reserved.saturating_sub(m.allocated),
    })
}

/// The process's peak resident memory.
fn max_rss_bytes() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    usage.ru_maxrss as u64 * 1024
}
