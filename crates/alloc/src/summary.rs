//! `memory_summary`: PyTorch's 77-column text table of the statistics, character for character.

use std::collections::BTreeMap;

const SIZE_METRICS: [(&str, &str); 5] = [
    ("allocated_bytes", "Allocated memory"),
    ("active_bytes", "Active memory"),
    ("requested_bytes", "Requested memory"),
    ("reserved_bytes", "GPU reserved memory"),
    ("inactive_split_bytes", "Non-releasable memory"),
];
const COUNT_METRICS: [(&str, &str); 4] = [
    ("allocation", "Allocations"),
    ("active", "Active allocs"),
    ("segment", "GPU reserved segments"),
    ("inactive_split", "Non-releasable allocs"),
];
const OVERSIZE_METRICS: [(&str, &str); 2] = [
    ("oversize_allocations", "Oversize allocations"),
    ("oversize_segments", "Oversize GPU segments"),
];
const COLUMNS: [&str; 4] = ["current", "peak", "allocated", "freed"];

/// A byte cell: units step up at 768 of the current unit of `pref`, values floor-divided.
pub fn format_size_cell(mut v: i64, pref: i64) -> String {
    let mut pref = pref as f64;
    let mut unit = "B  ";
    for next in ["KiB", "MiB", "GiB", "TiB", "PiB"] {
        if pref < 768.0 * 1024.0 {
            break;
        }
        unit = next;
        v = v.div_euclid(1024);
        pref /= 1024.0;
    }
    format!("{v:6} {unit}")
}

/// A count cell: units " ", "K", "M", stepping up at 750,000.
pub fn format_count_cell(mut c: i64, pref: i64) -> String {
    let mut pref = pref as f64;
    let mut unit = " ";
    for next in ["K", "M"] {
        if pref < 750.0 * 1000.0 {
            break;
        }
        unit = next;
        c = c.div_euclid(1000);
        pref /= 1000.0;
    }
    format!("{c:7} {unit} ")
}

fn row(label: &str, cells: &[String]) -> String {
    format!(
        " {label:<21} | {} | {} | {} | {} ",
        cells[0], cells[1], cells[2], cells[3]
    )
}

/// Renders the summary of `stats` (the flat `memory_stats` map) for device `device`.
pub fn memory_summary(stats: &BTreeMap<String, i64>, device: usize, abbreviated: bool) -> String {
    let get = |k: String| stats.get(&k).copied().unwrap_or(0);
    let mut lines = vec![
        "=".repeat(75),
        // PyTorch's header is 18 spaces + "PyTorch …"; one space fewer keeps "torchlet" in the box.
        format!(
            "{:17}torchlet CUDA memory summary, device ID {device:<17} ",
            ""
        ),
        "-".repeat(75),
        format!(
            "  {:9} CUDA OOMs: {:<12} | {:6} cudaMalloc retries: {:<8}  ",
            "",
            get("num_ooms".into()),
            "",
            get("num_alloc_retries".into())
        ),
        "=".repeat(75),
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ".to_string(),
    ];
    let mut pools = vec![("all", None)];
    if !abbreviated {
        pools.push(("large_pool", Some("      from large pool")));
        pools.push(("small_pool", Some("      from small pool")));
    }
    let metrics = SIZE_METRICS
        .iter()
        .map(|m| (m, true))
        .chain(COUNT_METRICS.iter().map(|m| (m, false)));
    for (&(key, label), is_size) in metrics {
        lines.push("-".repeat(75));
        let prefs: Vec<i64> = COLUMNS
            .iter()
            .map(|c| get(format!("{key}.all.{c}")))
            .collect();
        for (pool, sub_label) in &pools {
            let cells: Vec<String> = COLUMNS
                .iter()
                .zip(&prefs)
                .map(|(c, &pref)| {
                    let v = get(format!("{key}.{pool}.{c}"));
                    if is_size {
                        format_size_cell(v, pref)
                    } else {
                        format_count_cell(v, pref)
                    }
                })
                .collect();
            lines.push(row(sub_label.unwrap_or(label), &cells));
        }
    }
    for (key, label) in OVERSIZE_METRICS {
        lines.push("-".repeat(75));
        let cells: Vec<String> = COLUMNS
            .iter()
            .map(|c| {
                let v = get(format!("{key}.{c}"));
                format_count_cell(v, v)
            })
            .collect();
        lines.push(row(label, &cells));
    }
    lines.push("=".repeat(75));
    format!("|{}|\n", lines.join("|\n|"))
}
