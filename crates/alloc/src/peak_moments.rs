//! Where the peaks were reached: for the highest allocated and the highest reserved bytes, the
//! statement that was running and the allocator's state at that moment (`torchlet fit` reports them).
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::DevicePtr;

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
    /// The calls that led to that statement, as a traceback lists them ([`crate::site::stack`]).
    pub stack: Option<Arc<str>>,
    /// What the allocated bytes were, by role (Note [roles]).
    pub breakdown: Breakdown,
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

/// What a handed-out block holds, as the layers above tell the allocator (Note [roles]).
///
/// Note [roles]: the allocator sees only sizes; the tensor layer knows that a block is a
/// parameter, a gradient, optimizer state, a tensor saved for backward or a cuBLAS workspace, and
/// says so once it does (`DeviceAllocator::set_role`). A block told two roles keeps the later one
/// in this order (a weight a matmul saves stays a parameter). The bytes per role are kept as
/// running totals, so a peak copies a few numbers, never the block list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Nothing said: a variable's tensor, an intermediate, the statement's temporaries.
    #[default]
    Other,
    /// Saved by an autograd node for backward (an activation).
    Saved,
    /// An optimizer's state (`exp_avg`, `momentum_buffer`).
    OptimizerState,
    /// A leaf's `.grad`.
    Gradient,
    /// A leaf that requires grad (a module's weight).
    Parameter,
    /// A cuBLAS/cuBLASLt handle's workspace.
    Workspace,
}

/// Whether allocators record [`Sample`]s at every request and free (`torchlet fit --report`).
static TIMELINES: AtomicBool = AtomicBool::new(false);

/// Start (or stop) recording every allocator's timeline, for a picture of the whole run.
pub fn record_timelines(on: bool) {
    TIMELINES.store(on, Ordering::Relaxed);
}

/// The memory after one request or free: allocated bytes by role and the reserved bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Bytes per [`Role`]; `Other` includes what the running statement made.
    pub by_role: [u64; ROLES],
    /// Bytes reserved.
    pub reserved: u64,
}

impl RoleBook {
    /// Note the memory now into the timeline, when timelines are recorded.
    pub(crate) fn sample(&mut self, allocated: u64, reserved: u64) {
        if !TIMELINES.load(Ordering::Relaxed) {
            return;
        }
        let mut by_role = self.bytes;
        let placed: u64 = by_role.iter().sum();
        by_role[Role::Other as usize] = allocated.saturating_sub(placed);
        self.timeline.push(Sample { by_role, reserved });
    }

    /// The timeline recorded so far.
    pub(crate) fn timeline(&self) -> Vec<Sample> {
        self.timeline.clone()
    }
}

/// How many roles there are (the length of [`PeakMoment::by_role`]).
pub const ROLES: usize = 6;

/// The running totals behind the breakdown at a peak.
#[derive(Clone, Debug, Default)]
pub(crate) struct RoleBook {
    /// Blocks told a role other than `Other`: their role and size.
    of: HashMap<DevicePtr, (Role, u64)>,
    /// Bytes per role (the `Other` slot stays 0: it is allocated less the rest).
    bytes: [u64; ROLES],
    /// Bytes saved for backward, by the statement that made them.
    saved_by_site: HashMap<Option<Arc<str>>, u64>,
    /// The statement run (see `site::run`) whose blocks `run_blocks` holds.
    run: u64,
    /// Blocks of no role that the running statement made, and their bytes.
    run_blocks: HashMap<DevicePtr, u64>,
    run_bytes: u64,
    /// The memory after each request and free, when timelines are recorded.
    timeline: Vec<Sample>,
}

impl RoleBook {
    /// A block was handed out for the statement run `run`.
    pub(crate) fn allocated(&mut self, ptr: DevicePtr, size: u64, run: u64) {
        if run != self.run {
            self.run = run;
            self.run_blocks.clear();
            self.run_bytes = 0;
        }
        self.run_blocks.insert(ptr, size);
        self.run_bytes += size;
    }

    /// A block was taken back; `site` is the statement that made it.
    pub(crate) fn freed(&mut self, ptr: DevicePtr, site: Option<&Arc<str>>) {
        if let Some(size) = self.run_blocks.remove(&ptr) {
            self.run_bytes -= size;
        }
        if let Some((role, size)) = self.of.remove(&ptr) {
            self.take(role, size, site);
        }
    }

    /// Block `ptr` (of `size` bytes, made by `site`) holds `role` (Note [roles]).
    pub(crate) fn set(&mut self, ptr: DevicePtr, size: u64, role: Role, site: Option<&Arc<str>>) {
        let old = self.of.get(&ptr).map_or(Role::Other, |r| r.0);
        if role <= old {
            return;
        }
        if old != Role::Other {
            self.take(old, size, site);
        } else if let Some(size) = self.run_blocks.remove(&ptr) {
            self.run_bytes -= size;
        }
        self.of.insert(ptr, (role, size));
        self.bytes[role as usize] += size;
        if role == Role::Saved {
            *self.saved_by_site.entry(site.cloned()).or_default() += size;
        }
    }

    fn take(&mut self, role: Role, size: u64, site: Option<&Arc<str>>) {
        self.bytes[role as usize] -= size;
        if role == Role::Saved {
            let key = site.cloned();
            if let Some(b) = self.saved_by_site.get_mut(&key) {
                *b -= size;
                if *b == 0 {
                    self.saved_by_site.remove(&key);
                }
            }
        }
    }

    /// The totals now, with `allocated` bytes handed out in all.
    pub(crate) fn breakdown(&self, allocated: u64) -> Breakdown {
        let mut by_role = self.bytes;
        let placed: u64 = by_role.iter().sum();
        by_role[Role::Other as usize] = allocated.saturating_sub(placed + self.run_bytes);
        let mut saved_by_site: Vec<(Option<Arc<str>>, u64)> = self
            .saved_by_site
            .iter()
            .map(|(s, b)| (s.clone(), *b))
            .collect();
        saved_by_site.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Breakdown {
            by_role,
            statement: self.run_bytes,
            saved_by_site,
        }
    }
}

/// What the allocated bytes were at one moment, by role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Bytes per [`Role`] (indexed by `Role as usize`); `Other` leaves out `statement`.
    pub by_role: [u64; ROLES],
    /// Bytes of no role that the statement running made (its temporaries and its result so far).
    pub statement: u64,
    /// Bytes saved for backward, by the statement that made them, largest first.
    pub saved_by_site: Vec<(Option<Arc<str>>, u64)>,
}

impl Breakdown {
    /// Bytes of `role`.
    pub fn of(&self, role: Role) -> u64 {
        self.by_role[role as usize]
    }
}
