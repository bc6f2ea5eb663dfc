//! What the memory at a peak is: the reserved bytes split by what holds them (parameters,
//! gradients, optimizer state, activations saved for backward, …), parts that add up to reserved.
use serde_json::Value;

use super::short;

/// The parts of a breakdown, in the order the report gives them: (JSON key, what it is).
pub const PARTS: [(&str, &str); 8] = [
    ("parameters", "parameters"),
    ("gradients", "gradients"),
    ("optimizer_state", "optimizer state"),
    ("saved_for_backward", "activations saved for backward"),
    ("other_tensors", "other live tensors"),
    ("statement", "made by the statement running (temporaries)"),
    ("workspaces", "cuBLAS/cuBLASLt workspaces"),
    ("cached_free", "cached but free (held by no tensor)"),
];

/// How many statements that saved activations the report names.
const SAVERS: usize = 5;

/// Bytes of part `key` in breakdown `b`.
pub fn part(b: &Value, key: &str) -> u64 {
    b[key].as_u64().unwrap_or(0)
}

/// The sum of the parts: reserved, when the breakdown is whole.
pub fn total(b: &Value) -> u64 {
    PARTS.iter().map(|(key, _)| part(b, key)).sum()
}

/// The breakdown as indented lines of the text report, with each part's share of `reserved`.
pub fn text(b: &Value, reserved: u64) -> String {
    if b.is_null() {
        return String::new();
    }
    let mut out = String::from("  what the reserved memory is at that peak:\n");
    for (key, name) in PARTS {
        let bytes = part(b, key);
        if bytes == 0 {
            continue;
        }
        let pct = 100.0 * bytes as f64 / reserved.max(1) as f64;
        out += &format!("    {:>11}  {pct:5.1}%  {name}\n", short(bytes));
        if key == "saved_for_backward" {
            out += &savers(b);
        }
    }
    out += &format!("    {:>11}  100.0%  reserved\n", short(total(b)));
    out
}

/// The statements whose results are saved for backward, largest first.
fn savers(b: &Value) -> String {
    let list = b["saved_by_statement"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = String::new();
    for s in list.iter().take(SAVERS) {
        out += &format!(
            "    {:>11}          made at {}\n",
            short(s["bytes"].as_u64().unwrap_or(0)),
            s["site"].as_str().unwrap_or("(no statement)")
        );
    }
    if list.len() > SAVERS {
        out += &format!(
            "                         and {} more statements\n",
            list.len() - SAVERS
        );
    }
    out
}
