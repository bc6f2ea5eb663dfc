//! `torchlet kernel install`: where the kernelspec goes (--prefix, --user, JUPYTER_DATA_DIR, JUPYTER_PATH) and what it holds.
use std::path::Path;
use std::process::{Command, Output};

fn install(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_torchlet"));
    command.args(["kernel", "install"]).args(args);
    command
        .env_remove("JUPYTER_PATH")
        .env_remove("JUPYTER_DATA_DIR")
        .env_remove("TORCHLET_SIMULATE_CUDA");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run torchlet kernel install")
}

fn spec(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("kernel.json")).expect("kernel.json written");
    assert!(
        !text.contains("null"),
        "kernel.json must have no null field:\n{text}"
    );
    serde_json::from_str(&text).expect("kernel.json is JSON")
}

#[test]
fn prefix_install_writes_spec_and_logos() {
    let tmp = tempfile::tempdir().unwrap();
    let out = install(&["--prefix", tmp.path().to_str().unwrap()], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tmp.path().join("share/jupyter/kernels/torchlet");
    assert!(String::from_utf8_lossy(&out.stdout).contains(dir.to_str().unwrap()));
    let spec = spec(&dir);
    let exe = Path::new(spec["argv"][0].as_str().unwrap());
    assert!(
        exe.is_absolute() && exe.exists(),
        "argv[0] is the absolute binary: {exe:?}"
    );
    assert_eq!(
        spec["argv"].as_array().unwrap()[1..],
        ["kernel", "--connection-file", "{connection_file}"]
    );
    assert_eq!(spec["display_name"], "torchlet (Rhai)");
    assert_eq!(spec["language"], "rhai");
    assert_eq!(spec["interrupt_mode"], "message");
    assert!(spec.get("env").is_none(), "no env unless asked");
    let python = self::spec(&tmp.path().join("share/jupyter/kernels/torchlet-python"));
    assert_eq!(
        python["language"], "python",
        "the Python kernelspec beside Rhai's"
    );
    assert_eq!(python["display_name"], "torchlet (Python)");
    assert_eq!(
        python["argv"].as_array().unwrap()[1..],
        [
            "kernel",
            "--language",
            "python",
            "--connection-file",
            "{connection_file}"
        ]
    );
    for (logo, size) in [("logo-32x32.png", 32u32), ("logo-64x64.png", 64)] {
        let png = std::fs::read(dir.join(logo)).expect("logo written");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (size, size), "{logo}");
    }
}

#[test]
fn user_install_honours_jupyter_data_dir_and_options() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = install(
        &[
            "--user",
            "--name",
            "torchlet-sim",
            "--display-name",
            "torchlet (sim)",
            "--env",
            "TORCHLET_SIMULATE_CUDA=8GiB",
        ],
        &[("JUPYTER_DATA_DIR", &data)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = spec(&data.join("kernels/torchlet-sim"));
    assert_eq!(spec["display_name"], "torchlet (sim)");
    assert_eq!(spec["env"]["TORCHLET_SIMULATE_CUDA"], "8GiB");
    let python = self::spec(&data.join("kernels/torchlet-sim-python"));
    assert_eq!(python["display_name"], "torchlet (sim), Python");
    assert_eq!(python["env"]["TORCHLET_SIMULATE_CUDA"], "8GiB");
    let only = tmp.path().join("only");
    let out = install(
        &[
            "--prefix",
            only.to_str().unwrap(),
            "--language",
            "python",
            "--name",
            "py",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        self::spec(&only.join("share/jupyter/kernels/py"))["language"],
        "python"
    );
    assert!(
        !only.join("share/jupyter/kernels/torchlet").exists(),
        "one language only"
    );
}

#[test]
fn without_a_flag_the_first_jupyter_path_entry_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    let second = tmp.path().join("second");
    let path = std::env::join_paths([&first, &second]).unwrap();
    let out = install(&[], &[("JUPYTER_PATH", Path::new(&path))]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(first.join("kernels/torchlet/kernel.json").exists());
    assert!(!second.exists());
}

#[test]
fn bad_names_and_env_pairs_are_refused_with_a_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().to_str().unwrap();
    let out = install(&["--prefix", prefix, "--name", "my kernel"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not allowed"));
    let out = install(&["--prefix", prefix, "--env", "NOVALUE"], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEY=VALUE"));
    assert!(
        !tmp.path().join("share").exists(),
        "nothing written on error"
    );
}

#[test]
fn installing_with_a_simulated_gpu_records_it_for_the_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("flag");
    let out = Command::new(env!("CARGO_BIN_EXE_torchlet"))
        .args(["--simulate-cuda=8GiB", "kernel", "install", "--prefix"])
        .arg(&prefix)
        .env_remove("TORCHLET_SIMULATE_CUDA")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("simulates CUDA devices of 8GiB"));
    let recorded = spec(&prefix.join("share/jupyter/kernels/torchlet"));
    assert_eq!(recorded["env"]["TORCHLET_SIMULATE_CUDA"], "8GiB");

    let prefix = tmp.path().join("env");
    let with_env = Command::new(env!("CARGO_BIN_EXE_torchlet"))
        .args(["kernel", "install", "--prefix"])
        .arg(&prefix)
        .env("TORCHLET_SIMULATE_CUDA", "4GiB")
        .output()
        .unwrap();
    assert!(with_env.status.success());
    let recorded = spec(&prefix.join("share/jupyter/kernels/torchlet"));
    assert_eq!(recorded["env"]["TORCHLET_SIMULATE_CUDA"], "4GiB");
}
