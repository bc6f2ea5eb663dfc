//! The `torchlet` command line: REPL, script runner, Python, Jupyter kernel.
//!
//! Map: this file parses the command line and dispatches; `runner` is `torchlet run` (a file, a
//! snippet or standard input, errors as `FILE:LINE:COL`), `repl` the interactive REPL, `fit`
//! `torchlet fit` (will a script fit a GPU, run shapes only in child processes), `python`
//! `torchlet python` (a `.py` file, `-c CODE` or the Python REPL). The Jupyter kernel is the
//! `torchlet_kernel` crate.
mod fit;
mod python;
mod repl;
mod runner;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// See and control GPU memory in tensor code.
#[derive(Parser, Debug)]
#[command(name = "torchlet", version, about)]
struct Cli {
    /// Simulate CUDA devices in host memory: one size per device (default 16GiB), e.g. 16GiB,8GiB.
    #[arg(long, global = true, value_name = "SIZE[,SIZE…]", num_args = 0..=1, require_equals = true,
          default_missing_value = "16GiB", env = "TORCHLET_SIMULATE_CUDA")]
    simulate_cuda: Option<String>,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Python with torchlet's `torch`: run FILE.py, `-c CODE`, or the Python REPL.
    Python(PythonArgs),
    /// Run a .rhai script, or a snippet with -e.
    Run(RunArgs),
    /// Serve as a Jupyter kernel, or install the kernelspec.
    Kernel(KernelArgs),
    /// Will it fit? Run a script shapes only on GPUs of given sizes and report peaks and OOMs.
    Fit(FitCliArgs),
}

#[derive(Args, Debug)]
struct FitCliArgs {
    /// The script to run (shapes only, unless --values).
    file: PathBuf,
    /// Arguments the script sees as `ARGS` (NAME=VALUE ones are read by `arg(name, default)`).
    args: Vec<String>,
    /// GPUs to answer for, one verdict each: H200, H100-80GB, RTX-4090, … or a size (24GiB, 24GB).
    #[arg(long, value_name = "GPU[,GPU…]")]
    gpu: Option<String>,
    /// One machine of several GPUs, e.g. 2xH100-80GB or H200+H200 (repeat for more machines).
    #[arg(long, value_name = "NxGPU")]
    devices: Vec<String>,
    /// Give a plain size (24GiB) all to the allocator: no CUDA context taken off.
    #[arg(long)]
    no_context: bool,
    /// Memory held for other tenants on every GPU, e.g. 2GiB.
    #[arg(long, value_name = "SIZE")]
    reserve: Option<String>,
    /// Allocator settings to compare, in PyTorch's syntax (repeat the option for each).
    #[arg(long = "alloc-conf", value_name = "CONF")]
    alloc_conf: Vec<String>,
    /// The largest value of argument NAME in a..b that fits (NAME=a,b,c: each value); twice: the grid.
    #[arg(long, value_name = "NAME=a..b")]
    sweep: Vec<String>,
    /// Compare values of a script argument in one table, e.g. ckpt=0,1 (repeatable).
    #[arg(long, value_name = "NAME=a,b,c")]
    vary: Vec<String>,
    /// A HF-style config.json whose fields become script arguments (NAME=VALUE).
    #[arg(long, value_name = "config.json")]
    config: Option<PathBuf>,
    /// Print every figure of the report as JSON (docs/fit-json.md).
    #[arg(long)]
    json: bool,
    /// Run with values (real math on simulated GPUs) instead of shapes only: slower and needs host
    /// memory for every tensor, but checks the shapes-only answer.
    #[arg(long)]
    values: bool,
    /// Also write a self-contained HTML page: the memory over the run and what it is at the peak.
    #[arg(long, value_name = "OUT.html")]
    report: Option<PathBuf>,
    /// Run a torch.distributed script as ranks of a world of N (torchrun's RANK/WORLD_SIZE): the
    /// verdict is rank 0's, and a table gives each simulated rank's peaks.
    #[arg(long, value_name = "N")]
    world_size: Option<usize>,
    /// With --child-result: record the memory after every request for the HTML report.
    #[arg(long, hide = true)]
    child_timeline: bool,
    /// Run once here and write the report to this file (what `fit` runs in each child).
    #[arg(long, hide = true)]
    child_result: Option<PathBuf>,
    /// With --child-result: drop what the script prints.
    #[arg(long, hide = true)]
    child_quiet: bool,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Code to run instead of a file.
    #[arg(
        short = 'e',
        long = "eval",
        value_name = "CODE",
        conflicts_with = "file"
    )]
    code: Option<String>,
    /// The script to run.
    #[arg(required_unless_present = "code")]
    file: Option<PathBuf>,
    /// After the run, print per source line: runs, Δallocated, Δreserved, peak, segments.
    #[arg(long)]
    ledger: bool,
    /// Record GPU memory history from the start and write it here at the end, also on error
    /// (.json, or .pickle), for PyTorch's memory viewer.
    #[arg(long, value_name = "OUT.json")]
    snapshot: Option<PathBuf>,
    /// Arguments the script sees as `ARGS`.
    #[arg(trailing_var_arg = true)]
    args: Vec<String>,
}

