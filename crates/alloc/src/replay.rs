//! Replaying a device's recorded history on a simulated device under other settings, to tell
//! whether `expandable_segments` or `max_split_size_mb` would have avoided an out-of-memory error.

use std::collections::{HashMap, VecDeque};

use super::caching::Inner;
use super::config::AllocConfig;
use super::history::{TraceAction, TraceEntry};
use super::raw::RawMemory;
use super::sim_memory::SimulatedMemory;
use super::CachingAllocator;

/// The `max_split_size_mb` values tried, largest first: the largest that avoids the failure
/// keeps the most caching.
const MAX_SPLIT_CANDIDATES_MB: [usize; 5] = [512, 256, 128, 64, 32];

/// What a replay of the history found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayVerdict {
    /// History was off, started with memory already reserved, or lost its oldest entries.
    NoHistory,
    /// The replay under the settings in force did not fail where the device failed (the device's
    /// memory was shared, or the failure was injected), so other settings cannot be judged.
    NotReproduced {
        /// How many events were replayed.
        events: usize,
    },
    /// The replay reproduced the failure; under each other setting, whether the request fitted.
    Judged {
        /// How many events were replayed.
        events: usize,
        /// Whether `expandable_segments:True` avoids the failure (None when it is already on).
        expandable: Option<bool>,
        /// The largest `max_split_size_mb` tried that avoids it, if any.
        max_split_mb: Option<usize>,
    },
}

impl ReplayVerdict {
    /// One sentence for the error's notes; `record_call` is how the program's language spells
    /// the call that starts the history (`cuda::record_memory_history()`).
    pub fn sentence(&self, record_call: &str) -> String {
        match self {
            ReplayVerdict::NoHistory => format!(
                "to learn whether expandable_segments or max_split_size_mb would avoid this, call \
                 {record_call} before the first allocation and run again"
            ),
            ReplayVerdict::NotReproduced { events } => format!(
                "replaying the {events} recorded events did not run out of memory here (memory \
                 shared with others, or an injected failure), so other settings cannot be judged"
            ),
            ReplayVerdict::Judged {
                events,
                expandable,
                max_split_mb,
            } => {
                let expandable = match expandable {
                    None => "expandable_segments is already on".to_string(),
                    Some(true) => "expandable_segments:True would have avoided it".to_string(),
                    Some(false) => "expandable_segments:True would not have avoided it".to_string(),
                };
                let split = match max_split_mb {
                    Some(mb) => format!("max_split_size_mb:{mb} would have avoided it"),
                    None => "no max_split_size_mb from 32 to 512 would have".to_string(),
                };
                format!("replaying the {events} recorded events: {expandable}; {split}")
            }
        }
    }
}

/// The verdict for a request of `size` rounded bytes that `inner` could not serve.
pub(super) fn verdict<M: RawMemory>(inner: &Inner<M>, size: usize) -> ReplayVerdict {
    let Some(entries) = inner.history.complete_entries() else {
        return ReplayVerdict::NoHistory;
    };
    let Ok((free, _)) = inner.memory.mem_get_info() else {
        return ReplayVerdict::NoHistory;
    };
    let device = Device {
        capacity: inner.total_allocated_memory + free,
        allowed: inner.allowed_memory_maximum,
    };
    let events = entries.len();
    if device.fits(entries, &inner.config, size) {
        return ReplayVerdict::NotReproduced { events };
    }
    let with = |settings: &str| {
        let mut config = inner.config.clone();
        config.apply(settings).is_ok() && device.fits(entries, &config, size)
    };
    let expandable =
        (!inner.config.expandable_segments()).then(|| with("expandable_segments:True"));
    let max_split_mb = MAX_SPLIT_CANDIDATES_MB
        .into_iter()
        .find(|mb| with(&format!("max_split_size_mb:{mb}")));
    ReplayVerdict::Judged {
        events,
        expandable,
        max_split_mb,
    }
}

/// The device the history ran on: the bytes this process could hold, and its fraction's limit.
struct Device {
    capacity: usize,
    allowed: Option<usize>,
}

impl Device {
    /// Whether, after replaying `entries` under `config`, a request of `size` bytes is served.
    fn fits(&self, entries: &VecDeque<TraceEntry>, config: &AllocConfig, size: usize) -> bool {
        let allocator =
            CachingAllocator::new(0, SimulatedMemory::new(self.capacity), config.clone());
        let mut inner = allocator.lock();
        inner.allowed_memory_maximum = self.allowed;
        // The history is read without its own trace: the replay must not add to anything.
        inner.history = Default::default();
        replay(&mut inner, entries) && inner.malloc(size, 0, None).is_ok()
    }
}

/// Replays the user's requests of `entries` (allocations, frees, `empty_cache` calls) on `inner`;
/// false when an allocation fails on the way.
fn replay<M: RawMemory>(inner: &mut Inner<M>, entries: &VecDeque<TraceEntry>) -> bool {
    let mut addresses: HashMap<u64, u64> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        match e.action {
            TraceAction::Alloc => match inner.malloc(e.size as usize, e.stream, None) {
                Ok(ptr) => {
                    addresses.insert(e.addr, ptr);
                }
                Err(_) => return false,
            },
            TraceAction::FreeRequested => {
                if let Some(ptr) = addresses.remove(&e.addr) {
                    let _ = inner.free(ptr);
                }
            }
            _ if ends_a_user_release(entries, i) => {
                let _ = inner.release_cached_blocks();
            }
            _ => {}
        }
    }
    true
}

/// Whether entry `i` closes a run of released segments that no allocation asked for: the
/// allocator's own flush before a retry is followed by the new segment, while a user's
/// `empty_cache()` is not. The replaying allocator makes its own flushes.
fn ends_a_user_release(entries: &VecDeque<TraceEntry>, i: usize) -> bool {
    let releases = |e: &TraceEntry| {
        matches!(
            e.action,
            TraceAction::SegmentFree | TraceAction::SegmentUnmap
        )
    };
    if !releases(&entries[i]) {
        return false;
    }
    match entries.get(i + 1) {
        Some(next) if releases(next) => false,
        Some(next) => !matches!(
            next.action,
            TraceAction::SegmentAlloc | TraceAction::SegmentMap | TraceAction::Oom
        ),
        None => true,
    }
}
