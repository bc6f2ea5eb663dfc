//! The `:vars` table: every variable, and for tensors their shape, dtype, device, bytes and storage.
use std::collections::BTreeMap;

use rhai::Dynamic;

use super::memory::human;
use super::{DisplayData, Session};
use crate::tensor::Tensor;

impl Session {
    /// `:vars`: tensors first (with which share storage), then every other variable, by name.
    pub(crate) fn vars(&self) -> DisplayData {
        // Later entries shadow earlier ones of the same name, as lookups do.
        let mut latest: BTreeMap<&str, &Dynamic> = BTreeMap::new();
        for (name, _, value) in self.scope.iter_raw().collect::<Vec<_>>().into_iter().rev() {
            if !crate::script::syntax::is_deleted(value) {
                latest.insert(name, value);
            }
        }
        let tensors: Vec<(&str, Tensor)> = latest
            .iter()
            .filter_map(|(name, value)| Some((*name, value.read_lock::<Tensor>()?.clone())))
            .collect();
        let others: Vec<[String; 3]> = latest
            .iter()
            .filter(|(_, value)| !value.is::<Tensor>())
            .map(|(name, value)| [name.to_string(), self.type_of(value), preview(value)])
            .collect();
        if tensors.is_empty() && others.is_empty() {
            return DisplayData::text("no variables");
        }
        let mut tables = Vec::new();
        if !tensors.is_empty() {
            let header = [
                "name", "type", "shape", "dtype", "device", "bytes", "storage",
            ];
            tables.push(table(header, tensor_rows(&tensors)));
        }
        if !others.is_empty() {
            tables.push(table(["name", "type", "value"], others));
        }
        DisplayData {
            plain: tables
                .iter()
                .map(|t| t.0.as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
            html: Some(tables.iter().map(|t| t.1.as_str()).collect()),
        }
    }

    fn type_of(&self, value: &Dynamic) -> String {
        self.engine.map_type_name(value.type_name()).to_string()
    }
}

/// One row per tensor; the storage column numbers storages and names the variables sharing one.
fn tensor_rows(tensors: &[(&str, Tensor)]) -> Vec<[String; 7]> {
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
                storage,
            ]
        })
        .collect()
}

/// Exact bytes, with a binary unit beside them once that reads better.
fn bytes(n: u64) -> String {
    match n < 1024 {
        true => n.to_string(),
        false => format!("{n} ({})", human(n)),
    }
}

/// A value on one line of at most 40 characters.
fn preview(value: &Dynamic) -> String {
    let shown = value.to_string().replace('\n', " ");
    match shown.chars().count() > 40 {
        true => shown.chars().take(37).collect::<String>() + "...",
        false => shown,
    }
}

/// Rows under a header, as aligned plain-text columns and as an HTML table.
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
