//! `:memplot on|off` (`%memplot on`): the memory chart drawn again after every input, in the
//! output of the input that just ran; and the session's allocated bytes after each input, which
//! `:mem` draws as a sparkline.
use std::cell::RefCell;
use std::collections::VecDeque;

use super::Frontend;
use torchlet_core::device;

/// How many inputs the sparkline remembers.
const SAMPLES: usize = 60;

/// The session's memory samples and chart; kept by the session, one per session.
#[derive(Default)]
pub(crate) struct MemPlot {
    samples: VecDeque<u64>,
    /// The chart's display id while the chart is on.
    plot: Option<String>,
    /// Whether `:memplot on` started the history (so `:memplot off` stops it again).
    started_history: bool,
}

/// An input finished: sample the current device, and redraw the chart when it is on.
pub(crate) fn after_input(state: &RefCell<MemPlot>, frontend: &dyn Frontend) {
    if let Some(picture) = redrawn(state) {
        frontend.picture(&picture);
    }
}

/// An input finished: sample the current device, and the chart to show when it is on.
pub(crate) fn redrawn(state: &RefCell<MemPlot>) -> Option<torchlet_explain::Picture> {
    let index = device::current_device();
    // Never start a GPU for a session that has not used one.
    let allocator = device::started_cuda_allocator(index)?;
    let plot = {
        let mut s = state.borrow_mut();
        if s.samples.len() == SAMPLES {
            s.samples.pop_front();
        }
        s.samples.push_back(allocator.memory_allocated());
        s.plot.clone()
    };
    let id = plot?;
    // Before the first allocation there is nothing to draw; the chart appears with the first one.
    // Note [Chart in the running cell]: each chart is a new display in the output of the input
    // that just ran, where the reader is; updating the first one in place would redraw a cell
    // scrolled out of sight. The shared display id keeps the earlier copies current too.
    let mut picture = torchlet_rhai::surface::plot_api::picture(index).ok()?;
    picture.display_id = Some(id);
    picture.update = false;
    Some(picture)
}

/// Turn the chart on (recording history on the current device if it was off) or off.
pub(crate) fn switch(state: &RefCell<MemPlot>, on: bool) -> Result<String, String> {
    if !on {
        let mut s = state.borrow_mut();
        s.plot = None;
        if std::mem::take(&mut s.started_history) {
            if let Some(allocator) = device::started_cuda_allocator(device::current_device()) {
                let stop = torchlet_alloc::HistoryOptions {
                    enabled: None,
                    ..Default::default()
                };
                allocator.record_memory_history(stop);
                return Ok("memory plot off (and the memory history it recorded)".into());
            }
        }
        return Ok("memory plot off".into());
    }
    let index = device::current_device();
    let allocator = device::cuda_allocator(index).map_err(|_| {
        "memplot: there is no CUDA device; start torchlet with --simulate-cuda to use a simulated one"
            .to_string()
    })?;
    let mut text = format!("memory plot on: cuda:{index}'s chart is drawn after every input");
    let mut s = state.borrow_mut();
    if !allocator.history_enabled() {
        allocator.record_memory_history(torchlet_alloc::HistoryOptions::default());
        s.started_history = true;
        text += " (memory history is recorded from now on; memplot off stops it)";
    }
    s.plot = Some(format!("torchlet-memplot-{}", uuid::Uuid::new_v4()));
    Ok(text)
}

/// `:mem`'s last line: allocated bytes after each recent input, as a sparkline.
pub(crate) fn sparkline(state: &RefCell<MemPlot>) -> Option<String> {
    let samples: Vec<u64> = state.borrow().samples.iter().copied().collect();
    let most = samples.iter().copied().max()?;
    let inputs = match samples.len() {
        1 => "the last input".to_string(),
        n => format!("each of the last {n} inputs"),
    };
    // Not called a peak: the table's peak counts what was allocated while an input ran too.
    Some(format!(
        "allocated after {inputs}: {} (at most {} between inputs)",
        torchlet_explain::memory_plot::sparkline(&samples),
        torchlet_alloc::format_size(most)
    ))
}
