//! The temporaries of sort, topk, cumsum, multinomial and embedding backward (CUB's scratch among
//! them) against
//! PyTorch 2.11's, case by case: `tests/data/record_scratch_sizes.py --check` runs the recorded
//! sweep (`tests/data/scratch_sizes.json`) under torchlet's Python, in a fresh process on a
//! shapes-only simulated GPU (the events do not depend on values, and the sweep's millions of
//! elements would take minutes to sort in a debug build).
use crate::common;
use common::repo;

use std::process::Command;

const CHECK_ENV: &str = "TORCHLET_SCRATCH_CHECK";
/// The ops whose cases the check leaves out (none: every recorded case is checked).
const LEFT_OUT: &[&str] = &[];

#[test]
fn scratch_sizes_are_pytorchs() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "scratch_sizes::run_scratch_check",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHECK_ENV, "1")
        .output()
        .expect("the test binary starts again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recorded: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/data/scratch_sizes.json")).unwrap(),
    )
    .unwrap();
    let checked = recorded["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !LEFT_OUT.contains(&c["op"].as_str().unwrap()))
        .count();
    assert!(checked > 100, "the sweep holds {checked} cases");
    assert!(!stdout.contains("differs:"), "{stdout}");
    assert!(
        stdout.contains(&format!(" {checked} cases equal\n")),
        "{stdout}"
    );
}

/// The child: the sweep under torchlet's Python, shapes only.
#[test]
#[ignore = "started by scratch_sizes_are_pytorchs in a fresh process"]
fn run_scratch_check() {
    if std::env::var(CHECK_ENV).is_err() {
        println!("run_scratch_check runs the scratch sweep for scratch_sizes_are_pytorchs; nothing to run");
        return;
    }
    torchlet_core::device::init_shapes_only(common::SIMULATED_GPU).expect("a fresh process");
    common::uses_gpu();
    let python = torchlet_python::Python::new().expect("the interpreter starts");
    let script = repo().join("tests/data/record_scratch_sizes.py");
    let data = repo().join("tests/data/scratch_sizes.json");
    let mut args = vec!["--check".to_owned(), data.display().to_string()];
    args.extend(LEFT_OUT.iter().map(|s| s.to_string()));
    if let Err(error) = python.run_file(&script, &args) {
        panic!("{}", error.traceback);
    }
}
