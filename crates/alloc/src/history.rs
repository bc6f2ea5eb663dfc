//! Memory history: a ring buffer of trace entries (PyTorch's `_record_memory_history`): when it
//! is full the oldest entry goes, so a long run keeps its last `max_entries` events.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::error::AllocError;
use super::{DevicePtr, StreamId};

/// What happened, as PyTorch's `TraceEntry.action` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceAction {
    /// A block was handed out (size: the requested bytes).
    Alloc,
    /// The caller freed a block.
    FreeRequested,
    /// The block is back in its pool.
    FreeCompleted,
    /// A new segment was allocated from the device.
    SegmentAlloc,
    /// A segment was returned to the device.
    SegmentFree,
    /// Pages of an expandable segment were mapped.
    SegmentMap,
    /// Pages of an expandable segment were unmapped.
    SegmentUnmap,
    /// An out-of-memory error was raised (addr: the device's free bytes, size: the rounded request).
    Oom,
    /// A snapshot was taken (size: the active bytes then).
    Snapshot,
}

impl TraceAction {
    /// PyTorch's string for this action.
    pub fn name(self) -> &'static str {
        match self {
            TraceAction::Alloc => "alloc",
            TraceAction::FreeRequested => "free_requested",
            TraceAction::FreeCompleted => "free_completed",
            TraceAction::SegmentAlloc => "segment_alloc",
            TraceAction::SegmentFree => "segment_free",
            TraceAction::SegmentMap => "segment_map",
            TraceAction::SegmentUnmap => "segment_unmap",
            TraceAction::Oom => "oom",
            TraceAction::Snapshot => "snapshot",
        }
    }
}

/// One recorded allocator event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// What happened.
    pub action: TraceAction,
    /// The address (for `Oom`: the device's free bytes, serialized as `device_free`).
    pub addr: DevicePtr,
    /// Bytes (see [`TraceAction`] for which size each action records).
    pub size: u64,
    /// The stream of the block or segment.
    pub stream: StreamId,
    /// Microseconds since the Unix epoch.
    pub time_us: i64,
    /// The caller's tag of the allocation involved, if any.
    pub tag: Option<Arc<str>>,
}

impl Serialize for TraceEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("action", self.action.name())?;
        let addr_key = if self.action == TraceAction::Oom {
            "device_free"
        } else {
            "addr"
        };
        m.serialize_entry(addr_key, &self.addr)?;
        m.serialize_entry("size", &self.size)?;
        m.serialize_entry("stream", &self.stream)?;
        m.serialize_entry("time_us", &self.time_us)?;
        if let Some(tag) = &self.tag {
            m.serialize_entry("tag", &**tag)?;
        }
        m.end()
    }
}

/// How much history to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryMode {
    /// Only the state of live allocations (the trace ring holds one entry), as PyTorch's "state".
    State,
    /// Live state and a ring buffer of the last `max_entries` events, as PyTorch's "all".
    All,
}

impl HistoryMode {
    /// Parses `"state"` or `"all"`.
    pub fn parse(s: &str) -> Result<HistoryMode, AllocError> {
        match s {
            "state" => Ok(HistoryMode::State),
            "all" => Ok(HistoryMode::All),
            other => Err(AllocError::Config(format!(
                "record_memory_history: enabled must be None, \"state\" or \"all\", got {other:?}"
            ))),
        }
    }
}

/// Options of `record_memory_history`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryOptions {
    /// `None` stops recording and clears the buffer.
    pub enabled: Option<HistoryMode>,
    /// Capacity of the ring buffer (at least 1).
    pub max_entries: usize,
    /// Drop what was recorded so far.
    pub clear_history: bool,
}

impl Default for HistoryOptions {
    /// PyTorch's defaults: everything, unbounded.
    fn default() -> Self {
        HistoryOptions {
            enabled: Some(HistoryMode::All),
            max_entries: usize::MAX,
            clear_history: false,
        }
    }
}

impl HistoryOptions {
    /// Stop recording.
    pub fn disabled() -> Self {
        HistoryOptions {
            enabled: None,
            ..Default::default()
        }
    }
}

/// The ring buffer of trace entries of one device.
#[derive(Debug, Default)]
pub(crate) struct History {
    pub enabled: bool,
    max_entries: usize,
    entries: VecDeque<TraceEntry>,
    /// Whether the entries hold everything since the device held no memory: recording began
    /// with nothing reserved and no entry has been dropped since. Only then can it be replayed.
    complete: bool,
}

/// Microseconds since the Unix epoch.
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl History {
    /// Applies `record_memory_history` options; `nothing_reserved` says whether the device holds
    /// no memory now, so that a history starting here is complete.
    pub fn configure(&mut self, options: HistoryOptions, nothing_reserved: bool) {
        let starts = !self.enabled || options.clear_history;
        self.enabled = options.enabled.is_some();
        if starts {
            self.complete = nothing_reserved;
        }
        self.max_entries = match options.enabled {
            Some(HistoryMode::State) => 1,
            _ => options.max_entries.max(1),
        };
        if !self.enabled || options.clear_history {
            self.entries.clear();
        }
        while self.entries.len() > self.max_entries {
            self.entries.pop_front();
            self.complete = false;
        }
    }

    /// Records one event, overwriting the oldest when full.
    pub fn record(
        &mut self,
        action: TraceAction,
        addr: u64,
        size: u64,
        stream: StreamId,
        tag: Option<&Arc<str>>,
    ) {
        if self.entries.len() >= self.max_entries {
            self.entries.pop_front();
            self.complete = false;
        }
        self.entries.push_back(TraceEntry {
            action,
            addr,
            size,
            stream,
            time_us: now_us(),
            tag: tag.cloned(),
        });
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> Vec<TraceEntry> {
        self.entries.iter().cloned().collect()
    }

    /// The entries, oldest first, when they tell everything since the device held no memory.
    pub fn complete_entries(&self) -> Option<&VecDeque<TraceEntry>> {
        (self.enabled && self.complete).then_some(&self.entries)
    }
}
