//! `--json`: every figure of the text report as one JSON document (docs/fit-json.md lists the
//! fields), for tools and CI.
use serde_json::{json, Value};

use super::sweep::Answer;
use super::verdict::Verdict;
use super::FitArgs;

/// Bytes as the document gives them: the count and GiB.
fn bytes(b: u64) -> Value {
    json!({"bytes": b, "gib": (b as f64 / (1u64 << 30) as f64 * 100.0).round() / 100.0})
}

/// One verdict with its figures.
pub fn verdict(v: &Verdict) -> Value {
    let gpus: Vec<Value> = v
        .machine
        .iter()
        .zip(&v.usable)
        .map(|(g, u)| {
            json!({
                "name": g.name,
                "total": bytes(g.total),
                "total_measured": g.measured,
                "source": g.source,
                "outside_allocator": bytes(if v.cublas { g.context_cublas } else { g.context }),
                "outside_allocator_measured": g.context_measured,
                "reserve": bytes(g.reserve),
                "usable": bytes(*u),
                "why": g.why(v.cublas),
            })
        })
        .collect();
    let r = &v.report;
    json!({
        "gpu": v.name,
        "fits": v.fits(),
        "verdict": v.short_line(),
        "spare": v.spare().map(|(b, pct)| json!({"bytes": b, "gib": bytes(b)["gib"], "percent": (pct * 10.0).round() / 10.0})),
        "needs_more": v.needs.as_ref().map(|n| json!({
            "device": n.device, "bytes": n.more, "gib": bytes(n.more)["gib"], "at_least": n.at_least,
        })),
        "cublas": v.cublas,
        "devices": gpus,
        "peaks": r["devices"],
        "error": r["error"],
        "mode": r["mode"],
        "seconds": r["seconds"],
        "max_rss_bytes": r["max_rss_bytes"],
        "ranks": v.ranks,
    })
}

fn head(a: &FitArgs) -> Value {
    json!({
        "script": a.file.display().to_string(),
        "args": a.args,
        "mode": a.mode(),
        "alloc_confs": a.alloc_confs,
    })
}

/// The document for one verdict per machine.
pub fn document(a: &FitArgs, verdicts: &[Verdict]) -> Value {
    let mut doc = head(a);
    doc["verdicts"] = verdicts.iter().map(verdict).collect();
    doc
}

/// The document for sweeps.
pub fn sweeps(a: &FitArgs, answers: &[Answer]) -> Value {
    let mut doc = head(a);
    doc["sweep"] = json!(a.sweep);
    doc["sweeps"] = answers
        .iter()
        .map(|s| {
            json!({
                "gpu": s.name,
                "largest": s.largest,
                "probes": s.probes.iter().map(|(value, v)| json!({"value": value, "verdict": verdict(v)})).collect::<Vec<_>>(),
                "grid": s.grid.iter().map(|(c, r, fits, spare)| json!({"first": c, "second": r, "fits": fits, "spare_bytes": spare})).collect::<Vec<_>>(),
            })
        })
        .collect();
    doc
}

/// The document for a `--vary`/`--alloc-conf` table.
pub fn table(a: &FitArgs, labels: &[&str], table: &[Vec<Verdict>]) -> Value {
    let mut doc = head(a);
    doc["rows"] = labels
        .iter()
        .zip(table)
        .map(|(label, vs)| json!({"setting": label, "verdicts": vs.iter().map(verdict).collect::<Vec<_>>()}))
        .collect();
    doc
}
