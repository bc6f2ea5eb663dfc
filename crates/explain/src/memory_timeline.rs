//! The memory timeline behind `plot_memory()`: allocated bytes by variable and reserved bytes after
//! each statement run, replayed from the allocator's recorded history of one device.
use std::collections::HashMap;

use crate::statement_names::Namer;
use torchlet_alloc::{DeviceAllocator, TraceAction, TraceEntry, MIN_BLOCK_SIZE};

/// The legend entry of bytes allocated before history began.
pub const BEFORE: &str = "(before history)";
/// The legend entry of bytes whose statement assigns no variable.
pub const UNNAMED: &str = "(no variable)";
/// The legend entry that gathers the variables past the largest few.
pub const OTHER: &str = "(other)";
/// How many variables get a band of their own.
const BANDS: usize = 8;

/// Memory after one statement run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Where the statement is: `L12`, or `[5] L2` for line 2 of a notebook's cell `In[5]` (`?`
    /// for untagged allocations).
    pub label: String,
    /// Allocated bytes per variable, in [`Timeline::variables`] order.
    pub by_variable: Vec<u64>,
    /// Reserved bytes.
    pub reserved: u64,
    /// Segments created during the run.
    pub created: u32,
    /// Segments released during the run.
    pub released: u32,
}

/// A device's memory over the statements that touched it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The CUDA device index.
    pub device: usize,
    /// Legend names, bottom band first.
    pub variables: Vec<String>,
    /// One per statement run that allocated, freed or moved segments, oldest first.
    pub steps: Vec<Step>,
    /// The device's total memory.
    pub capacity: u64,
}

/// Why there is nothing to plot, worded for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimelineError {
    /// No CUDA device, real or simulated.
    NoDevice,
    /// History is off on the device.
    HistoryOff(usize),
    /// History is on but nothing happened on the device.
    NoActivity(usize),
}

impl std::fmt::Display for TimelineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimelineError::NoDevice => write!(
                f,
                "there is no CUDA device; start torchlet with --simulate-cuda to use a simulated one"
            ),
            TimelineError::HistoryOff(d) => write!(
                f,
                "memory history is off on cuda:{d}: call cuda::record_memory_history() before the \
                 code to plot (in a notebook, %memplot on does it and redraws after every cell)"
            ),
            TimelineError::NoActivity(d) => write!(
                f,
                "no GPU memory activity on cuda:{d} since history was turned on: nothing to plot yet"
            ),
        }
    }
}

/// The block a request of `requested` bytes gets under the default rounding (what `memory_allocated` counts).
fn block_size(requested: u64) -> u64 {
    let unit = MIN_BLOCK_SIZE as u64;
    requested.div_ceil(unit).max(1) * unit
}

/// Whether `e` starts a new step after `previous`: another statement, or frees after allocations
/// (a free carries its block's statement, so a statement's peak would otherwise be lost).
fn starts_step(e: &TraceEntry, previous: Option<&TraceEntry>) -> bool {
    let freeing = |e: &TraceEntry| e.action == TraceAction::FreeRequested;
    previous.is_none_or(|p| p.tag != e.tag || (freeing(e) && !freeing(p)))
}

/// A statement's place on the chart's axis: the cell (`In[5]` is `[5]`) and the line.
fn place(n: &crate::statement_names::Named) -> String {
    match n.file.strip_prefix("In[") {
        Some(cell) => format!("[{cell} L{}", n.line),
        None => format!("L{}", n.line),
    }
}

/// The timeline of cuda:`device` from its recorded history.
pub fn of_device(device: usize) -> Result<Timeline, TimelineError> {
    if device >= torchlet_core::device::cuda_device_count() {
        return Err(TimelineError::NoDevice);
    }
    let Some(allocator) = torchlet_core::device::started_cuda_allocator(device) else {
        return Err(TimelineError::NoActivity(device));
    };
    if !allocator.history_enabled() {
        return Err(TimelineError::HistoryOff(device));
    }
    let trace = allocator.snapshot().device_traces.concat();
    if trace.is_empty() {
        return Err(TimelineError::NoActivity(device));
    }
    Ok(replay(&trace, &*allocator, device))
}

