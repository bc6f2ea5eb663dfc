//! `torchlet fit FILE [ARGS] --gpu H200,RTX-4090,24GiB [--devices 2xH100-80GB] [--vary NAME=a,b]
//! [--sweep NAME=a..b]…`: will a script fit a GPU? It runs shapes only (no math, no data) on
//! simulated GPUs with the memory the allocator would get on each, through PyTorch's allocator,
//! and answers once per GPU asked: fits with how much to spare, or how much more it needs, where.
//!
//! Each run is a child process (this program again, with `--child-result`): a fresh allocator per
//! GPU, allocator setting and swept value, exactly as a fresh Python process would have.
//!
//! Map: this file runs the children and prints the report; `gpus` is the table of GPUs by name
//! and what their allocator can use; `verdict` turns a run into fits-with-margin or
//! needs-more (finding the smallest memory that fits); `sweep` finds the largest value of a
//! script argument that fits, or the grid over two; `vary` compares script arguments and
//! allocator settings in one table; `config` reads `--config` files into script arguments;
//! `json` is `--json`'s document; `breakdown` says what the memory at a peak is; `report` is
//! `--report`'s HTML page; `ranks` runs the other ranks of `--world-size` and compares their peaks.
mod breakdown;
mod config;
mod gpus;
mod json;
mod ranks;
mod report;
mod sweep;
mod vary;
mod verdict;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::Value;

pub use gpus::Gpu;
use verdict::Verdict;

/// What `torchlet fit` was asked.
#[derive(Clone, Debug, Default)]
pub struct FitArgs {
    /// The script.
    pub file: PathBuf,
    /// Its arguments (`ARGS`; `NAME=VALUE` ones are read by `arg(name, default)`).
    pub args: Vec<String>,
    /// `--gpu`: the GPUs to answer for, one verdict each (in a child: the sizes to simulate).
    pub gpus: Option<String>,
    /// `--devices`: machines of several GPUs, one verdict each.
    pub devices: Vec<String>,
    /// `--no-context`: a plain size is all the allocator's.
    pub no_context: bool,
    /// `--reserve SIZE`: memory held for other tenants on every GPU.
    pub reserve: Option<String>,
    /// Allocator settings to compare (PyTorch's `PYTORCH_CUDA_ALLOC_CONF` syntax).
    pub alloc_confs: Vec<String>,
    /// `NAME=a..b` (or `NAME=a,b,c`), once or twice.
    pub sweep: Vec<String>,
    /// `NAME=a,b,c`: script arguments to compare.
    pub vary: Vec<String>,
    /// `--config FILE`: a HF-style config whose fields become script arguments.
    pub config: Option<PathBuf>,
    /// `--json`: print the report as JSON instead of text.
    pub json: bool,
    /// Run with values on simulated GPUs instead of shapes only (`--values`).
    pub with_values: bool,
    /// `--report OUT.html`: the page with the timeline and the breakdown.
    pub report: Option<PathBuf>,
    /// Record the memory over the run (the child run that the HTML report draws).
    pub timeline: bool,
    /// `--world-size N`: the script runs as a rank of a world of N.
    pub world_size: Option<usize>,
    /// Which rank a child runs as (rank 0 unless `ranks` asks for another).
    pub rank: Option<usize>,
}

impl FitArgs {
    /// How the runs compute, as the report says it.
    fn mode(&self) -> &'static str {
        if self.with_values {
            "with values"
        } else {
            "shapes only"
        }
    }

    /// The machines asked: each `--gpu` name alone, then each `--devices` machine.
    fn machines(&self) -> Result<Vec<Vec<Gpu>>, String> {
        let reserve = match &self.reserve {
            Some(r) => {
                torchlet_session::fit::parse_size(r).map_err(|e| format!("--reserve: {e}"))?
            }
            None => 0,
        };
        let options = gpus::Options {
            no_context: self.no_context,
            reserve,
        };
        let mut machines = match &self.gpus {
            Some(list) => gpus::each(list, options)?,
            None => Vec::new(),
        };
        for spec in &self.devices {
            machines.push(gpus::machine(spec, options)?);
        }
        if machines.is_empty() {
            return Err(format!(
                "say which GPU: --gpu H200 (or {}, or a size such as 24GiB), or --devices 2xH100-80GB",
                gpus::names()
            ));
        }
        Ok(machines)
    }
}

/// Bytes as the report gives them: GiB to two decimals, and the exact count.
pub fn size(bytes: u64) -> String {
    format!("{} ({bytes} B)", short(bytes))
}

