//! Where the peaks were reached: for the highest allocated and the highest reserved bytes, the
//! statement that was running and the allocator's state at that moment (`torchlet fit` reports them).
use std::sync::Arc;

/// The allocator at one moment: bytes, segments and the statement running.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeakMoment {
    /// Bytes allocated (handed out in blocks) then.
    pub allocated: u64,
    /// Bytes reserved from the device then.
    pub reserved: u64,
    /// Segments held then.
    pub segments: u64,
    /// The statement that made the request (`FILE:LINE:COL: text`), when a script named one.
    pub site: Option<Arc<str>>,
}

impl PeakMoment {
    /// The share of reserved bytes that no block holds (0 when nothing is reserved).
    pub fn fragmentation(&self) -> f64 {
        if self.reserved == 0 {
            return 0.0;
        }
        (self.reserved - self.allocated.min(self.reserved)) as f64 / self.reserved as f64
    }
}

/// The moments of the allocated and the reserved peaks since the last peak reset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeakMoments {
    /// When `max_memory_allocated` was reached.
    pub allocated: PeakMoment,
    /// When `max_memory_reserved` was reached.
    pub reserved: PeakMoment,
}

impl PeakMoments {
    /// Note the state after a request was served; keeps each moment whose peak it beats.
    /// Reserved memory grows only inside a request, so checking here sees every reserved peak.
    pub(crate) fn observe(&mut self, now: PeakMoment) {
        if now.reserved > self.reserved.reserved {
            self.reserved = now.clone();
        }
        if now.allocated > self.allocated.allocated {
            self.allocated = now;
        }
    }

    /// Start again from the present state (`reset_peak_memory_stats`).
    pub(crate) fn reset(&mut self, now: PeakMoment) {
        self.allocated = now.clone();
        self.reserved = now;
    }
}
