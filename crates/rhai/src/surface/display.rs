//! How a script value is shown: `of_value` picks the richest form torchlet knows for it.
use super::holders_api::FreeReport;
use crate::Exception;
use torchlet_core::tensor::Tensor;
use torchlet_explain::DisplayData;

/// How a value echoes; `None` for `()`.
pub fn of_value(value: &rhai::Dynamic) -> Option<DisplayData> {
    if value.is_unit() {
        return None;
    }
    if let Some(data) = rich(value) {
        return Some(data);
    }
    Some(DisplayData::text(value.to_string()))
}

/// How a value echoes when it has a richer form than Rhai's `to_string`.
fn rich(value: &rhai::Dynamic) -> Option<DisplayData> {
    if let Some(t) = value.read_lock::<Tensor>() {
        return Some(DisplayData::preformatted(t.to_string()));
    }
    if let Some(report) = value.read_lock::<FreeReport>() {
        return Some(report.display());
    }
    if let Some(e) = value.read_lock::<Exception>() {
        return Some(DisplayData::text(e.to_string()));
    }
    None
}
