//! The `:vars` table: every variable, and for tensors their shape, dtype, device, bytes and the storage they keep alive.
use std::collections::{BTreeMap, HashMap};

use rhai::Dynamic;

use super::memory::{human, workspace_note};
use super::{DisplayData, Session};
use torchlet_alloc::DevicePtr;
use torchlet_core::device::{self, Device};
use torchlet_core::tensor::Tensor;

/// The tensor table's columns; the HTML table has the same ones.
const TENSOR_HEADER: [&str; 8] = [
    "name", "type", "shape", "dtype", "device", "bytes", "holds", "storage",
];

impl Session {
    /// `:vars`: tensors first (with the storage each keeps alive and who shares it), then every
    /// other variable, by name; then what else holds device memory (the cuBLAS workspaces).
    pub(crate) fn vars(&self) -> DisplayData {
        // Later entries shadow earlier ones of the same name, as lookups do.
        let mut latest: BTreeMap<&str, &Dynamic> = BTreeMap::new();
        for (name, _, value) in self.scope.iter_raw().collect::<Vec<_>>().into_iter().rev() {
            if !torchlet_rhai::runtime::syntax::is_deleted(value) {
                latest.insert(name, value);
            }
        }
        // Tensors inside lists, maps and optimizers are listed by their paths (`l1.weight`,
        // `opt.state[w].exp_avg`): they hold memory as much as a variable of their own does.
        let named = self.named_values();
        let mut paths =
            torchlet_explain::value::tensor_paths(named.iter().map(|(n, v)| (n.as_str(), v)));
        paths.sort_by(|(a, _), (b, _)| root(a).cmp(root(b)));
        let tensors: Vec<(&str, Tensor)> =
            paths.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
        let others: Vec<[String; 3]> = latest
            .iter()
            .filter(|(_, value)| !value.is::<Tensor>())
            .map(|(name, value)| [name.to_string(), self.type_of(value), preview(value)])
            .collect();
        vars_display(&tensors, others)
    }

    fn type_of(&self, value: &Dynamic) -> String {
        self.engine.map_type_name(value.type_name()).to_string()
    }
}

/// The `:vars` tables: `tensors` by path (with the storage each keeps alive and who shares it),
/// then `others` (name, type, preview), then what else holds device memory (the cuBLAS
/// workspaces). The Rhai and Python front ends both show it.
pub(crate) fn vars_display(tensors: &[(&str, Tensor)], others: Vec<[String; 3]>) -> DisplayData {
    let blocks = Blocks::of(tensors);
    let mut tables = Vec::new();
    if tensors.is_empty() && others.is_empty() {
        tables.push((
            "no variables".to_string(),
            "<p>no variables</p>".to_string(),
        ));
    }
    if !tensors.is_empty() {
        tables.push(table(TENSOR_HEADER, tensor_rows(tensors, &blocks)));
    }
    if !others.is_empty() {
        tables.push(table(["name", "type", "value"], others));
    }
    let notes = device_notes(tensors, &blocks);
    let mut plain: Vec<String> = tables.iter().map(|t| t.0.clone()).collect();
    let mut html: String = tables.iter().map(|t| t.1.as_str()).collect();
    if !notes.is_empty() {
        plain.push(notes.join("\n"));
        for note in &notes {
            html += &format!("<p>{}</p>", escape(note));
        }
    }
    DisplayData {
        plain: plain.join("\n\n"),
        html: Some(html),
    }
}

/// The allocator blocks under the listed CUDA tensors, by device and address.
struct Blocks(HashMap<(usize, DevicePtr), u64>);

impl Blocks {
    /// Read the blocks of every CUDA device a listed tensor is on (and only those: no probing).
    fn of(tensors: &[(&str, Tensor)]) -> Blocks {
        let mut indices: Vec<usize> = tensors
            .iter()
            .filter_map(|(_, t)| match t.device() {
                Device::Cuda(i) => Some(i),
                Device::Cpu | Device::Meta => None,
            })
            .collect();
        indices.sort_unstable();
        indices.dedup();
        let mut blocks = HashMap::new();
        for index in indices {
            let Ok(allocator) = device::cuda_allocator(index) else {
                continue;
            };
            for segment in allocator.snapshot().segments {
                for block in segment.blocks {
                    blocks.insert((index, block.address), block.size);
                }
            }
        }
        Blocks(blocks)
    }

    /// Bytes `t`'s storage keeps allocated: its allocator block on a CUDA device (the rounded
    /// size `memory_allocated` counts, 4000256 for 4000000 bytes), its own size on the CPU.
    fn held(&self, t: &Tensor) -> u64 {
        let own = t.storage_nbytes() as u64;
        match t.device() {
            Device::Cuda(i) if own > 0 => self.0.get(&(i, t.storage_ptr())).copied().unwrap_or(own),
            _ => own,
        }
    }
}

