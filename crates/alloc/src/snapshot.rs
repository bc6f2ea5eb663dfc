//! The memory snapshot: segments, their blocks and states, and the recorded trace, with the keys
//! of PyTorch's `torch.cuda.memory._snapshot()` so its memory viewer reads it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::history::TraceEntry;
use super::{DevicePtr, StreamId};

/// Everything the allocator holds on one device, plus its trace, like `torch.cuda.memory._snapshot()`.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Segments sorted by address.
    pub segments: Vec<SegmentInfo>,
    /// One list of trace entries for this device, oldest first.
    pub device_traces: Vec<Vec<TraceEntry>>,
    /// The settings in force.
    pub allocator_settings: AllocatorSettings,
}

/// One segment (or one contiguous mapped range of an expandable segment).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    /// The device index.
    pub device: usize,
    /// Start address.
    pub address: DevicePtr,
    /// Size in bytes.
    pub total_size: u64,
    /// Bytes of handed-out blocks.
    pub allocated_size: u64,
    /// Bytes of active blocks.
    pub active_size: u64,
    /// Requested bytes of active blocks.
    pub requested_size: u64,
    /// The stream the segment was allocated on.
    pub stream: StreamId,
    /// `"large"` or `"small"`.
    pub segment_type: &'static str,
    /// `(0, 0)`: the default pool.
    pub segment_pool_id: (u64, u64),
    /// Whether this is a mapped range of an expandable segment.
    pub is_expandable: bool,
    /// Blocks in address order; they tile the segment.
    pub blocks: Vec<BlockInfo>,
}

/// One block of a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BlockInfo {
    /// Start address.
    pub address: DevicePtr,
    /// Size in bytes.
    pub size: u64,
    /// The caller's byte count of the block's last allocation (0 if never handed out).
    pub requested_size: u64,
    /// `"active_allocated"`, `"active_pending_free"` or `"inactive"`.
    pub state: &'static str,
    /// The caller's tag of the live allocation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// The allocator settings as a snapshot reports them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocatorSettings {
    /// The last settings string applied.
    #[serde(rename = "TORCHLET_CUDA_ALLOC_CONF")]
    pub conf: String,
    /// -1 when unlimited.
    pub max_split_size: i64,
    /// 0 when off.
    pub garbage_collection_threshold: f64,
    /// Whether expandable segments are on.
    pub expandable_segments: bool,
    /// Divisions per interval, keyed by the interval's start in MiB ("1" … "32768").
    pub roundup_power2_divisions: BTreeMap<String, u64>,
}