/// Bytes in the largest unit that keeps them readable.
pub fn short(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.2} MiB", b / (1u64 << 20) as f64)
    }
}

/// One child run on simulated GPUs of `sizes` bytes: the report `session::fit::run` wrote.
fn run_child(
    a: &FitArgs,
    sizes: &[u64],
    conf: Option<&str>,
    args: &[String],
    quiet: bool,
) -> Result<Value, String> {
    let result = std::env::temp_dir().join(format!("torchlet-fit-{}.json", std::process::id()));
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let spec: Vec<String> = sizes.iter().map(|s| format!("{s}B")).collect();
    let mut cmd = Command::new(exe);
    cmd.arg("fit")
        .arg(&a.file)
        .args(args)
        .arg("--gpu")
        .arg(spec.join(","));
    cmd.arg("--child-result").arg(&result);
    if a.with_values {
        cmd.arg("--values");
    }
    if a.timeline {
        cmd.arg("--child-timeline");
    }
    if quiet {
        cmd.arg("--child-quiet").stdout(Stdio::null());
    }
    cmd.env_remove("TORCHLET_SIMULATE_CUDA");
    if let Some(world) = a.world_size {
        ranks::set_env(&mut cmd, world, a.rank.unwrap_or(0));
    }
    if let Some(conf) = conf {
        cmd.env(torchlet_session::CONF_ENV, conf);
        cmd.env_remove(torchlet_session::CONF_ENV_ALIAS);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run the script: {e}"))?;
    let text = std::fs::read_to_string(&result).map_err(|_| {
        format!(
            "the {} run stopped before its report ({status}); its error is above",
            a.mode()
        )
    })?;
    let _ = std::fs::remove_file(&result);
    serde_json::from_str(&text).map_err(|e| format!("unreadable report: {e}"))
}

/// `--child-result FILE`: run once here (shapes only unless `--values`) and write the report.
pub fn child(a: &FitArgs, result: &Path, quiet: bool) -> Result<ExitCode, String> {
    let sizes = a.gpus.as_deref().unwrap_or("");
    let devices = if a.with_values {
        torchlet_session::fit::init_with_values(sizes)
    } else {
        torchlet_session::fit::init_shapes_only(sizes)
    };
    devices.map_err(|e| format!("--gpu: {e}"))?;
    if a.timeline {
        torchlet_session::fit::record_timelines();
    }
    let report = if crate::is_python(Some(&a.file)) {
        crate::python::fit_run(&a.file, &a.args)?
    } else {
        let text = std::fs::read_to_string(&a.file)
            .map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
        torchlet_session::fit::run(&a.file.display().to_string(), &text, &a.args, quiet)
    };
    std::fs::write(result, report.to_string())
        .map_err(|e| format!("cannot write {}: {e}", result.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Whether a report says the script ran to its end.
fn fits(report: &Value) -> bool {
    report["error"].is_null()
}

/// Where a peak was reached: `FILE:LINE:COL: statement`, then, inside functions, the calls that
/// led there as a traceback lists them.
fn site(m: &Value) -> String {
    let mut out = m["site"].as_str().unwrap_or("(no statement)").to_string();
    if let Some(calls) = m["stack"].as_array() {
        out += "\n    the calls that led there, innermost last:";
        for call in calls.iter().filter_map(|c| c.as_str()) {
            out += &format!("\n      {call}");
        }
    }
    out
}

/// The report of one run, as a person reads it: per device its peaks, then how the run ended.
fn describe(report: &Value) -> String {
    let mut out = String::new();
    for d in report["devices"].as_array().into_iter().flatten() {
        let (pa, pr) = (&d["peak_allocated"], &d["peak_reserved"]);
        let (alloc, res) = (
            pa["allocated"].as_u64().unwrap_or(0),
            pr["reserved"].as_u64().unwrap_or(0),
        );
        out += &format!(
            "cuda:{} ({}):\n",
            d["index"],
            short(d["capacity"].as_u64().unwrap_or(0))
        );
        out += &format!("  peak allocated: {}, at {}\n", size(alloc), site(pa));
        out += &format!("  peak reserved:  {}, at {}\n", size(res), site(pr));
        out += &format!(
            "  at the reserved peak: {} segment(s); {:.1}% of reserved memory held by no tensor\n",
            pr["segments"],
            100.0 * pr["fragmentation"].as_f64().unwrap_or(0.0)
        );
        out += &breakdown::text(&pr["breakdown"], res);
    }
    out += &torchlet_session::fit::estimate_note(&report["estimated_workspaces"]);
    out += &format!(
        "(the run, {}, took {:.2} s and at most {} of host memory)\n",
        report["mode"].as_str().unwrap_or("shapes only"),
        report["seconds"].as_f64().unwrap_or(0.0),
        short(report["max_rss_bytes"].as_u64().unwrap_or(0))
    );
    match &report["error"] {
        Value::Null => out += "fits: the script ran to its end\n",
        e if e["oom"] == true => {
            out += &format!(
                "does not fit: the first out-of-memory error, at {}:\n",
                e["at"].as_str().unwrap_or("?")
            );
            for line in e["message"].as_str().unwrap_or("").lines() {
                out += &format!("  {line}\n");
            }
        }
        e => {
            out += &format!(
                "stopped at {}: {}: {}\n",
                e["at"].as_str().unwrap_or("?"),
                e["kind"].as_str().unwrap_or("Error"),
                e["message"].as_str().unwrap_or("")
            );
        }
    }
    out
}

fn conf_name(conf: Option<&str>) -> String {
    conf.map_or_else(
        || "default allocator settings".into(),
        |c| format!("alloc conf {c}"),
    )
}

/// The script's arguments: `--config`'s fields first, so that those given override them.
fn script_args(a: &FitArgs) -> Result<Vec<String>, String> {
    let mut args = match &a.config {
        Some(path) => config::args(path)?,
        None => Vec::new(),
    };
    args.extend(a.args.iter().cloned());
    Ok(args)
}

/// `torchlet fit …`: one verdict per GPU asked (or a sweep, or a comparison table).
pub fn fit(a: &FitArgs) -> Result<ExitCode, String> {
    // Say so before any run starts, rather than once per child.
    std::fs::metadata(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let machines = a.machines()?;
    let mut a = a.clone();
    a.args = script_args(&a)?;
    let a = &a;
    if !a.sweep.is_empty() {
        return sweep::run(a, &machines);
    }
    if !a.vary.is_empty() || a.alloc_confs.len() > 1 {
        return vary::run(a, &machines);
    }
    let conf = a.alloc_confs.first().map(String::as_str);
    let mut verdicts = Vec::new();
    for machine in &machines {
        if !a.json {
            println!(
                "== {} on {} ({}, {})",
                a.file.display(),
                gpus::machine_name(machine),
                a.mode(),
                conf_name(conf)
            );
        }
        let mut v = verdict::judge(
            a,
            machine,
            conf,
            &a.args,
            a.json || machines.len() > 1,
            true,
        )?;
        let world = match a.world_size {
            Some(world) => Some(ranks::run(a, world, &v, conf)?),
            None => None,
        };
        if !a.json {
            print!("{}", v.usable_lines());
            print!("{}", describe(&v.report));
            println!("{}", v.line());
            if let Some(world) = &world {
                print!("{}", world.text());
            }
        }
        v.ranks = world.map(|w| w.json());
        verdicts.push(v);
    }
    if let Some(path) = &a.report {
        write_report(a, conf, &verdicts, path)?;
    }
    if a.json {
        println!("{}", json::document(a, &verdicts));
    } else if machines.len() > 1 {
        println!();
        print!("{}", summary(&verdicts));
    }
    Ok(exit(verdicts.iter().all(Verdict::fits)))
}

/// `--report OUT.html`: each verdict's run again, recording its timeline, drawn on one page.
fn write_report(
    a: &FitArgs,
    conf: Option<&str>,
    verdicts: &[Verdict],
    path: &Path,
) -> Result<(), String> {
    let mut drawn = a.clone();
    drawn.timeline = true;
    let mut runs = Vec::new();
    for v in verdicts {
        runs.push(run_child(&drawn, &v.usable, conf, &a.args, true)?);
    }
    let page = report::page(a, verdicts, &runs);
    std::fs::write(path, page).map_err(|e| format!("--report {}: {e}", path.display()))?;
    if !a.json {
        println!("wrote {} (open it in a browser)", path.display());
    }
    Ok(())
}

/// One line per GPU asked, aligned: usable memory, peak reserved, the verdict.
fn summary(verdicts: &[Verdict]) -> String {
    let width = verdicts
        .iter()
        .map(|v| v.name.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let mut out = format!(
        "{:<width$}  {:>12}  {:>14}  verdict\n",
        "GPU", "usable", "peak reserved"
    );
    for v in verdicts {
        out += &format!(
            "{:<width$}  {:>12}  {:>14}  {}\n",
            v.name,
            short(v.usable.iter().copied().min().unwrap_or(0)),
            short(v.peak_reserved()),
            v.short_line()
        );
    }
    out
}

fn exit(all_fit: bool) -> ExitCode {
    if all_fit {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
