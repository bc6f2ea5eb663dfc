//! `--report OUT.html`: one self-contained page (inline SVG, CSS and JS; nothing fetched) with,
//! per GPU asked, the verdict, the memory over the run (allocated by what holds it, reserved, the
//! line of what the allocator can use, the peak and any out-of-memory error marked) and the
//! breakdown of the reserved peak.
use std::fmt::Write as _;

use serde_json::Value;

use super::breakdown::{part, total, PARTS};
use super::verdict::Verdict;
use super::{short, size, FitArgs};

/// The timeline's bands, bottom first: (label, colour), in the child's column order.
const BANDS: [(&str, &str); 6] = [
    ("parameters", "#4e79a7"),
    ("gradients", "#f28e2b"),
    ("optimizer state", "#59a14f"),
    ("saved for backward", "#e15759"),
    ("other tensors", "#b07aa1"),
    ("cuBLAS workspaces", "#9c755f"),
];

/// The chart in SVG units (it scales to the page through its viewBox).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 28.0;

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:24px;max-width:1040px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}svg{width:100%;height:auto;border:1px solid #ddd}\
table{border-collapse:collapse;margin-top:8px}td,th{padding:2px 10px;text-align:right;white-space:nowrap}\
td:last-child,th:last-child{text-align:left;white-space:normal}tr.total td{border-top:1px solid #888;font-weight:600}\
.legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}\
.verdict{font-weight:600}.fits{color:#276e27}.nofit{color:#a11}#readout{font-family:monospace;min-height:1.3em}";

/// Checks each breakdown adds up to its reserved bytes (the page says so if not), and reads the
/// timeline under the pointer.
const SCRIPT: &str = "document.querySelectorAll('table.breakdown').forEach(t=>{\
let sum=0;t.querySelectorAll('tr.part').forEach(r=>sum+=Number(r.dataset.bytes));\
t.dataset.sums=(sum===Number(t.dataset.reserved))?'yes':'no';});\
document.querySelectorAll('svg.timeline').forEach(s=>{const pts=JSON.parse(s.dataset.points);\
const out=s.parentNode.querySelector('.readout');s.addEventListener('mousemove',e=>{\
const r=s.getBoundingClientRect();const f=(e.clientX-r.left)/r.width*960;\
const i=Math.max(0,Math.min(pts.length-1,Math.round((f-80)/(960-80-10)*(pts.length-1))));\
const p=pts[i];const g=b=>(b/1073741824).toFixed(2)+' GiB';\
out.textContent='point '+i+': allocated '+g(p.slice(0,6).reduce((a,b)=>a+b,0))+', reserved '+g(p[6]);});});\
document.body.dataset.ready='1';";

/// The whole page for `verdicts`, each drawn from its timeline run in `runs`.
pub fn page(a: &FitArgs, verdicts: &[Verdict], runs: &[Value]) -> String {
    let title = format!("torchlet fit: {}", a.file.display());
    let mut body = format!(
        "<h1>{}</h1><p>{} {}, {}</p>",
        escape(&title),
        escape(&a.file.display().to_string()),
        escape(&a.args.join(" ")),
        a.mode()
    );
    for (v, run) in verdicts.iter().zip(runs) {
        body += &section(v, run);
    }
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>{body}<script>{SCRIPT}</script></body></html>\n",
        escape(&title)
    )
}

/// One GPU's verdict, its devices' timelines and breakdowns.
fn section(v: &Verdict, run: &Value) -> String {
    let class = if v.fits() { "fits" } else { "nofit" };
    let mut out = format!(
        "<section><h2>{}</h2><p class=\"verdict {class}\">{}</p>",
        escape(&v.name),
        escape(&v.line())
    );
    for (i, d) in run["devices"].as_array().into_iter().flatten().enumerate() {
        let usable = v.usable.get(i).copied().unwrap_or(0);
        let oom = oom_here(run, i);
        let _ = write!(
            out,
            "<h3>cuda:{i}: the allocator can use {}</h3>",
            escape(&size(usable))
        );
        out += &chart(d, usable, oom.as_deref());
        out += &breakdown_table(&d["peak_reserved"]);
    }
    out + "</section>"
}

/// The out-of-memory error's place, when it happened on device `index`.
fn oom_here(run: &Value, index: usize) -> Option<String> {
    let e = &run["error"];
    let message = e["message"].as_str()?;
    (e["oom"] == true && message.contains(&format!("GPU {index} ")))
        .then(|| e["at"].as_str().unwrap_or("?").to_string())
}

/// The timeline: stacked bands of allocated bytes, the reserved line, the usable line, the peak.
fn chart(d: &Value, usable: u64, oom: Option<&str>) -> String {
    let points: Vec<Vec<u64>> = d["timeline"]["points"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            p.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .collect()
        })
        .filter(|p: &Vec<u64>| p.len() == 7)
        .collect();
    if points.is_empty() {
        return "<p>(no memory was allocated on this device)</p>".into();
    }
    let top = points.iter().map(|p| p[6]).max().unwrap_or(0).max(usable) as f64 * 1.05;
    let n = points.len();
    let x = |i: usize| LEFT + (WIDTH - LEFT - 10.0) * i as f64 / (n.max(2) - 1) as f64;
    let y = |b: f64| HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * b / top.max(1.0);
    let mut svg = String::new();
    let mut below = vec![0u64; n];
    for (band, (label, colour)) in BANDS.iter().enumerate() {
        let above: Vec<u64> = (0..n).map(|i| below[i] + points[i][band]).collect();
        let mut path = String::new();
        for i in 0..n {
            let _ = write!(
                path,
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { "L" },
                x(i),
                y(above[i] as f64)
            );
        }
        for i in (0..n).rev() {
            let _ = write!(path, "L{:.1},{:.1}", x(i), y(below[i] as f64));
        }
        let _ = write!(
            svg,
            "<path class=\"band\" d=\"{path}Z\" fill=\"{colour}\"><title>{label}</title></path>"
        );
        below = above;
    }
    let reserved: Vec<String> = (0..n)
        .map(|i| format!("{:.1},{:.1}", x(i), y(points[i][6] as f64)))
        .collect();
    let _ = write!(svg, "<polyline class=\"reserved\" points=\"{}\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"><title>reserved</title></polyline>", reserved.join(" "));
    let uy = y(usable as f64);
    let _ = write!(svg, "<line class=\"usable\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{uy:.1}\" y2=\"{uy:.1}\" stroke=\"#c00\" stroke-dasharray=\"6 4\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#c00\">usable {}</text>", WIDTH - 10.0, WIDTH - 12.0, uy + 14.0, short(usable));
    let peak = (0..n)
        .max_by_key(|&i| (points[i][6], std::cmp::Reverse(i)))
        .unwrap_or(0);
    let site = d["peak_reserved"]["site"]
        .as_str()
        .unwrap_or("(no statement)");
    let _ = write!(svg, "<line class=\"peak\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{TOP}\" y2=\"{1}\" stroke=\"#555\" stroke-dasharray=\"2 3\"/><text x=\"{2:.1}\" y=\"{3:.1}\" font-size=\"12\">peak reserved {4} at {5}</text>",
        x(peak), HEIGHT - BOTTOM, (x(peak) + 4.0).min(WIDTH - 420.0), HEIGHT - BOTTOM - 8.0,
        short(points[peak][6]), escape(site));
    if let Some(at) = oom {
        let ox = x(n - 1);
        let _ = write!(svg, "<g class=\"oom\"><line x1=\"{ox:.1}\" x2=\"{ox:.1}\" y1=\"{TOP}\" y2=\"{}\" stroke=\"#c00\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#c00\" font-weight=\"600\">out of memory at {}</text></g>", HEIGHT - BOTTOM, ox - 4.0, TOP + 28.0, escape(at));
    }
    for k in 0..=4 {
        let b = top / 1.05 * k as f64 / 4.0;
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            LEFT - 6.0,
            y(b) + 4.0,
            short(b as u64)
        );
    }
    let _ = write!(svg, "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\">start</text><text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">end ({} requests and frees)</text>",
        HEIGHT - 8.0, WIDTH - 10.0, HEIGHT - 8.0, d["timeline"]["events"]);
    let data = escape(&serde_json::to_string(&points).unwrap_or_default());
    let legend: String = BANDS
        .iter()
        .map(|(label, colour)| format!("<span><i style=\"background:{colour}\"></i>{label}</span>"))
        .chain(["<span><i style=\"background:#222\"></i>reserved</span>".to_string()])
        .collect();
    format!(
        "<div class=\"chart\"><svg class=\"timeline\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" xmlns=\"http://www.w3.org/2000/svg\" data-points=\"{data}\">{svg}</svg><div class=\"legend\">{legend}</div><div class=\"readout\" id=\"readout\"></div></div>"
    )
}

