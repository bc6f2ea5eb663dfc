//! The kernel under real Jupyter clients: jupyter_kernel_test's suite plus torchlet's protocol tests (tests/jupyter/test_kernel.py), protocol races in loops (test_protocol.py), and nbclient running the article's notebook.
//!
//! The Python clients live in `.venv-jupyter`, which the first test to need it creates with
//! `tests/jupyter/setup.sh`; when that fails the tests fail with pip's output (they never skip).
use crate::common;
use common::repo;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::jupyter_venv;

/// A private Jupyter directory with the kernelspecs of this build: `torchlet` and `torchlet-sim`
/// (each with its `-python` twin); `torchlet-sim`'s kernel.json sets TORCHLET_SIMULATE_CUDA (how
/// a notebook gets a simulated GPU).
fn jupyter_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    let install = |extra: &[&str]| {
        let status = Command::new(env!("CARGO_BIN_EXE_torchlet"))
            .args(["kernel", "install", "--prefix"])
            .arg(dir.path())
            .args(extra)
            .env_remove("TORCHLET_SIMULATE_CUDA")
            .stdout(Stdio::null())
            .status()
            .expect("run torchlet kernel install");
        assert!(status.success(), "torchlet kernel install {extra:?} failed");
    };
    install(&[]);
    install(&[
        "--name",
        "torchlet-sim",
        "--display-name",
        "torchlet (simulated GPU)",
        "--env",
        "TORCHLET_SIMULATE_CUDA=16GiB",
    ]);
    dir
}

/// Run `args` with the venv's python in tests/jupyter, the kernelspec visible, within `limit`.
fn run_python(python: &Path, dir: &Path, args: &[&str], limit: Duration) -> (bool, String) {
    let jupyter = dir.join("share/jupyter");
    let mut command = Command::new(python);
    command
        .args(args)
        .current_dir(repo().join("tests/jupyter"))
        .env("JUPYTER_PATH", &jupyter)
        .env("JUPYTER_DATA_DIR", dir.join("data"))
        .env("JUPYTER_RUNTIME_DIR", dir.join("runtime"))
        .env_remove("TORCHLET_SIMULATE_CUDA");
    common::run_logged(command, &dir.join("python.log"), limit)
}

#[test]
fn jupyter_kernel_test_suite_and_protocol_tests_pass_with_none_skipped() {
    let python = jupyter_venv::python();
    let dir = jupyter_dir();
    let (ok, log) = run_python(
        &python,
        dir.path(),
        &["-m", "unittest", "-v", "test_kernel"],
        Duration::from_secs(240),
    );
    println!("{log}");
    assert!(ok, "the Jupyter suite failed:\n{log}");
    assert!(!log.contains("skipped"), "tests were skipped:\n{log}");
    for name in [
        "test_completion",
        "test_history",
        "test_display_data",
        "test_recv_iopub_welcome_msg",
    ] {
        assert!(log.contains(name), "{name} did not run:\n{log}");
    }
}

#[test]
fn protocol_races_hold_in_every_round() {
    let python = jupyter_venv::python();
    let dir = jupyter_dir();
    let (ok, log) = run_python(
        &python,
        dir.path(),
        &["-m", "unittest", "-v", "test_protocol"],
        Duration::from_secs(400),
    );
    println!("{log}");
    assert!(ok, "the protocol tests failed:\n{log}");
    assert!(!log.contains("skipped"), "tests were skipped:\n{log}");
    for name in [
        "test_run_all_aborts_every_cell_queued_behind_a_fast_failure",
        "test_every_output_is_sent_before_its_reply",
        "test_kernel_writes_nothing_to_stderr",
        "test_rerunning_a_cell_keeps_memory_allocated",
    ] {
        assert!(
            log.contains(&format!("{name} ")),
            "{name} did not run:\n{log}"
        );
    }
}

#[test]
fn nbclient_runs_the_article_notebooks_with_pytorchs_numbers() {
    let python = jupyter_venv::python();
    let dir = jupyter_dir();
    let (ok, log) = run_python(
        &python,
        dir.path(),
        &["-m", "unittest", "-v", "test_notebook"],
        Duration::from_secs(240),
    );
    println!("{log}");
    assert!(ok, "the article notebook failed:\n{log}");
    for test in [
        "test_every_step_shows_pytorchs_numbers",
        "test_the_python_notebook_shows_pytorchs_numbers_too",
    ] {
        assert!(
            log.contains(&format!("ArticleNotebook.{test}) ... ok")),
            "{log}"
        );
    }
}

#[test]
fn jupyter_kernelspec_list_shows_the_installed_kernels() {
    let python = jupyter_venv::python();
    let dir = jupyter_dir();
    let (ok, log) = run_python(
        &python,
        dir.path(),
        &["-m", "jupyter_client.kernelspecapp", "list", "--json"],
        Duration::from_secs(60),
    );
    assert!(ok, "jupyter kernelspec list failed:\n{log}");
    let start = log.find('{').expect("JSON output");
    let listed: serde_json::Value = serde_json::from_str(&log[start..]).expect("kernelspec JSON");
    let torchlet = &listed["kernelspecs"]["torchlet"]["spec"];
    assert_eq!(torchlet["language"], "rhai");
    assert_eq!(torchlet["interrupt_mode"], "message");
    let sim = &listed["kernelspecs"]["torchlet-sim"]["spec"];
    assert_eq!(sim["env"]["TORCHLET_SIMULATE_CUDA"], "16GiB");
}
