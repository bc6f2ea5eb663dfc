//! The `torchlet` binary under test, run as a child process, and the files it is given.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root, where the test data and scripts are.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary under test, with no device or allocator settings from the environment:
/// `TORCHLET_BIN` where the tests run away from the build (the GPU machine), else this build's.
pub fn torchlet() -> Command {
    let bin = std::env::var_os("TORCHLET_BIN");
    let mut command = Command::new(bin.unwrap_or_else(|| env!("CARGO_BIN_EXE_torchlet").into()));
    for var in [
        "TORCHLET_SIMULATE_CUDA",
        "TORCHLET_CUDA_ALLOC_CONF",
        "PYTORCH_CUDA_ALLOC_CONF",
    ] {
        command.env_remove(var);
    }
    command
}

/// A child's output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether the binary under test finds a usable CUDA GPU (asked of its driver, not of the environment).
pub fn driver_has_a_gpu() -> bool {
    let out = torchlet()
        .args(["run", "-e", "print(cuda::is_available())"])
        .output()
        .expect("the torchlet binary runs");
    match text(&out.stdout).trim() {
        "true" => true,
        "false" => false,
        other => panic!(
            "cuda::is_available() printed {other:?}: {}",
            text(&out.stderr)
        ),
    }
}

/// Write `body` as the script `name` in `dir` (a test's temporary folder); its path.
pub fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write the script");
    path
}

/// The REPL of the binary under test, for a pseudo-terminal, with `home` as its HOME and data
/// directory (so no history or settings of the machine's user reach it).
pub fn repl_command(home: &Path) -> Command {
    let mut command = torchlet();
    command
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("TERM", "xterm");
    command
}