/// Replay `trace`, anchored so that the last step shows what the allocator holds now.
fn replay(trace: &[TraceEntry], allocator: &dyn DeviceAllocator, device: usize) -> Timeline {
    let mut namer = Namer::new(trace.iter().filter_map(|e| e.tag.as_deref()));
    let mut names: Vec<String> = vec![BEFORE.into()];
    let mut index: HashMap<String, usize> = HashMap::from([(BEFORE.to_string(), 0)]);
    let mut live: HashMap<u64, (usize, u64)> = HashMap::new();
    let (mut bytes, mut reserved, mut steps) = (vec![0i64], 0i64, Vec::<(Step, Vec<i64>)>::new());
    let mut previous = None;
    for e in trace {
        if starts_step(e, previous) {
            let label = namer
                .name(e.tag.as_deref())
                .map_or("?".into(), |n| place(&n));
            steps.push((
                Step {
                    label,
                    ..Step::default()
                },
                Vec::new(),
            ));
        }
        previous = Some(e);
        let step = &mut steps.last_mut().unwrap().0;
        let size = e.size as i64;
        match e.action {
            TraceAction::Alloc => {
                let name = namer
                    .name(e.tag.as_deref())
                    .and_then(|n| n.variable)
                    .unwrap_or_else(|| UNNAMED.into());
                let next = names.len();
                let i = *index.entry(name.clone()).or_insert_with(|| {
                    names.push(name);
                    next
                });
                bytes.resize(names.len(), 0);
                let rounded = block_size(e.size);
                live.insert(e.addr, (i, rounded));
                bytes[i] += rounded as i64;
            }
            TraceAction::FreeRequested => {
                let (i, rounded) = live.remove(&e.addr).unwrap_or((0, block_size(e.size)));
                bytes[i] -= rounded as i64;
            }
            TraceAction::SegmentAlloc | TraceAction::SegmentMap => {
                reserved += size;
                step.created += 1;
            }
            TraceAction::SegmentFree | TraceAction::SegmentUnmap => {
                reserved -= size;
                step.released += 1;
            }
            _ => {}
        }
        let last = steps.last_mut().unwrap();
        last.0.reserved = reserved as u64;
        last.1 = bytes.clone();
    }
    // What the trace does not explain was there before it began: lift every step by that much.
    let allocated_then = allocator.memory_allocated() as i64 - bytes.iter().sum::<i64>();
    let reserved_then = allocator.memory_reserved() as i64 - reserved;
    let capacity = allocator.mem_get_info().map_or(0, |(_, total)| total);
    let steps = steps
        .into_iter()
        .map(|(mut step, mut by)| {
            by.resize(names.len(), 0);
            by[0] += allocated_then;
            step.reserved = (step.reserved as i64 + reserved_then).max(0) as u64;
            step.by_variable = by.into_iter().map(|b| b.max(0) as u64).collect();
            step
        })
        .collect();
    bands(Timeline {
        device,
        variables: names,
        steps,
        capacity,
    })
}

/// Keep the largest variables (by peak) as bands of their own, gather the rest, drop empty ones.
fn bands(mut t: Timeline) -> Timeline {
    let peak = |i: usize| t.steps.iter().map(|s| s.by_variable[i]).max().unwrap_or(0);
    let mut order: Vec<usize> = (0..t.variables.len()).filter(|&i| peak(i) > 0).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(peak(i)));
    let (kept, rest) = order.split_at(order.len().min(BANDS));
    let mut kept = kept.to_vec();
    kept.sort();
    let mut variables: Vec<String> = kept.iter().map(|&i| t.variables[i].clone()).collect();
    if !rest.is_empty() {
        variables.push(OTHER.into());
    }
    for step in &mut t.steps {
        let mut by: Vec<u64> = kept.iter().map(|&i| step.by_variable[i]).collect();
        if !rest.is_empty() {
            by.push(rest.iter().map(|&i| step.by_variable[i]).sum());
        }
        step.by_variable = by;
    }
    t.variables = variables;
    t
}
