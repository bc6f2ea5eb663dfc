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
    Some(DisplayData::text(repr(value)))
}

/// `value` as `print` shows it, containers included: tensors, optimizers and their state as
/// PyTorch prints them inside a list or a map, never a Rust type's name (which is what
/// `Dynamic`'s own `Display` falls back to for a type it does not know).
pub fn repr(value: &rhai::Dynamic) -> String {
    let composite = value.is::<Tensor>()
        || value.is_array()
        || value.is_map()
        || super::optim_module::repr(value).is_some();
    match composite {
        true => item(value),
        false => value.to_string(),
    }
}

/// A value inside a container: strings quoted, as Rhai's `to_debug` does.
fn item(value: &rhai::Dynamic) -> String {
    if let Some(t) = value.read_lock::<Tensor>() {
        return t.to_string();
    }
    if let Some(items) = value.read_lock::<rhai::Array>() {
        let items: Vec<String> = items.iter().map(item).collect();
        return format!("[{}]", items.join(", "));
    }
    if let Some(map) = value.read_lock::<rhai::Map>() {
        let members: Vec<String> = map
            .iter()
            .map(|(k, v)| format!("{:?}: {}", k.as_str(), item(v)))
            .collect();
        return format!("#{{{}}}", members.join(", "));
    }
    if let Some(s) = value.read_lock::<rhai::ImmutableString>() {
        return format!("{:?}", s.as_str());
    }
    if let Some(text) = super::optim_module::repr(value) {
        return text;
    }
    if let Some(report) = value.read_lock::<FreeReport>() {
        return report.display().plain;
    }
    if let Some(e) = value.read_lock::<Exception>() {
        return e.to_string();
    }
    if value.is_fnptr() {
        return value.to_string();
    }
    // Numbers, `()` and booleans as Rhai's `to_debug` writes them inside a container (`-0.0`, `()`).
    format!("{value:?}")
}

/// How a value echoes when it has a richer form than Rhai's `to_string`.
fn rich(value: &rhai::Dynamic) -> Option<DisplayData> {
    if let Some(t) = value.read_lock::<Tensor>() {
        return Some(DisplayData::preformatted(t.to_string()));
    }
    if let Some(report) = value.read_lock::<FreeReport>() {
        return Some(report.display());
    }
    if let Some(table) = super::holders_api::holders_display(value) {
        return Some(table);
    }
    if let Some(e) = value.read_lock::<Exception>() {
        return Some(DisplayData::text(e.to_string()));
    }
    None
}
