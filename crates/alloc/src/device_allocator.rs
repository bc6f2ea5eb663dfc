//! `DeviceAllocator`, the object-safe face of one device's allocator, and its implementation.

use std::collections::BTreeMap;

use super::caching::CachingAllocator;
use super::error::AllocError;
use super::history::HistoryOptions;
use super::oom_diagnosis::OomDiagnosis;
use super::raw::RawMemory;
use super::snapshot::Snapshot;
use super::{DevicePtr, StreamId};

/// One device's allocator as the layers above see it (the `torch.cuda` memory API).
pub trait DeviceAllocator: Send + Sync {
    /// Hands out at least `bytes` bytes on `stream`; `tag` names the allocation in snapshots
    /// and traces. Zero bytes gives the null pointer and touches nothing.
    fn malloc(
        &self,
        bytes: usize,
        stream: StreamId,
        tag: Option<&str>,
    ) -> Result<DevicePtr, AllocError>;
    /// `malloc` tagged with a shared string (the statement that asked, see [`super::site`]).
    fn malloc_tagged(
        &self,
        bytes: usize,
        stream: StreamId,
        tag: Option<std::sync::Arc<str>>,
    ) -> Result<DevicePtr, AllocError>;
    /// Takes back a pointer from `malloc` (the null pointer is ignored).
    fn free(&self, ptr: DevicePtr) -> Result<(), AllocError>;
    /// `Tensor.record_stream`: the block at `ptr` is in use on `stream` too, so its free waits
    /// for that stream's work (Note [events complete at the next request]).
    fn record_stream(&self, ptr: DevicePtr, stream: StreamId) -> Result<(), AllocError>;
    /// Releases every wholly free segment to the device (`torch.cuda.empty_cache`).
    fn empty_cache(&self);
    /// Bytes of handed-out blocks.
    fn memory_allocated(&self) -> u64;
    /// Peak of `memory_allocated` since the last peak reset.
    fn max_memory_allocated(&self) -> u64;
    /// Bytes of segments held from the device.
    fn memory_reserved(&self) -> u64;
    /// Peak of `memory_reserved` since the last peak reset.
    fn max_memory_reserved(&self) -> u64;
    /// PyTorch's 122 flat `memory_stats` keys.
    fn memory_stats(&self) -> BTreeMap<String, i64>;
    /// PyTorch's `memory_summary` table.
    fn memory_summary(&self, abbreviated: bool) -> String;
    /// Sets every peak to its current value.
    fn reset_peak_memory_stats(&self);
    /// Zeroes every allocated/freed total and the `num_*` counters.
    fn reset_accumulated_memory_stats(&self);
    /// Segments, blocks and the recorded trace.
    fn snapshot(&self) -> Snapshot;
    /// Starts, changes or stops history recording.
    fn record_memory_history(&self, options: HistoryOptions);
    /// Whether history is being recorded.
    fn history_enabled(&self) -> bool;
    /// Limits this process to `fraction` of the device's total memory (0 to 1).
    fn set_memory_fraction(&self, fraction: f64) -> Result<(), AllocError>;
    /// `(free, total)` bytes of the whole device.
    fn mem_get_info(&self) -> Result<(u64, u64), AllocError>;
    /// The device index.
    fn device_index(&self) -> usize;
    /// Changes settings at run time, in `TORCHLET_CUDA_ALLOC_CONF` syntax (PyTorch's
    /// `_set_allocator_settings`): keys named change, others stay.
    fn set_allocator_settings(&self, settings: &str) -> Result<(), AllocError>;
    /// Fault injection for tests: after `requests` more successful requests, the next one fails
    /// as if the device were out of memory (PyTorch's message and `num_ooms`, no real shortage);
    /// `None` cancels.
    fn fail_after(&self, requests: Option<u64>);
    /// The most bytes allocated at once since the last call (at least what is allocated now);
    /// a window of its own, so `max_memory_allocated` is untouched.
    fn take_window_peak(&self) -> u64;
    /// Where the allocated and reserved peaks since the last peak reset were reached.
    fn peak_moments(&self) -> super::PeakMoments;
    /// What the last out-of-memory failure on this device found, taken once.
    fn take_oom_diagnosis(&self) -> Option<OomDiagnosis>;
    /// Says what the handed-out block at `ptr` holds, for the breakdown at each peak.
    fn set_role(&self, ptr: DevicePtr, role: super::Role);
    /// The memory after each request and free since timelines were recorded
    /// ([`super::record_timelines`]).
    fn timeline(&self) -> Vec<super::Sample>;
}

