//! The variables the debugger's panel lists, in Debug Adapter Protocol form: tensors with shape, dtype, device and bytes, and a tensor's block drawn in its segment.
use serde_json::{json, Value};

use super::memory::human;
use super::Session;
use torchlet_alloc::{BlockInfo, SegmentInfo};
use torchlet_core::device::{self, Device};
use torchlet_core::tensor::Tensor;

/// A variable as the panel lists it, whatever the language: a tensor (expandable into its
/// fields, drawn in its segment), or another value's text and type.
#[derive(Clone, Debug)]
pub enum PanelEntry {
    /// A tensor.
    Tensor(Tensor),
    /// Anything else: its one-line text and its type's name.
    Other {
        /// The value as the language prints it.
        text: String,
        /// Its type's name.
        kind: String,
    },
}

/// The body of `inspectVariables`: every variable, tensors expandable into their fields.
pub fn inspect_variables(session: &Session) -> Value {
    let entries = rhai_entries(session);
    *session.panel_listed.borrow_mut() = entries.iter().map(|(n, _)| n.clone()).collect();
    inspect_entries(&entries)
}

/// The body of `inspectVariables` for `entries`; entry `i` (from 0) is `variablesReference` `i + 1`.
pub fn inspect_entries(entries: &[(String, PanelEntry)]) -> Value {
    let listed: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(i, (name, entry))| match entry {
            // JupyterLab's tree view shows a name and its type, cut at the sidebar's edge: the
            // type carries the summary, the size first so the default width still shows it.
            PanelEntry::Tensor(t) => variable(name, &summary(t), &summary(t), i + 1),
            PanelEntry::Other { text, kind } => variable(name, text, kind, 0),
        })
        .collect();
    json!({ "variables": listed })
}

fn rhai_entries(session: &Session) -> Vec<(String, PanelEntry)> {
    session
        .variables()
        .into_iter()
        .map(|(name, value)| {
            let entry = match value.read_lock::<Tensor>() {
                Some(t) => PanelEntry::Tensor(t.clone()),
                None => PanelEntry::Other {
                    text: value.to_string(),
                    kind: value.type_name().to_string(),
                },
            };
            (name, entry)
        })
        .collect()
}

/// The body of `variables`: the fields of the tensor behind `reference`.
pub fn variables(session: &Session, reference: i64) -> Result<Value, String> {
    let name = usize::try_from(reference - 1)
        .ok()
        .and_then(|i| session.panel_listed.borrow().get(i).cloned())
        .ok_or_else(|| format!("no variable has variablesReference {reference}"))?;
    Ok(tensor_fields(&tensor_named(session, &name)?))
}

/// The body of `variables` for one tensor: shape, dtype, device, bytes, its block.
pub fn tensor_fields(tensor: &Tensor) -> Value {
    let block = block_of(tensor).map(|(_, b)| b);
    let mut fields = vec![
        ("shape", format!("{:?}", tensor.shape())),
        ("dtype", tensor.dtype().name().to_string()),
        ("device", tensor.device().to_string()),
        ("bytes", tensor.nbytes().to_string()),
        ("requires_grad", tensor.requires_grad().to_string()),
    ];
    if let Some(block) = block {
        fields.push(("block", format!("{} B at {:#x}", block.size, block.address)));
    }
    let listed: Vec<Value> = fields
        .into_iter()
        .map(|(field, text)| variable(field, &text, "str", 0))
        .collect();
    json!({ "variables": listed })
}

/// The body of `richInspectVariables`: text, and HTML showing the tensor's block in its segment.
pub fn rich_inspect(session: &Session, name: &str) -> Result<Value, String> {
    let entries = rhai_entries(session);
    let entry = entries
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, e)| e)
        .ok_or_else(|| format!("name '{name}' is not defined"))?;
    Ok(rich_entry(name, entry))
}

