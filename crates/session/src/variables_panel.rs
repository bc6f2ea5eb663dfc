//! The variables the debugger's panel lists, in Debug Adapter Protocol form: tensors with shape, dtype, device and bytes, and a tensor's block drawn in its segment.
use serde_json::{json, Value};

use super::memory::human;
use super::Session;
use torchlet_alloc::{BlockInfo, SegmentInfo};
use torchlet_core::device::{self, Device};
use torchlet_core::tensor::Tensor;

/// The body of `inspectVariables`: every variable, tensors expandable into their fields.
pub fn inspect_variables(session: &Session) -> Value {
    let variables = session.variables();
    *session.panel_listed.borrow_mut() = variables.iter().map(|(n, _)| n.clone()).collect();
    let listed: Vec<Value> = variables
        .iter()
        .enumerate()
        .map(|(i, (name, value))| match value.read_lock::<Tensor>() {
            // JupyterLab's tree view shows a name and its type, cut at the sidebar's edge: the
            // type carries the summary, the size first so the default width still shows it.
            Some(t) => variable(name, &summary(&t), &summary(&t), i + 1),
            None => variable(name, &value.to_string(), value.type_name(), 0),
        })
        .collect();
    json!({ "variables": listed })
}

/// The body of `variables`: the fields of the tensor behind `reference`.
pub fn variables(session: &Session, reference: i64) -> Result<Value, String> {
    let name = usize::try_from(reference - 1)
        .ok()
        .and_then(|i| session.panel_listed.borrow().get(i).cloned())
        .ok_or_else(|| format!("no variable has variablesReference {reference}"))?;
    let tensor = tensor_named(session, &name)?;
    let block = block_of(&tensor).map(|(_, b)| b);
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
    Ok(json!({ "variables": listed }))
}

/// The body of `richInspectVariables`: text, and HTML showing the tensor's block in its segment.
pub fn rich_inspect(session: &Session, name: &str) -> Result<Value, String> {
    let value = session
        .variables()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .ok_or_else(|| format!("name '{name}' is not defined"))?;
    let Some(tensor) = value.read_lock::<Tensor>().map(|t| t.clone()) else {
        let text = value.to_string();
        let html = format!("<pre>{}</pre>", escape(&text));
        return Ok(json!({ "data": { "text/plain": text, "text/html": html }, "metadata": {} }));
    };
    let text = format!("{name}: {}", summary(&tensor));
    let html = match block_of(&tensor) {
        Some((segment, block)) => segment_html(name, &tensor, &segment, &block),
        None => format!(
            "<p class=\"torchlet-block\">{}: on {}, outside the caching allocator</p>",
            escape(&text),
            tensor.device()
        ),
    };
    Ok(json!({ "data": { "text/plain": text, "text/html": html }, "metadata": {} }))
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
