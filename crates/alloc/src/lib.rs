//! The CUDA caching allocator, exactly as PyTorch's behaves, generic over raw device memory, and
//! `types`, the vocabulary every layer above shares (dtype, scalar, layout, errors).
//!
//! Map: `types` (the shared vocabulary); `raw` (the `RawMemory` trait: the device bytes underneath),
//! `size` (rounding and segment sizes), `config` (settings), `block` (arena and pools), `caching`
//! (malloc/free, split/merge), `release` (empty_cache, OOM flushes, GC), `expandable` (page-mapped
//! segments), `error` (`AllocError`, whose message is the one a user sees), `oom` (PyTorch's
//! message), `oom_diagnosis` and `replay` (what torchlet adds to it), `stats`, `summary`,
//! `history` (the trace ring buffer), `snapshot` and `introspect` (the snapshot and building it
//! from the live blocks), `site` (the statement running, kept with each block it asks for),
//! `peak_moments` (the statement and state at each peak, for `torchlet fit`), `device_allocator`
//! (the object-safe face), `sim_memory` (the simulated GPU's memory), `placement` (where the
//! driver would put each segment, for the simulated GPU and the real one), `stream` (the current stream, new stream handles) and
//! `stream_events` (frees that wait on other streams: `record_stream` and its events).

pub mod types;

mod block;
mod caching;
mod config;
mod device_allocator;
mod error;
mod expandable;
mod history;
mod introspect;
mod oom;
mod oom_diagnosis;
mod peak_moments;
mod placement;
mod raw;
mod release;
mod replay;
mod sim_memory;
mod size;
mod snapshot;
mod stats;
mod stream_events;
mod summary;

pub mod site;
pub mod stream;

pub use caching::CachingAllocator;
pub use config::{AllocConfig, CONF_ENV, CONF_ENV_ALIAS};
pub use device_allocator::DeviceAllocator;
pub use error::AllocError;
pub use history::{HistoryMode, HistoryOptions, TraceAction, TraceEntry};
pub use oom::{OomReport, MEMORY_MANAGEMENT_URL};
pub use oom_diagnosis::OomDiagnosis;
pub use peak_moments::{record_timelines, Breakdown, PeakMoment, PeakMoments, Role, Sample, ROLES};
pub use placement::{Placement, GRANULE};
pub use raw::{DevicePtr, RawError, RawMemory};
pub use replay::ReplayVerdict;
pub use sim_memory::SimulatedMemory;
pub use size::{
    format_size, get_allocation_size, LARGE_BUFFER, MIN_BLOCK_SIZE, MIN_LARGE_ALLOC, ONE_EXA_BYTES,
    ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};
pub use snapshot::{AllocatorSettings, BlockInfo, SegmentInfo, Snapshot};
pub use stats::{DeviceStats, PoolKind, Stat, StatArray};
pub use summary::memory_summary;

/// A stream handle; 0 is the default stream.
pub type StreamId = u64;
