//! `torchlet fit FILE [ARGS] --gpu SIZE[,SIZE…] [--alloc-conf CONF]… [--sweep NAME=a..b]`: will a
//! script fit a GPU? It runs shapes only (no math, no data) on simulated GPUs of those sizes,
//! through PyTorch's allocator, and reports each device's peaks, where they were reached, and the
//! first out-of-memory error.
//!
//! Each run is a child process (this program again, with `--child-result`): a fresh allocator per
//! allocator setting and per swept value, exactly as a fresh Python process would have.
//!
//! Map: this file runs the children and prints the report; `sweep` finds the largest value of a
//! script argument that fits, by bisection.
mod sweep;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::Value;

/// What `torchlet fit` was asked.
#[derive(Clone, Debug, Default)]
pub struct FitArgs {
    /// The script.
    pub file: PathBuf,
    /// Its arguments (`ARGS`; `NAME=VALUE` ones are read by `arg(name, default)`).
    pub args: Vec<String>,
    /// The GPU sizes, e.g. `80GiB` or `80GiB,24GiB`.
    pub gpus: String,
    /// Allocator settings to compare (PyTorch's `PYTORCH_CUDA_ALLOC_CONF` syntax).
    pub alloc_confs: Vec<String>,
    /// `NAME=a..b`: the largest value of argument NAME that fits.
    pub sweep: Option<String>,
    /// Run with values on simulated GPUs instead of shapes only (`--values`).
    pub with_values: bool,
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
}

/// One child run: the report `session::fit::run` wrote.
fn run_child(
    a: &FitArgs,
    conf: Option<&str>,
    args: &[String],
    quiet: bool,
) -> Result<Value, String> {
    let result = std::env::temp_dir().join(format!("torchlet-fit-{}.json", std::process::id()));
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("fit")
        .arg(&a.file)
        .args(args)
        .arg("--gpu")
        .arg(&a.gpus);
    cmd.arg("--child-result").arg(&result);
    if a.with_values {
        cmd.arg("--values");
    }
    if quiet {
        cmd.arg("--child-quiet").stdout(Stdio::null());
    }
    cmd.env_remove("TORCHLET_SIMULATE_CUDA");
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
    let devices = if a.with_values {
        torchlet_session::fit::init_with_values(&a.gpus)
    } else {
        torchlet_session::fit::init_shapes_only(&a.gpus)
    };
    devices.map_err(|e| format!("--gpu: {e}"))?;
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let report = torchlet_session::fit::run(&a.file.display().to_string(), &text, &a.args, quiet);
    std::fs::write(result, report.to_string())
        .map_err(|e| format!("cannot write {}: {e}", result.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Whether a report says the script ran to its end.
fn fits(report: &Value) -> bool {
    report["error"].is_null()
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Where a peak was reached: `FILE:LINE:COL: statement`.
fn site(m: &Value) -> String {
    m["site"].as_str().unwrap_or("(no statement)").to_string()
}

/// The report of one run, as a person reads it.
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
            gib(d["capacity"].as_u64().unwrap_or(0))
        );
        out += &format!(
            "  peak allocated: {alloc} B ({}), at {}\n",
            mib(alloc),
            site(pa)
        );
        out += &format!(
            "  peak reserved:  {res} B ({}), at {}\n",
            mib(res),
            site(pr)
        );
        out += &format!(
            "  at the reserved peak: {} segment(s); {:.1}% of reserved memory held by no tensor\n",
            pr["segments"],
            100.0 * pr["fragmentation"].as_f64().unwrap_or(0.0)
        );
    }
    out += &format!(
        "(the run, {}, took {:.2} s and at most {} of host memory)\n",
        report["mode"].as_str().unwrap_or("shapes only"),
        report["seconds"].as_f64().unwrap_or(0.0),
        mib(report["max_rss_bytes"].as_u64().unwrap_or(0))
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

/// `torchlet fit …`: one report per allocator setting (or a sweep per setting), then a comparison.
pub fn fit(a: &FitArgs) -> Result<ExitCode, String> {
    // Say so before any run starts, rather than once per child.
    std::fs::metadata(&a.file).map_err(|e| format!("cannot read {}: {e}", a.file.display()))?;
    let confs: Vec<Option<&str>> = if a.alloc_confs.is_empty() {
        vec![None]
    } else {
        a.alloc_confs.iter().map(|c| Some(c.as_str())).collect()
    };
    let mut all_fit = true;
    let mut rows = Vec::new();
    for &conf in &confs {
        println!(
            "== {} on {} ({}, {})",
            a.file.display(),
            a.gpus,
            a.mode(),
            conf_name(conf)
        );
        let report = match &a.sweep {
            Some(spec) => sweep::sweep(a, conf, spec)?,
            None => {
                let report = run_child(a, conf, &a.args, confs.len() > 1)?;
                print!("{}", describe(&report));
                report
            }
        };
        all_fit &= fits(&report);
        rows.push((conf_name(conf), report));
    }
    if rows.len() > 1 {
        println!(
            "\n{:<40} {:>18} {:>18}  fits",
            "setting", "peak allocated", "peak reserved"
        );
        for (name, r) in &rows {
            let d = &r["devices"][0];
            println!(
                "{name:<40} {:>18} {:>18}  {}",
                d["peak_allocated"]["allocated"],
                d["peak_reserved"]["reserved"],
                if fits(r) { "yes" } else { "no" }
            );
        }
    }
    Ok(if all_fit {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
