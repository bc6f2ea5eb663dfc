//! The command line: `run FILE [ARGS]`, `run -e`, `--simulate-cuda`, errors and exit codes.
use crate::common;
use common::{driver_has_a_gpu, text, write_script};
use std::process::Output;

/// Run the binary under test with `args`.
fn torchlet(args: &[&str]) -> Output {
    common::torchlet()
        .args(args)
        .output()
        .expect("the torchlet binary runs")
}

#[test]
fn run_e_prints_and_exits_zero() {
    let out = torchlet(&["run", "-e", "print(1 + 2); eprint(\"to stderr\");"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3\n");
    assert_eq!(text(&out.stderr), "to stderr\n");
}

#[test]
fn run_file_sees_its_arguments_as_args() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "args.rhai",
        "print(ARGS.len()); for a in ARGS { print(a); }",
    );
    let out = torchlet(&["run", path.to_str().unwrap(), "one", "--two", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3\none\n--two\n3\n");
}

#[test]
fn a_runtime_error_prints_file_line_col_kind_and_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "bad.rhai",
        "print(\"before\");\nlet a = 1;\nlet b = a + missing;\nprint(\"after\");\n",
    );
    let out = torchlet(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "before\n",
        "output before the error is kept"
    );
    let expected = format!(
        "{}:3:13: NameError: name 'missing' is not defined\n",
        path.display()
    );
    assert_eq!(text(&out.stderr), expected);
}

#[test]
fn a_syntax_error_runs_nothing_and_exits_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "syntax.rhai",
        "print(\"never\");\nlet x = (1 + ;\n",
    );
    let out = torchlet(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!("{}:2:", path.display())) && err.contains(": SyntaxError: "),
        "{err}"
    );
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let out = torchlet(&["run", "/nonexistent/script.rhai"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot read /nonexistent/script.rhai"),
        "{err}"
    );
}

#[test]
fn run_needs_a_file_or_code() {
    let out = torchlet(&["run"]);
    assert!(!out.status.success());
    assert!(!text(&out.stderr).is_empty());
}

#[test]
fn e_errors_are_located_in_the_snippet() {
    let out = torchlet(&["run", "-e", "let x = 1;\nx.nope()"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("<-e>:2:"), "{err}");
}

#[test]
fn cuda_works_with_a_gpu_and_without_one_says_how_to_simulate_one() {
    let out = torchlet(&[
        "run",
        "-e",
        "let x = randn(2, 2);\nlet y = x.cuda();\nprint(y.device);",
    ]);
    if driver_has_a_gpu() {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "cuda:0\n");
        return;
    }
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("<-e>:2:"), "{err}");
    assert!(err.contains("NVIDIA driver"), "{err}");
    assert!(err.contains("--simulate-cuda"), "{err}");
    let out = torchlet(&[
        "run",
        "-e",
        "print(cuda::is_available()); print(memory_allocated());",
    ]);
    assert_eq!(text(&out.stdout), "false\n0\n", "{}", text(&out.stderr));
}

#[test]
fn simulate_cuda_flag_and_environment_choose_the_devices() {
    let code = "print(cuda::device_count()); for i in 0..cuda::device_count() { print(cuda::mem_get_info(i)[1]); }";
    let out = torchlet(&["--simulate-cuda", "run", "-e", code]);
    assert_eq!(
        text(&out.stdout),
        format!("1\n{}\n", 16u64 << 30),
        "{}",
        text(&out.stderr)
    );
    let out = torchlet(&["--simulate-cuda=2GiB,1GiB", "run", "-e", code]);
    assert_eq!(
        text(&out.stdout),
        format!("2\n{}\n{}\n", 2u64 << 30, 1u64 << 30)
    );
    let out = common::torchlet()
        .args(["run", "-e", code])
        .env("TORCHLET_SIMULATE_CUDA", "3GiB")
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout),
        format!("1\n{}\n", 3u64 << 30),
        "{}",
        text(&out.stderr)
    );
    let out = torchlet(&["--simulate-cuda=lots", "run", "-e", code]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("lots"), "{}", text(&out.stderr));
}

#[test]
fn a_simulated_gpu_size_without_a_unit_is_refused() {
    let out = torchlet(&["--simulate-cuda=16", "run", "-e", "print(1)"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(
        err.contains("invalid size '16'") && err.contains("16GiB"),
        "{err}"
    );
    let out = common::torchlet()
        .args(["run", "-e", "print(1)"])
        .env("TORCHLET_SIMULATE_CUDA", "8,8GiB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "the variable is checked too");
    let out = torchlet(&[
        "--simulate-cuda=512MiB",
        "run",
        "-e",
        "print(cuda::mem_get_info()[1])",
    ]);
    assert_eq!(text(&out.stdout), "536870912\n", "{}", text(&out.stderr));
}

#[test]
fn a_bad_allocator_setting_in_the_environment_stops_at_start_naming_the_variable() {
    for var in ["TORCHLET_CUDA_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"] {
        let out = common::torchlet()
            .args(["--simulate-cuda", "run", "-e", "print(1)"])
            .env(var, "expandable_segments:yes")
            .output()
            .expect("the torchlet binary runs");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}: {err}");
        assert!(
            err.starts_with(&format!("torchlet: {var}=\"expandable_segments:yes\": ")),
            "{err}"
        );
        assert!(err.contains("expected True or False"), "{err}");
        assert_eq!(text(&out.stdout), "", "{var}: nothing ran");
    }
}
