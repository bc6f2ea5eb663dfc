//! `:memplot on|off` (`%memplot on`): one memory chart redrawn in place after every input; and the
//! session's allocated bytes after each input, which `:mem` draws as a sparkline.
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
    /// The chart's display id, and whether it has been shown (later ones update it).
    plot: Option<(String, bool)>,
}

/// An input finished: sample the current device, and redraw the chart when it is on.
pub(crate) fn after_input(state: &RefCell<MemPlot>, frontend: &dyn Frontend) {
    let index = device::current_device();
    // Never start a GPU for a session that has not used one.
    let Some(allocator) = device::started_cuda_allocator(index) else {
        return;
    };
    let plot = {
        let mut s = state.borrow_mut();
        if s.samples.len() == SAMPLES {
            s.samples.pop_front();
        }
        s.samples.push_back(allocator.memory_allocated());
        s.plot.clone()
    };
    let Some((id, shown)) = plot else { return };
    // Before the first allocation there is nothing to draw; the chart appears with the first one.
    if let Ok(mut picture) = torchlet_rhai::surface::plot_api::picture(index) {
        picture.display_id = Some(id.clone());
        picture.update = shown;
        frontend.picture(&picture);
        state.borrow_mut().plot = Some((id, true));
    }
}

/// Turn the chart on (recording history on the current device if it was off) or off.
pub(crate) fn switch(state: &RefCell<MemPlot>, on: bool) -> Result<String, String> {
    if !on {
        state.borrow_mut().plot = None;
        return Ok("memory plot off".into());
    }
    let index = device::current_device();
    let allocator = device::cuda_allocator(index).map_err(|_| {
        "memplot: there is no CUDA device; start torchlet with --simulate-cuda to use a simulated one"
            .to_string()
    })?;
    let mut text = format!("memory plot on: cuda:{index}'s chart redraws after every input");
    if !allocator.history_enabled() {
        allocator.record_memory_history(torchlet_alloc::HistoryOptions::default());
        text += " (memory history is now recorded: cuda::record_memory_history(()) stops it)";
    }
    let id = format!("torchlet-memplot-{}", uuid::Uuid::new_v4());
    state.borrow_mut().plot = Some((id, false));
    Ok(text)
}

/// `:mem`'s last line: allocated bytes after each recent input, as a sparkline.
pub(crate) fn sparkline(state: &RefCell<MemPlot>) -> Option<String> {
    let samples: Vec<u64> = state.borrow().samples.iter().copied().collect();
    let peak = samples.iter().copied().max()?;
    Some(format!(
        "allocated after each of the last {} inputs: {} (peak {})",
        samples.len(),
        torchlet_explain::memory_plot::sparkline(&samples),
        torchlet_alloc::format_size(peak)
    ))
}