impl<M: RawMemory> CachingAllocator<M> {
    /// `empty_cache`, with the device's error if giving memory back failed.
    pub fn try_empty_cache(&self) -> Result<(), AllocError> {
        self.lock().release_cached_blocks()
    }
}

impl<M: RawMemory> DeviceAllocator for CachingAllocator<M> {
    fn malloc(
        &self,
        bytes: usize,
        stream: StreamId,
        tag: Option<&str>,
    ) -> Result<DevicePtr, AllocError> {
        self.lock()
            .malloc(bytes, stream, tag.map(std::sync::Arc::from))
    }
    fn malloc_tagged(
        &self,
        bytes: usize,
        stream: StreamId,
        tag: Option<std::sync::Arc<str>>,
    ) -> Result<DevicePtr, AllocError> {
        self.lock().malloc(bytes, stream, tag)
    }
    fn free(&self, ptr: DevicePtr) -> Result<(), AllocError> {
        self.lock().free(ptr)
    }
    fn record_stream(&self, ptr: DevicePtr, stream: StreamId) -> Result<(), AllocError> {
        self.lock().record_stream(ptr, stream)
    }
    fn empty_cache(&self) {
        // Freeing raw memory only fails on a broken device; the trait keeps PyTorch's signature.
        let _ = self.try_empty_cache();
    }
    fn memory_allocated(&self) -> u64 {
        self.lock().stats.allocated_bytes.all().current as u64
    }
    fn max_memory_allocated(&self) -> u64 {
        self.lock().stats.allocated_bytes.all().peak as u64
    }
    fn memory_reserved(&self) -> u64 {
        self.lock().stats.reserved_bytes.all().current as u64
    }
    fn max_memory_reserved(&self) -> u64 {
        self.lock().stats.reserved_bytes.all().peak as u64
    }
    fn memory_stats(&self) -> BTreeMap<String, i64> {
        let g = self.lock();
        g.stats.to_map(g.config.max_split_size())
    }
    fn memory_summary(&self, abbreviated: bool) -> String {
        super::summary::memory_summary(&self.memory_stats(), self.device, abbreviated)
    }
    fn reset_peak_memory_stats(&self) {
        let mut inner = self.lock();
        inner.stats.reset_peak();
        let now = inner.moment(super::site::current());
        inner.peaks.reset(now);
    }
    fn reset_accumulated_memory_stats(&self) {
        self.lock().stats.reset_accumulated();
    }
    fn snapshot(&self) -> Snapshot {
        self.lock().snapshot()
    }
    fn record_memory_history(&self, options: HistoryOptions) {
        let mut inner = self.lock();
        let nothing_reserved = inner.total_allocated_memory == 0;
        inner.history.configure(options, nothing_reserved);
    }
    fn history_enabled(&self) -> bool {
        self.lock().history.enabled
    }
    fn set_memory_fraction(&self, fraction: f64) -> Result<(), AllocError> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(AllocError::Config(format!(
                "invalid memory fraction {fraction}: it must be between 0 and 1"
            )));
        }
        let mut g = self.lock();
        let (_, total) = g
            .memory
            .mem_get_info()
            .map_err(|e| AllocError::from_raw(e, "device memory query"))?;
        g.allowed_memory_maximum = Some((fraction * total as f64) as usize);
        Ok(())
    }
    fn mem_get_info(&self) -> Result<(u64, u64), AllocError> {
        let (free, total) = self
            .lock()
            .memory
            .mem_get_info()
            .map_err(|e| AllocError::from_raw(e, "device memory query"))?;
        Ok((free as u64, total as u64))
    }
    fn device_index(&self) -> usize {
        self.device
    }
    fn set_allocator_settings(&self, settings: &str) -> Result<(), AllocError> {
        self.lock().config.apply(settings)
    }
    fn fail_after(&self, requests: Option<u64>) {
        self.lock().fail_after = requests;
    }
    fn take_oom_diagnosis(&self) -> Option<OomDiagnosis> {
        self.lock().last_oom.take()
    }
    fn timeline(&self) -> Vec<super::Sample> {
        self.lock().roles.timeline()
    }
    fn set_role(&self, ptr: DevicePtr, role: super::Role) {
        self.lock().set_role(ptr, role);
    }
    fn peak_moments(&self) -> super::PeakMoments {
        self.lock().peaks.clone()
    }
    fn take_window_peak(&self) -> u64 {
        let mut inner = self.lock();
        let now = inner.stats.allocated_bytes.all().current;
        let peak = inner.window_peak.max(now);
        inner.window_peak = now;
        peak as u64
    }
}
