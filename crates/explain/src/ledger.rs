//! The per-line ledger (`torchlet run --ledger`, `:ledger`, `%%ledger`): for each source line,
//! how often it ran, the net change in allocated and reserved memory, the peak while it ran, and
//! the segments it created and released, as line_profiler does for time.
//!
//! The rewrite marks every statement with `__line(LINE, COLUMN)`; each mark closes the interval
//! the previous mark opened and charges it to that line. A line runs once each time control
//! comes to it: a mark further right on the line that is open (the next statement of
//! `a = 1; b = 2`, a block inside a string's `${…}`) continues the run, and a mark at the same
//! column or left of it (a one-line loop's next pass) starts a new one. The peak comes from the allocator's own window
//! (`take_window_peak`), so `max_memory_allocated()` is not reset.
use std::collections::BTreeMap;

use crate::bytes::human_bytes;
use crate::DisplayData;

/// What one line did, summed over its runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineStats {
    /// How many times the line ran (not how many statements on it were evaluated).
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
    /// Bytes of cuBLAS workspace its statements took (allocated once, held by no tensor).
    pub workspace: u64,
}

#[derive(Clone, Copy, Default)]
struct Sample {
    allocated: i64,
    reserved: i64,
    created: i64,
    released: i64,
    workspace: u64,
}

/// The ledger of one device while it is kept: each line's figures, and the line running now.
#[derive(Default)]
pub struct Ledger {
    device: usize,
    lines: BTreeMap<usize, LineStats>,
    /// The line of the statement running now, its column, and the figures when it started.
    open: Option<(usize, usize, Sample)>,
}

fn sample(device: usize) -> Option<Sample> {
    let a = torchlet_core::device::cuda_allocator(device).ok()?;
    let stats = a.memory_stats();
    Some(Sample {
        allocated: a.memory_allocated() as i64,
        reserved: a.memory_reserved() as i64,
        created: stats.get("segment.all.allocated").copied().unwrap_or(0),
        released: stats.get("segment.all.freed").copied().unwrap_or(0),
        workspace: torchlet_core::device::blas_workspaces()
            .into_iter()
            .filter(|(index, _)| *index == device)
            .flat_map(|(_, w)| w)
            .map(|w| w.bytes)
            .sum(),
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

    /// A statement at `line`, `column` is about to run.
    pub fn on_statement(&mut self, line: usize, column: usize) {
        let continues = matches!(self.open, Some((l, c, _)) if l == line && column > c);
        self.close();
        if let Some(now) = sample(self.device) {
            if !continues {
                self.lines.entry(line).or_default().runs += 1;
            }
            self.open = Some((line, column, now));
        }
    }

    /// Control came back to `line` in the middle of its run (a call on it returned from lines of
    /// its own): what follows is charged to it again, without counting another run.
    pub fn resume(&mut self, line: usize) {
        self.close();
        if let Some(now) = sample(self.device) {
            self.lines.entry(line).or_default();
            self.open = Some((line, 0, now));
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
        let Some((line, _, then)) = self.open.take() else {
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
        stats.workspace += now.workspace.saturating_sub(then.workspace);
    }
}

/// Bytes as the table shows them: exact, with MiB (or KiB, GiB) beside them from 1 KiB on.
fn cell(bytes: i64) -> String {
    match bytes.unsigned_abs() < 1024 {
        true => bytes.to_string(),
        false => {
            let sign = if bytes < 0 { "-" } else { "" };
            format!("{bytes} ({sign}{})", human_bytes(bytes.unsigned_abs()))
        }
    }
}

/// The ledger as a table beside the source lines, then what its columns mean and which lines
/// took a cuBLAS workspace.
pub fn table(lines: &BTreeMap<usize, LineStats>, code: &str) -> DisplayData {
    let cells: Vec<(usize, [String; 6], &str)> = lines
        .iter()
        .map(|(line, s)| {
            let text = code.lines().nth(line - 1).unwrap_or("").trim();
            let figures = [
                s.runs.to_string(),
                cell(s.allocated),
                cell(s.reserved),
                cell(s.peak as i64),
                s.created.to_string(),
                s.released.to_string(),
            ];
            (*line, figures, text)
        })
        .collect();
    let header = ["runs", "Δallocated", "Δreserved", "peak", "+seg", "-seg"];
    let widths: Vec<usize> = (0..6)
        .map(|i| {
            let widest = cells
                .iter()
                .map(|c| c.1[i].chars().count())
                .max()
                .unwrap_or(0);
            widest.max(header[i].chars().count())
        })
        .collect();
    let row = |first: String, cols: &[String], text: &str| {
        let cols: Vec<String> = cols
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!("{first:>5} {}  {text}\n", cols.join(" "))
    };
    let header_cells: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut plain = row("line".into(), &header_cells, "source");
    let mut rows = String::new();
    for (line, figures, text) in &cells {
        plain += &row(line.to_string(), figures, text);
        let tds: String = figures.iter().map(|f| format!("<td>{f}</td>")).collect();
        rows += &format!(
            "<tr><td>{line}</td>{tds}<td style=\"text-align:left\"><code>{}</code></td></tr>",
            text.replace('&', "&amp;").replace('<', "&lt;")
        );
    }
    let notes = notes(lines);
    plain += &notes.join("\n");
    let html_notes: String = notes
        .iter()
        .map(|n| format!("<p>{}</p>", n.replace('&', "&amp;").replace('<', "&lt;")))
        .collect();
    let html = format!(
        "<table><thead><tr><th>line</th><th>runs</th><th>Δallocated</th><th>Δreserved</th>\
         <th>peak</th><th>+seg</th><th>-seg</th><th style=\"text-align:left\">source</th></tr></thead>\
         <tbody>{rows}</tbody></table>{html_notes}"
    );
    DisplayData {
        plain: plain.trim_end().to_string(),
        html: Some(html),
    }
}

/// What the columns mean, and the lines whose Δallocated is (partly) a cuBLAS workspace.
fn notes(lines: &BTreeMap<usize, LineStats>) -> Vec<String> {
    let mut notes = vec![
        "Δallocated, Δreserved and ±seg are summed over a line's runs; peak is the most \
         allocated at once while it ran"
            .to_string(),
    ];
    for (line, s) in lines.iter().filter(|(_, s)| s.workspace > 0) {
        notes.push(format!(
            "line {line}: {} of its Δallocated is the cuBLAS workspace its first matrix product \
             took: allocated once, held by no tensor, never freed (PyTorch keeps it too)",
            cell(s.workspace as i64)
        ));
    }
    notes
}