/// The breakdown of one peak as a table whose rows add up to reserved.
fn breakdown_table(peak: &Value) -> String {
    let b = &peak["breakdown"];
    let reserved = peak["reserved"].as_u64().unwrap_or(0);
    let site = peak["site"].as_str().unwrap_or("(no statement)");
    let mut out = format!(
        "<p>At the reserved peak, in <code>{}</code>:</p><table class=\"breakdown\" data-reserved=\"{reserved}\"><tr><th>bytes</th><th>share</th><th>what</th></tr>",
        escape(site)
    );
    for (key, name) in PARTS {
        let bytes = part(b, key);
        let _ = write!(
            out,
            "<tr class=\"part\" data-part=\"{key}\" data-bytes=\"{bytes}\"><td>{}</td><td>{:.1}%</td><td>{name}</td></tr>",
            short(bytes),
            100.0 * bytes as f64 / reserved.max(1) as f64
        );
        if key == "saved_for_backward" {
            for s in b["saved_by_statement"]
                .as_array()
                .into_iter()
                .flatten()
                .take(8)
            {
                let _ = write!(
                    out,
                    "<tr class=\"saver\"><td>{}</td><td></td><td>&nbsp;&nbsp;made at <code>{}</code></td></tr>",
                    short(s["bytes"].as_u64().unwrap_or(0)),
                    escape(s["site"].as_str().unwrap_or("(no statement)"))
                );
            }
        }
    }
    let _ = write!(
        out,
        "<tr class=\"total\"><td>{}</td><td>100.0%</td><td>reserved</td></tr></table>",
        short(total(b))
    );
    out
}

/// Text made safe for HTML (and attribute values).
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