#[derive(Args, Debug)]
struct PythonArgs {
    /// Code to run instead of a file.
    #[arg(short = 'c', value_name = "CODE", conflicts_with = "file")]
    code: Option<String>,
    /// The program to run; none starts the Python REPL.
    file: Option<PathBuf>,
    /// Arguments the program sees in `sys.argv[1:]`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

#[derive(Args, Debug)]
struct KernelArgs {
    /// The connection file Jupyter passes (kernel.json's argv).
    #[arg(long, short = 'f', value_name = "FILE")]
    connection_file: Option<PathBuf>,
    /// The language of the notebook's cells: torchlet's Rhai, or Python with torchlet's torch.
    #[arg(long, value_enum, default_value_t = torchlet_kernel::LanguageKind::Rhai)]
    language: torchlet_kernel::LanguageKind,
    #[command(subcommand)]
    action: Option<KernelAction>,
}

#[derive(Subcommand, Debug)]
enum KernelAction {
    /// Install the kernelspec so Jupyter front ends list torchlet.
    Install(torchlet_kernel::InstallArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Fit(args)) = cli.command {
        return finish(fit(args));
    }
    if let Err(message) = torchlet_session::init_devices(cli.simulate_cuda.as_deref()) {
        eprintln!("torchlet: {message}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        None => crate::repl::run(),
        Some(Command::Python(args)) => match (&args.code, &args.file) {
            (Some(code), _) => crate::python::run_code(code),
            (None, Some(file)) => {
                crate::python::run_file(file, &args.args, &runner::RunOptions::default())
            }
            (None, None) => crate::python::repl(),
        },
        Some(Command::Run(args)) if is_python(args.file.as_deref()) => {
            let file = args.file.as_deref().unwrap_or(std::path::Path::new(""));
            let options = crate::runner::RunOptions {
                ledger: args.ledger,
                snapshot: args.snapshot,
            };
            crate::python::run_file(file, &args.args, &options)
        }
        Some(Command::Run(args)) => {
            let options = crate::runner::RunOptions {
                ledger: args.ledger,
                snapshot: args.snapshot,
            };
            crate::runner::run(
                args.file.as_deref(),
                args.code.as_deref(),
                &args.args,
                options,
            )
        }
        Some(Command::Kernel(KernelArgs {
            action: Some(KernelAction::Install(install)),
            ..
        })) => torchlet_kernel::install(&install),
        Some(Command::Kernel(KernelArgs {
            connection_file: Some(file),
            language,
            ..
        })) => torchlet_kernel::run(&file, language),
        Some(Command::Kernel(_)) => {
            Err("kernel: pass --connection-file FILE, or `kernel install`".into())
        }
        Some(Command::Fit(_)) => unreachable!("fit is dispatched before devices start"),
    };
    finish(result)
}

/// Whether `torchlet run FILE` runs Python: `.py` files do; `.rhai` and others are Rhai.
fn is_python(file: Option<&std::path::Path>) -> bool {
    file.and_then(|f| f.extension()).is_some_and(|e| e == "py")
}

/// `torchlet fit`: shapes-only devices of its own, so it starts before any other device setup.
fn fit(args: FitCliArgs) -> Result<ExitCode, String> {
    let fit_args = crate::fit::FitArgs {
        file: args.file,
        args: args.args,
        gpus: args.gpu,
        devices: args.devices,
        no_context: args.no_context,
        reserve: args.reserve,
        alloc_confs: args.alloc_conf,
        sweep: args.sweep,
        vary: args.vary,
        config: args.config,
        json: args.json,
        with_values: args.values,
        report: args.report,
        timeline: args.child_timeline,
        world_size: args.world_size,
        rank: None,
    };
    match args.child_result {
        Some(result) => crate::fit::child(&fit_args, &result, args.child_quiet),
        None => crate::fit::fit(&fit_args),
    }
}

fn finish(result: Result<ExitCode, String>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("torchlet: {message}");
            ExitCode::FAILURE
        }
    }
}
