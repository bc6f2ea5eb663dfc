//! The same `.py` file under PyTorch and under torchlet: every program of `tests/parity/` that
//! torchlet's Python runs gives, event by event, the history PyTorch recorded for that very file.
//!
//! Each program runs in a fresh process (this binary again, `parity_python::run_one_program`),
//! imports the real `tests/parity/harness.py`, whose `checkpoint()` reads torchlet's
//! `torch.cuda.memory_stats()` and `_snapshot()` as it reads PyTorch's, and is compared with
//! `tests/data/torch_traces/NAME.json` by the same code as the Rhai twins.
use crate::common;
use common::repo;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use torchlet_alloc::{HistoryMode, HistoryOptions};

use super::parity::{
    compare_checkpoints, compare_events, kept_events, read_json, stream_ordinals, traces_dir,
};
use common::parity_known::KNOWN;

const PROGRAM_ENV: &str = "TORCHLET_PY_PARITY_PROGRAM";
/// A program with this line runs on a shapes-only simulated GPU (as `torchlet fit` runs): the
/// allocator's events do not depend on values, and a model zoo program's math would take minutes.
/// On the real GPU it runs with values.
const SHAPES_ONLY: &str = "# parity: shapes only";
const RECORD_ENV: &str = "TORCHLET_PY_PARITY_RECORD";

macro_rules! python_parity {
    ($($name:ident),* $(,)?) => {
        /// The programs torchlet's Python runs unchanged; each is compared with PyTorch's trace.
        const RUNNABLE: &[&str] = &[$(stringify!($name)),*];
        $(#[test] fn $name() { check(stringify!($name)); })*
    };
}

python_parity!(
    activations,
    allocator_sizes,
    article_del,
    article_del_empty_cache,
    article_empty_cache,
    article_no_grad,
    autograd_ops,
    bare_statements,
    batched_matmul,
    chains,
    checkpointing,
    comparisons,
    compound_assign,
    creation,
    elementwise,
    grad_accumulation,
    half_roundtrip,
    py_amp_gradscaler,
    py_autograd_grad,
    py_checkpoint_reentrant,
    py_conv_more,
    py_ddp_bucket_view,
    py_ddp_mlp,
    py_ddp_no_sync,
    py_ddp_unused,
    py_elementwise_more,
    py_fold_scatter,
    py_fsdp2_accum,
    py_fsdp2_cpu_offload,
    py_fsdp2_gpt_bf16,
    py_fsdp2_last_rank,
    py_fsdp2_meta_init,
    py_fsdp2_mlp,
    py_fsdp2_reshard_int,
    py_fsdp2_world,
    py_gpt_modules,
    py_index_scatter,
    py_llama_lora,
    py_losses,
    py_mask_select,
    py_mnist_cnn,
    py_multihead_attention,
    py_resnet_block,
    py_retain_grad,
    py_ops_reach,
    py_optim_more,
    py_reductions_more,
    py_sampling,
    py_save_load,
    py_no_grad_function,
    py_sequential_sgd,
    py_streams,
    py_unet_block,
    py_sdpa_cudnn,
    py_sdpa_efficient,
    py_sdpa_flash,
    py_sdpa_math,
    py_softmax_dtype,
    py_zoo_gpt2,
    py_zoo_llama_lora,
    py_zoo_resnet,
    py_zoo_vit,
    py_zoo_unet,
    autocast_bf16,
    cross_entropy_accum,
    gpt_block,
    gpt4,
    index_ops,
    inplace_activations,
    inplace_no_grad,
    linear_layer_norm,
    loss_total_pitfall,
    matmul_variants,
    mlp3_adamw,
    mlp_mse_accum,
    mlp_sgd,
    mlp_varlen_adam,
    optim_adam,
    optim_adamw,
    optim_adamw_single,
    optim_sgd,
    python_scoping,
    reductions,
    shape_ops,
    soak_varlen,
    softmax_dims,
    tensor_arrays,
    transformer_block,
    views_and_copies,
    zero_grad_modes,
);

#[test]
fn every_parity_program_runs_under_torchlets_python() {
    let dir = repo().join("tests/parity");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let is_program = path.extension().is_some_and(|e| e == "py")
            && !["harness", "record", "compare", "placement_diff"].contains(&name.as_str());
        if is_program && !RUNNABLE.contains(&name.as_str()) {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "these parity programs are not run under torchlet's Python: add them to python_parity! {missing:?}"
    );
}

/// `py_fsdp2_world.py` as other ranks of other worlds (RANK and WORLD_SIZE, as a launcher sets
/// them), each against PyTorch's recording of that rank (`tests/data/fsdp2_ranks/`): world size 1,
/// where FSDP2 copies instead of gathering, 2 and 4, and rank 4 of 5 with the short shards.
#[test]
fn py_fsdp2_world_as_other_ranks() {
    let name = "py_fsdp2_world";
    for (rank, world) in [("0", "1"), ("0", "2"), ("0", "4"), ("4", "5")] {
        let trace = repo()
            .join("tests/data/fsdp2_ranks")
            .join(format!("{name}.rank{rank}_of_{world}.json"));
        check_recorded(name, &trace, &[("RANK", rank), ("WORLD_SIZE", world)]);
    }
}

/// Run `name.py` in a fresh process and compare its events and checkpoints with PyTorch's.
fn check(name: &str) {
    check_recorded(name, &traces_dir().join(format!("{name}.json")), &[]);
}

/// Run `name.py` in a fresh process with `envs` and compare it with the recording at `trace`.
fn check_recorded(name: &str, trace: &std::path::Path, envs: &[(&str, &str)]) {
    let torch: Value = read_json(trace);
    let out = run_child(name, envs);
    assert!(
        out.status.success(),
        "{name}.py failed under torchlet's Python:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = read_json(&record_path(name));
    let lines: Vec<String> = std::fs::read_to_string(program(name))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let known = KNOWN.iter().find(|(program, ..)| *program == name);
    let first_difference = compare_events(name, &torch, &ours, &lines, known.is_some());
    match (known, first_difference) {
        (Some(&(_, at, why)), Some(i)) => {
            assert_eq!(i, at, "{name}: the known difference ({why}) moved")
        }
        (Some(&(_, _, why)), None) => {
            panic!("{name} now matches PyTorch: remove it from KNOWN ({why})")
        }
        _ => {}
    }
    compare_checkpoints(name, &torch, &ours, first_difference);
}

fn program(name: &str) -> PathBuf {
    repo().join("tests/parity").join(format!("{name}.py"))
}

fn record_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "torchlet-py-parity-{}-{name}.json",
        std::process::id()
    ))
}