/// One row per tensor: its own bytes, the bytes its storage keeps alive, and which other
/// variables share that storage (a view keeps all of it allocated, not just what it shows).
fn tensor_rows(tensors: &[(&str, Tensor)], blocks: &Blocks) -> Vec<[String; 8]> {
    let mut storages: Vec<(usize, Vec<&str>)> = Vec::new();
    for (name, t) in tensors {
        match storages.iter_mut().find(|(id, _)| *id == t.storage_id()) {
            Some((_, names)) => names.push(name),
            None => storages.push((t.storage_id(), vec![name])),
        }
    }
    tensors
        .iter()
        .map(|(name, t)| {
            let k = storages
                .iter()
                .position(|(id, _)| *id == t.storage_id())
                .unwrap_or(0);
            let others: Vec<&str> = storages[k]
                .1
                .iter()
                .copied()
                .filter(|n| n != name)
                .collect();
            let storage = match others.is_empty() {
                true => format!("#{}", k + 1),
                false => format!("#{} shared with {}", k + 1, others.join(", ")),
            };
            [
                name.to_string(),
                "Tensor".into(),
                format!("{:?}", t.shape()),
                t.dtype().name().into(),
                t.device().to_string(),
                bytes(t.nbytes() as u64),
                bytes(blocks.held(t)),
                storage,
            ]
        })
        .collect()
}

/// Per CUDA device: how much of `allocated` the variables hold (each storage once), and the
/// cuBLAS workspaces, which no variable holds but which count in `allocated` all the same.
fn device_notes(tensors: &[(&str, Tensor)], blocks: &Blocks) -> Vec<String> {
    let mut held: BTreeMap<usize, BTreeMap<usize, u64>> = BTreeMap::new();
    for (_, t) in tensors {
        if let Device::Cuda(i) = t.device() {
            held.entry(i)
                .or_default()
                .insert(t.storage_id(), blocks.held(t));
        }
    }
    let workspaces = device::blas_workspaces();
    let mut indices: Vec<usize> = held.keys().copied().collect();
    indices.extend(
        workspaces
            .iter()
            .filter(|(_, w)| !w.is_empty())
            .map(|(i, _)| *i),
    );
    indices.sort_unstable();
    indices.dedup();
    let mut notes = Vec::new();
    for index in indices {
        if let (Some(storages), Ok(allocator)) = (held.get(&index), device::cuda_allocator(index)) {
            let total: u64 = storages.values().sum();
            let allocated = allocator.memory_allocated();
            notes.push(format!(
                "cuda:{index}: variables hold {total} B ({}) of the {allocated} B ({}) allocated",
                human(total),
                human(allocated)
            ));
        }
        let ws = workspaces.iter().find(|(i, _)| *i == index);
        if let Some(note) = ws.and_then(|(_, w)| workspace_note(index, w)) {
            notes.push(note);
        }
    }
    notes
}

/// Exact bytes, with a binary unit beside them once that reads better.
fn bytes(n: u64) -> String {
    match n < 1024 {
        true => n.to_string(),
        false => format!("{n} ({})", human(n)),
    }
}

/// The variable a path starts from: `l1` of `l1.weight`, `opt` of `opt.state[w]`.
pub(crate) fn root(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// A value on one line of at most 40 characters.
fn preview(value: &Dynamic) -> String {
    let shown = torchlet_rhai::surface::display::repr(value).replace('\n', " ");
    match shown.chars().count() > 40 {
        true => shown.chars().take(37).collect::<String>() + "...",
        false => shown,
    }
}

/// Rows under a header, as aligned plain-text columns and as an HTML table of the same columns.
fn table<const N: usize>(header: [&str; N], rows: Vec<[String; N]>) -> (String, String) {
    let header = header.map(String::from);
    let all: Vec<&[String; N]> = std::iter::once(&header).chain(&rows).collect();
    let widths: Vec<usize> = (0..N)
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let plain = all
        .iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    let row = |cells: &[String; N], tag: &str| {
        let cells: String = cells
            .iter()
            .map(|c| format!("<{tag}>{}</{tag}>", escape(c)))
            .collect();
        format!("<tr>{cells}</tr>")
    };
    let body: String = rows.iter().map(|r| row(r, "td")).collect();
    let html = format!(
        "<table><thead>{}</thead><tbody>{body}</tbody></table>",
        row(&header, "th")
    );
    (plain, html)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
