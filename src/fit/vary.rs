//! `--vary NAME=a,b,c` and `--alloc-conf`: one table, the default row first, a row per script
//! argument value and per allocator setting, a column per GPU; and the grid two sweeps give.
use std::process::ExitCode;

use super::sweep::{with_value, Answer};
use super::verdict::{judge, Verdict};
use super::{gpus, short, FitArgs, Gpu};

/// One row of the table: its label, the script's arguments and the allocator setting.
struct Row {
    label: String,
    args: Vec<String>,
    conf: Option<String>,
}

/// The rows: the default, each `--vary` value, each `--alloc-conf`.
fn rows(a: &FitArgs) -> Result<Vec<Row>, String> {
    let mut rows = vec![Row {
        label: "default".into(),
        args: a.args.clone(),
        conf: None,
    }];
    for spec in &a.vary {
        let (name, values) = spec
            .split_once('=')
            .filter(|(n, v)| !n.trim().is_empty() && !v.trim().is_empty())
            .ok_or_else(|| {
                format!(
                    "--vary {spec}: expected NAME=a,b,c, e.g. ckpt=0,1 or dtype=float32,bfloat16"
                )
            })?;
        for value in values.split(',') {
            let (name, value) = (name.trim(), value.trim());
            rows.push(Row {
                label: format!("{name}={value}"),
                args: with_value(&a.args, name, value),
                conf: None,
            });
        }
    }
    for conf in &a.alloc_confs {
        rows.push(Row {
            label: format!("alloc conf {conf}"),
            args: a.args.clone(),
            conf: Some(conf.clone()),
        });
    }
    Ok(rows)
}

/// A verdict in a table cell.
pub fn cell(v: &Verdict) -> String {
    match (v.spare(), &v.needs) {
        (Some((spare, pct)), _) => format!("fits, {} spare ({pct:.1}%)", short(spare)),
        (None, Some(n)) => format!(
            "needs {}{} more",
            if n.at_least { "over " } else { "" },
            short(n.more)
        ),
        (None, None) => "stopped (not memory)".into(),
    }
}

/// `--vary`/`--alloc-conf`: run every row on every machine, then print the table.
pub fn run(a: &FitArgs, machines: &[Vec<Gpu>]) -> Result<ExitCode, String> {
    let rows = rows(a)?;
    let mut table: Vec<Vec<Verdict>> = Vec::new();
    for row in &rows {
        let mut line = Vec::new();
        for machine in machines {
            line.push(judge(
                a,
                machine,
                row.conf.as_deref(),
                &row.args,
                true,
                false,
            )?);
        }
        table.push(line);
    }
    if a.json {
        let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        println!("{}", super::json::table(a, &labels, &table));
    } else {
        println!("== {} ({})", a.file.display(), a.mode());
        print!("{}", render(&rows, machines, &table));
    }
    Ok(super::exit(table.iter().flatten().all(Verdict::fits)))
}

/// The table, columns aligned: setting, then per machine its peak reserved and verdict.
fn render(rows: &[Row], machines: &[Vec<Gpu>], table: &[Vec<Verdict>]) -> String {
    let mut head = vec!["setting".to_string()];
    for m in machines {
        let name = gpus::machine_name(m);
        head.push(format!("{name} peak reserved"));
        head.push(format!("{name} verdict"));
    }
    let mut lines = vec![head];
    for (row, verdicts) in rows.iter().zip(table) {
        let mut line = vec![row.label.clone()];
        for v in verdicts {
            line.push(short(v.peak_reserved()));
            line.push(cell(v));
        }
        lines.push(line);
    }
    aligned(&lines)
}

/// Columns padded to their widest cell: the header and the first column left-aligned, numbers
/// right-aligned.
pub fn aligned(lines: &[Vec<String>]) -> String {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let pad = widths[c].saturating_sub(s.chars().count());
                let numeric = s.chars().next().is_some_and(|ch| ch.is_ascii_digit());
                if n > 0 && c > 0 && numeric {
                    format!("{}{s}", " ".repeat(pad))
                } else {
                    format!("{s}{}", " ".repeat(pad))
                }
            })
            .collect();
        out += cells.join("  ").trim_end();
        out += "\n";
    }
    out
}

/// Two sweeps: every cell of the grid, skipping those a smaller failing cell already rules out
/// (memory grows with both arguments).
pub fn grid(
    a: &FitArgs,
    machine: &[Gpu],
    conf: Option<&str>,
    (cols, col_values): (String, Vec<String>),
    (rows, row_values): (String, Vec<String>),
) -> Result<Answer, String> {
    let mut cells = Vec::new();
    let mut probes = Vec::new();
    let mut limit = col_values.len();
    for r in &row_values {
        for (i, c) in col_values.iter().enumerate() {
            if i >= limit {
                cells.push((c.clone(), r.clone(), false, None));
                continue;
            }
            let args = with_value(&with_value(&a.args, &cols, c), &rows, r);
            let v = judge(a, machine, conf, &args, true, false)?;
            let spare = v.spare().map(|s| s.0);
            if !v.fits() {
                limit = i;
            }
            cells.push((c.clone(), r.clone(), v.fits(), spare));
            probes.push((format!("{cols}={c} {rows}={r}"), v));
        }
    }
    if !a.json {
        print!(
            "{}",
            render_grid(&cols, &col_values, &rows, &row_values, &cells)
        );
    }
    Ok(Answer {
        name: gpus::machine_name(machine),
        fits: cells.iter().any(|c| c.2),
        probes,
        largest: None,
        grid: cells,
    })
}

/// The grid as text: a row per second-argument value, a column per first-argument value; a cell
/// that fits shows what it leaves to spare.
fn render_grid(
    cols: &str,
    col_values: &[String],
    rows: &str,
    row_values: &[String],
    cells: &[(String, String, bool, Option<u64>)],
) -> String {
    let mut head = vec![format!("{rows} \\ {cols}")];
    head.extend(col_values.iter().cloned());
    let mut lines = vec![head];
    for (r, chunk) in row_values.iter().zip(cells.chunks(col_values.len())) {
        let mut line = vec![format!("{rows}={r}")];
        for (_, _, fits, spare) in chunk {
            line.push(match (fits, spare) {
                (true, Some(s)) => format!("yes {}", short(*s)),
                _ => "no".to_string(),
            });
        }
        lines.push(line);
    }
    aligned(&lines) + "(yes: fits, with what it leaves to spare; no: out of memory)\n"
}