fn run_child(name: &str, envs: &[(&str, &str)]) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .envs(envs.iter().copied())
        .args([
            "--ignored",
            "--exact",
            "parity_python::run_one_program",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROGRAM_ENV, program(name))
        .env(RECORD_ENV, record_path(name))
        .env_remove("TORCHLET_CUDA_ALLOC_CONF")
        .env_remove("PYTORCH_CUDA_ALLOC_CONF")
        .output()
        .expect("the test binary starts again")
}

/// The child: run one `.py` with history on, write what happened.
#[test]
#[ignore = "started by the Python parity tests, one fresh process per program"]
fn run_one_program() {
    let (Ok(program), Ok(record)) = (std::env::var(PROGRAM_ENV), std::env::var(RECORD_ENV)) else {
        println!(
            "run_one_program runs one Python parity program for the parity tests; nothing to run"
        );
        return;
    };
    let source = std::fs::read_to_string(&program).unwrap_or_default();
    if source.lines().any(|l| l.trim() == SHAPES_ONLY) && !common::real_gpu() {
        torchlet_core::device::init_shapes_only(common::SIMULATED_GPU).expect("a fresh process");
    }
    common::uses_gpu();
    let allocator = torchlet_core::device::cuda_allocator(0).expect("cuda:0");
    allocator.record_memory_history(HistoryOptions {
        enabled: Some(HistoryMode::All),
        max_entries: 10_000_000,
        clear_history: true,
    });
    let python = torchlet_python::Python::new().expect("the interpreter starts");
    if let Err(error) = python.run_file(std::path::Path::new(&program), &[]) {
        panic!("{}", error.traceback);
    }
    let checkpoints = python
        .eval_str("__import__('json').dumps(__import__('harness').CHECKPOINTS)")
        .expect("the harness's checkpoints");
    let checkpoints: Value = serde_json::from_str(&checkpoints).expect("checkpoints are JSON");
    let trace = allocator.snapshot().device_traces[0].clone();
    let kept = kept_events(&trace);
    let streams = stream_ordinals(&kept);
    let events: Vec<Value> = kept
        .iter()
        .zip(streams)
        .map(|(e, stream)| json!({"action": e.action.name(), "size": e.size, "line": null, "stream": stream}))
        .collect();
    let record_json = json!({"events": events, "checkpoints": checkpoints});
    std::fs::write(&record, record_json.to_string()).expect("the record is written");
}