/// The body of `richInspectVariables` for one entry.
pub fn rich_entry(name: &str, entry: &PanelEntry) -> Value {
    let tensor = match entry {
        PanelEntry::Tensor(t) => t,
        PanelEntry::Other { text, .. } => {
            let html = format!("<pre>{}</pre>", escape(text));
            return json!({ "data": { "text/plain": text, "text/html": html }, "metadata": {} });
        }
    };
    let text = format!("{name}: {}", summary(tensor));
    let html = match block_of(tensor) {
        Some((segment, block)) => segment_html(name, tensor, &segment, &block),
        None => format!(
            "<p class=\"torchlet-block\">{}: on {}, outside the caching allocator</p>",
            escape(&text),
            tensor.device()
        ),
    };
    json!({ "data": { "text/plain": text, "text/html": html }, "metadata": {} })
}

/// One protocol Variable.
fn variable(name: &str, value: &str, kind: &str, reference: usize) -> Value {
    json!({
        "name": name,
        "value": value,
        "type": kind,
        "evaluateName": name,
        "variablesReference": reference,
    })
}

/// `3.81 MiB Tensor [1000, 1000] float32 cuda:0`: what the panel shows for a tensor, size first.
pub fn summary(t: &Tensor) -> String {
    format!(
        "{} Tensor {:?} {} {}",
        human(t.nbytes() as u64),
        t.shape(),
        t.dtype().name(),
        t.device(),
    )
}

fn tensor_named(session: &Session, name: &str) -> Result<Tensor, String> {
    let value = session
        .variables()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .ok_or_else(|| format!("name '{name}' is not defined"))?;
    let tensor = value.read_lock::<Tensor>().map(|t| t.clone());
    tensor.ok_or_else(|| format!("{name} is not a tensor"))
}

/// The allocator segment and block holding `t`'s storage, when it lives on a CUDA device.
fn block_of(t: &Tensor) -> Option<(SegmentInfo, BlockInfo)> {
    let Device::Cuda(index) = t.device() else {
        return None;
    };
    let ptr = t.storage_ptr();
    let snapshot = device::cuda_allocator(index).ok()?.snapshot();
    snapshot.segments.into_iter().find_map(|segment| {
        let block = segment.blocks.iter().find(|b| b.address == ptr)?.clone();
        Some((segment, block))
    })
}

/// The segment as a bar of its blocks, each as wide as its share, the tensor's own outlined.
fn segment_html(name: &str, t: &Tensor, segment: &SegmentInfo, block: &BlockInfo) -> String {
    let total = segment.total_size.max(1) as f64;
    let mut bar = String::new();
    for b in &segment.blocks {
        let width = (b.size as f64 / total * 100.0).max(0.5);
        let (color, title) = match (b.address == block.address, b.state) {
            (true, _) => ("#e8710a", format!("{name}: {} B", b.size)),
            (false, "inactive") => ("#dddddd", format!("free: {} B", b.size)),
            (false, state) => ("#4285f4", format!("{state}: {} B", b.size)),
        };
        let outline = if b.address == block.address {
            "outline:2px solid #000;"
        } else {
            ""
        };
        bar += &format!(
            "<div class=\"torchlet-block{}\" title=\"{}\" style=\"width:{width:.2}%;background:{color};{outline}\"></div>",
            if b.address == block.address { " torchlet-this-block" } else { "" },
            escape(&title)
        );
    }
    format!(
        "<div class=\"torchlet-segment-view\"><p><b>{}</b>: {:?} {} on {}: block of {} at offset {} \
         of a {} {} segment ({} blocks)</p>\
         <div style=\"display:flex;height:28px;border:1px solid #888;width:100%\">{bar}</div></div>",
        escape(name),
        t.shape(),
        t.dtype().name(),
        t.device(),
        human(block.size),
        block.address - segment.address,
        human(segment.total_size),
        segment.segment_type,
        segment.blocks.len(),
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
