//! `cuda::dump_snapshot(path)`: every device's segments and trace, in the form PyTorch's memory
//! viewer reads (`torch.cuda.memory._dump_snapshot`), as JSON or, for `.pickle`, a protocol-3 pickle.
//!
//! The allocator's own snapshot carries one tag per block and event, the statement that asked; the
//! viewer wants `frames` (file, line, name) and shows `user_metadata` in every tooltip, so each tag
//! becomes one frame of its statement and the variable the statement assigns. A free carries the
//! statement that freed it (`del temp`), and a cuBLAS workspace is labelled as one.
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::statement_names::Namer;
use torchlet_alloc::{DeviceAllocator, Snapshot, TraceAction, TraceEntry};
use torchlet_core::device;

/// Why no snapshot could be written, worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpError {
    /// No CUDA device, real or simulated.
    NoDevice,
    /// History is off on every device: the trace would be empty.
    HistoryOff,
    /// The file could not be written.
    Write(String),
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DumpError::NoDevice => write!(
                f,
                "dump_snapshot: there is no CUDA device; start torchlet with --simulate-cuda to use a simulated one"
            ),
            DumpError::HistoryOff => write!(
                f,
                "dump_snapshot: memory history is off, so the snapshot would hold no events; \
                 call cuda::record_memory_history() before the code to record \
                 (or run a script with `torchlet run --snapshot OUT.json FILE`)"
            ),
            DumpError::Write(message) => write!(f, "dump_snapshot: {message}"),
        }
    }
}

/// The allocators of every started CUDA device, by index.
pub fn allocators() -> Vec<Arc<dyn DeviceAllocator>> {
    (0..device::cuda_device_count())
        .filter_map(device::started_cuda_allocator)
        .collect()
}

/// Turn history on ("all", unbounded) on every CUDA device, starting them; the count of devices.
pub fn record_everywhere() -> Result<usize, DumpError> {
    let count = device::cuda_device_count();
    if count == 0 {
        return Err(DumpError::NoDevice);
    }
    for index in 0..count {
        let allocator = device::cuda_allocator(index).map_err(|_| DumpError::NoDevice)?;
        allocator.record_memory_history(torchlet_alloc::HistoryOptions::default());
    }
    Ok(count)
}

/// Write the snapshot of every device to `path`; the number of trace events written.
pub fn dump(path: &str) -> Result<usize, DumpError> {
    if !device::cuda_is_available() {
        return Err(DumpError::NoDevice);
    }
    let allocators = allocators();
    if !allocators.iter().any(|a| a.history_enabled()) {
        return Err(DumpError::HistoryOff);
    }
    let snapshots: Vec<(usize, Snapshot)> = allocators
        .iter()
        .map(|a| (a.device_index(), a.snapshot()))
        .collect();
    let document = viewer_document(&snapshots);
    let events = snapshots
        .iter()
        .map(|(_, s)| s.device_traces.iter().map(Vec::len).sum::<usize>())
        .sum();
    let bytes = if path.ends_with(".pickle") {
        serde_pickle::to_vec(&document, serde_pickle::SerOptions::new())
            .map_err(|e| DumpError::Write(format!("cannot encode the pickle: {e}")))?
    } else {
        serde_json::to_vec(&document)
            .map_err(|e| DumpError::Write(format!("cannot encode the JSON: {e}")))?
    };
    std::fs::write(path, bytes)
        .map_err(|e| DumpError::Write(format!("cannot write {path}: {e}")))?;
    Ok(events)
}

