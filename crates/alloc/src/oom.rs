//! The out-of-memory error and its message, word for word PyTorch's, with "torchlet" where
//! PyTorch says "PyTorch".

use super::caching::Inner;
use super::error::AllocError;
use super::history::TraceAction;
use super::raw::RawMemory;
use super::size::format_size;
use super::StreamId;

/// Where the message sends the reader for the allocator settings (the settings are PyTorch's).
pub const MEMORY_MANAGEMENT_URL: &str =
    "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf";

/// The numbers an out-of-memory message is made of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OomReport {
    /// The device index.
    pub device: usize,
    /// The segment size asked of the device.
    pub tried: u64,
    /// Total bytes of the device.
    pub total: u64,
    /// Free bytes of the device.
    pub free: u64,
    /// Bytes this process uses on the device, when the memory knows it.
    pub process_in_use: Option<u64>,
    /// The per-process limit, when a memory fraction is set.
    pub allowed: Option<u64>,
    /// `memory_allocated()`.
    pub allocated: u64,
    /// `memory_reserved()`.
    pub reserved: u64,
}

impl OomReport {
    /// The one-line message, part by part as PyTorch concatenates it (note the double spaces).
    pub fn message(&self) -> String {
        let proc_info = self.process_in_use.map_or(String::new(), |b| {
            format!(
                "Including non-torchlet memory, this process has {} memory in use. ",
                format_size(b)
            )
        });
        let allowed_info = self
            .allowed
            .map_or(String::new(), |a| format!("{} allowed; ", format_size(a)));
        format!(
            "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} is free. \
             {proc_info}{allowed_info}Of the allocated memory {} is allocated by torchlet, and {} is reserved \
             by torchlet but unallocated. If reserved but unallocated memory is large try setting \
             TORCHLET_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation \
             for Memory Management  ({MEMORY_MANAGEMENT_URL})",
            format_size(self.tried),
            self.device,
            format_size(self.total),
            format_size(self.free),
            format_size(self.allocated),
            format_size(self.reserved.saturating_sub(self.allocated)),
        )
    }
}

impl<M: RawMemory> Inner<M> {
    /// The final failure of a request: trace `oom`, count it, and build the error.
    ///
    /// Note [Tried to allocate]: the message names `alloc_size`, the segment asked of the device,
    /// not the tensor's size, as PyTorch does; that is why a failing 4 MB tensor reports
    /// "Tried to allocate 20.00 MiB", and why users' messages so often say 20.00 or 2.00 MiB.
    pub fn out_of_memory(
        &mut self,
        stream: StreamId,
        size: usize,
        alloc_size: usize,
    ) -> AllocError {
        let (free, total) = match self.memory.mem_get_info() {
            Ok(info) => info,
            Err(e) => return AllocError::from_raw(e, "device memory query"),
        };
        // Diagnosed before the `oom` entry, so that a replay ends where the device failed.
        self.last_oom = Some(self.diagnose_oom(size));
        self.trace(TraceAction::Oom, free as u64, size, stream, None);
        self.stats.num_ooms += 1;
        let report = OomReport {
            device: self.device,
            tried: alloc_size as u64,
            total: total as u64,
            free: free as u64,
            process_in_use: self.memory.process_memory_in_use().map(|b| b as u64),
            allowed: self.allowed_memory_maximum.map(|a| a as u64),
            allocated: self.stats.allocated_bytes.all().current as u64,
            reserved: self.stats.reserved_bytes.all().current as u64,
        };
        AllocError::OutOfMemory {
            message: report.message(),
            device: self.device,
            tried: report.tried,
            free: report.free,
            total: report.total,
        }
    }
}
