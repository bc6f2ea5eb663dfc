//! `plot_memory([device])`: the session's GPU memory over its statements, as a chart in a notebook.
use std::rc::Rc;

use rhai::{Dynamic, Engine};

use super::documented::Documented;
use super::errors::raise;
use crate::{Frontend, Picture};
use torchlet_explain::memory_plot;
use torchlet_explain::memory_timeline::{self, TimelineError};

/// The chart of cuda:`device`'s recorded history, or why there is none.
pub fn picture(device: usize) -> Result<Picture, TimelineError> {
    let timeline = memory_timeline::of_device(device)?;
    let svg = memory_plot::svg(&timeline).unwrap_or_else(|e| e);
    Ok(Picture {
        plain: memory_plot::text(&timeline, 60),
        svg,
        display_id: None,
        update: false,
    })
}

fn show(frontend: &dyn Frontend, device: Option<&Dynamic>) -> Result<(), Box<rhai::EvalAltResult>> {
    let index = match device {
        Some(d) if !d.is_unit() => match super::convert::device_of(d)? {
            torchlet_core::device::Device::Cuda(i) => i,
            other => {
                return Err(super::errors::value_error(format!(
                    "plot_memory: the {other} device's memory is not traced; give a cuda device"
                )))
            }
        },
        _ => torchlet_core::device::current_device(),
    };
    let picture = picture(index).map_err(|e| raise("RuntimeError", format!("plot_memory: {e}")))?;
    frontend.picture(&picture);
    Ok(())
}

/// Register `plot_memory()` and `plot_memory(device)`, showing through `frontend`.
pub(crate) fn register(engine: &mut Engine, frontend: Rc<dyn Frontend>) {
    let out = frontend.clone();
    engine.register_doc(
        "plot_memory",
        &["plot_memory([device]) — chart GPU memory by variable over the recorded statements (SVG in a notebook); needs cuda::record_memory_history()"],
        move || show(&*out, None),
    );
    engine.register_fn("plot_memory", move |d: Dynamic| show(&*frontend, Some(&d)));
}