/// The viewer's document: every device's segments, and one trace list per device index.
pub fn viewer_document(snapshots: &[(usize, Snapshot)]) -> Value {
    let tags = snapshots.iter().flat_map(|(_, s)| {
        let blocks = s.segments.iter().flat_map(|g| &g.blocks);
        let traces = s.device_traces.iter().flatten();
        blocks
            .filter_map(|b| b.tag.as_deref())
            .chain(traces.filter_map(|e| e.tag.as_deref()))
    });
    let mut namer = Namer::new(tags);
    let devices = snapshots.iter().map(|(d, _)| d + 1).max().unwrap_or(1);
    let mut traces = vec![Vec::new(); devices];
    let mut segments = Vec::new();
    let workspaces = device::blas_workspaces();
    for (device, snapshot) in snapshots {
        let ws: Vec<(u64, &'static str)> = workspaces
            .iter()
            .filter(|(i, _)| i == device)
            .flat_map(|(_, w)| w.iter().map(|w| (w.ptr, w.handle.user())))
            .collect();
        segments.extend(
            snapshot
                .segments
                .iter()
                .map(|g| segment_value(g, &ws, &mut namer)),
        );
        let entries: Vec<&TraceEntry> = snapshot.device_traces.iter().flatten().collect();
        // A workspace is never freed: its block's allocation is the last one at its address.
        let last_alloc = |addr: u64| {
            entries
                .iter()
                .rposition(|e| e.action == TraceAction::Alloc && e.addr == addr)
        };
        let of_workspace: Vec<(usize, &'static str)> = ws
            .iter()
            .filter_map(|(ptr, user)| Some((last_alloc(*ptr)?, *user)))
            .collect();
        for (i, e) in entries.iter().enumerate() {
            let mut value = entry_value(e, &mut namer);
            if let Some((_, user)) = of_workspace.iter().find(|(at, _)| *at == i) {
                label_workspace(&mut value, user);
            }
            traces[*device].push(value);
        }
    }
    let settings = snapshots
        .first()
        .map_or(Value::Null, |(_, s)| json!(s.allocator_settings));
    json!({
        "segments": segments,
        "device_traces": traces,
        "allocator_settings": settings,
    })
}

/// A frame list and, when the statement assigns one, the variable as `user_metadata`.
fn provenance(tag: Option<&str>, namer: &mut Namer, into: &mut Map<String, Value>) {
    let named = namer.name(tag);
    let frames = named
        .iter()
        .map(|n| json!({"filename": n.file, "line": n.line, "name": n.statement}));
    into.insert("frames".into(), Value::Array(frames.collect()));
    if let Some(variable) = named.and_then(|n| n.variable) {
        into.insert("user_metadata".into(), Value::String(variable));
    }
}

/// A cuBLAS workspace is no variable's: say what it is, not what the statement that first
/// needed it assigns (`loss`).
fn label_workspace(value: &mut Value, user: &str) {
    if let Value::Object(m) = value {
        m.insert(
            "user_metadata".into(),
            Value::String(format!("cuBLAS workspace of {user} (held by no tensor)")),
        );
    }
}

fn segment_value(
    segment: &torchlet_alloc::SegmentInfo,
    workspaces: &[(u64, &'static str)],
    namer: &mut Namer,
) -> Value {
    let blocks = segment.blocks.iter().map(|b| {
        let mut block = Map::new();
        block.insert("address".into(), json!(b.address));
        block.insert("size".into(), json!(b.size));
        block.insert("requested_size".into(), json!(b.requested_size));
        block.insert("state".into(), json!(b.state));
        provenance(b.tag.as_deref(), namer, &mut block);
        let mut block = Value::Object(block);
        let live = b.state == "active_allocated";
        if let Some((_, user)) = workspaces.iter().find(|(p, _)| live && *p == b.address) {
            label_workspace(&mut block, user);
        }
        block
    });
    json!({
        "device": segment.device,
        "address": segment.address,
        "total_size": segment.total_size,
        "allocated_size": segment.allocated_size,
        "active_size": segment.active_size,
        "requested_size": segment.requested_size,
        "stream": segment.stream,
        "segment_type": segment.segment_type,
        "segment_pool_id": [segment.segment_pool_id.0, segment.segment_pool_id.1],
        "is_expandable": segment.is_expandable,
        "frames": [],
        "blocks": blocks.collect::<Vec<_>>(),
    })
}

fn entry_value(entry: &TraceEntry, namer: &mut Namer) -> Value {
    let mut m = Map::new();
    m.insert("action".into(), json!(entry.action.name()));
    let addr_key = if entry.action == TraceAction::Oom {
        "device_free"
    } else {
        "addr"
    };
    m.insert(addr_key.into(), json!(entry.addr));
    m.insert("size".into(), json!(entry.size));
    m.insert("stream".into(), json!(entry.stream));
    m.insert("time_us".into(), json!(entry.time_us));
    provenance(entry.tag.as_deref(), namer, &mut m);
    Value::Object(m)
}
