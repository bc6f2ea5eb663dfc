//! The per-line ledger (`torchlet run --ledger`, `:ledger`, `%%ledger`): for each source line,
//! how often it ran, the net change in allocated and reserved memory, the peak while it ran, and
//! the segments it created and released, as line_profiler does for time.
//!
//! The rewrite marks every statement with `__line(N)`; each mark closes the interval the previous
//! mark opened and charges it to that line. The peak comes from the allocator's own window
//! (`take_window_peak`), so `max_memory_allocated()` is not reset.
use std::collections::BTreeMap;

use crate::DisplayData;

/// What one line did, summed over its runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// How many times the line started.
    pub runs: u64,
    /// Net change of `memory_allocated()` while it ran.
    pub allocated: i64,
    /// Net change of `memory_reserved()` while it ran.
    pub reserved: i64,
    /// The most bytes allocated at once while it ran.
    pub peak: u64,
    /// Segments it created.
    pub created: i64,
    /// Segments it released.
    pub released: i64,
}

#[derive(Clone, Copy, Default)]
struct Sample {
    allocated: i64,
    reserved: i64,
    created: i64,
    released: i64,
}

/// The ledger of one device while it is kept: each line's figures, and the line running now.
#[derive(Default)]
pub struct Ledger {
    device: usize,
    lines: BTreeMap<usize, LineStats>,
    open: Option<(usize, Sample)>,
}

fn sample(device: usize) -> Option<Sample> {
    let a = torchlet_core::device::cuda_allocator(device).ok()?;
    let stats = a.memory_stats();
    Some(Sample {
        allocated: a.memory_allocated() as i64,
        reserved: a.memory_reserved() as i64,
        created: stats.get("segment.all.allocated").copied().unwrap_or(0),
        released: stats.get("segment.all.freed").copied().unwrap_or(0),
    })
}

impl Ledger {
    /// Start keeping the ledger of cuda:`device`.
    pub fn start(device: usize) -> Ledger {
        if let Ok(a) = torchlet_core::device::cuda_allocator(device) {
            a.take_window_peak();
        }
        Ledger {
            device,
            ..Default::default()
        }
    }

    /// A statement on `line` is about to run.
    pub fn on_line(&mut self, line: usize) {
        self.close();
        if let Some(now) = sample(self.device) {
            self.lines.entry(line).or_default().runs += 1;
            self.open = Some((line, now));
        }
    }

    /// Stop keeping the ledger and hand over its lines.
    pub fn finish(mut self) -> BTreeMap<usize, LineStats> {
        self.close();
        self.lines
    }
}

impl Ledger {
    /// Charge what happened since the open mark to its line.
    fn close(&mut self) {
        let Some((line, then)) = self.open.take() else {
            return;
        };
        let Some(now) = sample(self.device) else {
            return;
        };
        let peak = torchlet_core::device::cuda_allocator(self.device)
            .map(|a| a.take_window_peak())
            .unwrap_or(0);
        let stats = self.lines.entry(line).or_default();
        stats.allocated += now.allocated - then.allocated;
        stats.reserved += now.reserved - then.reserved;
        stats.created += now.created - then.created;
        stats.released += now.released - then.released;
        stats.peak = stats.peak.max(peak);
    }
}

/// The ledger as a table beside the source lines.
pub fn table(lines: &BTreeMap<usize, LineStats>, code: &str) -> DisplayData {
    let mut plain = format!(
        "{:>5} {:>7} {:>13} {:>13} {:>13} {:>5} {:>5}  source\n",
        "line", "runs", "Δallocated", "Δreserved", "peak", "+seg", "-seg"
    );
    let mut rows = String::new();
    for (line, s) in lines {
        let text = code.lines().nth(line - 1).unwrap_or("").trim();
        plain += &format!(
            "{line:>5} {:>7} {:>13} {:>13} {:>13} {:>5} {:>5}  {text}\n",
            s.runs, s.allocated, s.reserved, s.peak, s.created, s.released
        );
        rows += &format!(
            "<tr><td>{line}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            s.runs,
            s.allocated,
            s.reserved,
            s.peak,
            s.created,
            s.released,
            text.replace('&', "&amp;").replace('<', "&lt;")
        );
    }
    let html = format!(
        "<table><thead><tr><th>line</th><th>runs</th><th>Δallocated</th><th>Δreserved</th>\
         <th>peak</th><th>+seg</th><th>-seg</th><th>source</th></tr></thead><tbody>{rows}</tbody></table>"
    );
    DisplayData {
        plain: plain.trim_end().to_string(),
        html: Some(html),
    }
}
