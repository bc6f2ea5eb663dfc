//! `.venv-jupyter` for the kernel tests: made by `tests/jupyter/setup.sh` on first use, once.
use crate::common::repo;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// pip downloads four packages and their dependencies; a slow mirror needs minutes, not hours.
const SETUP_LIMIT: Duration = Duration::from_secs(900);

/// The venv's python with the Jupyter clients importable, creating the venv when it is missing.
///
/// Panics (failing the test, never skipping it) with setup.sh's output and what to do when the
/// venv cannot be made. Test threads share one attempt; other processes wait on a file lock.
pub fn python() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match READY.get_or_init(prepare) {
        Ok(python) => python.clone(),
        Err(why) => panic!("{why}"),
    }
}

fn prepare() -> Result<PathBuf, String> {
    let python = repo().join(".venv-jupyter/bin/python");
    if clients_import(&python) {
        return Ok(python);
    }
    let lock = repo().join(".venv-jupyter.lock");
    let _held = lock_exclusively(&lock)?;
    // Another process may have made it while this one waited for the lock.
    if clients_import(&python) {
        return Ok(python);
    }
    let (ok, log) = run_setup()?;
    if ok && clients_import(&python) {
        return Ok(python);
    }
    Err(format!(
        "could not create .venv-jupyter with the Jupyter clients the kernel tests drive.\n\
         tests/jupyter/setup.sh said:\n{log}\n\
         It needs python3 with the venv module (Debian/Ubuntu: apt install python3-venv) and pip \
         able to reach PyPI (or a mirror through PIP_INDEX_URL). Run `bash tests/jupyter/setup.sh` \
         to retry by hand; set PYTHON=/path/to/python3 to use another interpreter."
    ))
}

/// Whether `python` exists and imports every client the tests use.
fn clients_import(python: &Path) -> bool {
    python.exists()
        && Command::new(python)
            .args([
                "-c",
                "import jupyter_kernel_test, jupyter_client, nbclient, nbformat",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// An exclusive lock on `path`, held until the returned file is dropped.
fn lock_exclusively(path: &Path) -> Result<File, String> {
    let file = File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; it blocks until the lock is granted.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("cannot lock {}: {e}", path.display()));
    }
    Ok(file)
}

/// Run setup.sh within `SETUP_LIMIT`: whether it succeeded, and everything it printed.
fn run_setup() -> Result<(bool, String), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let log = dir.path().join("setup.log");
    let out = File::create(&log).map_err(|e| format!("log file: {e}"))?;
    let err = out.try_clone().map_err(|e| format!("log file: {e}"))?;
    eprintln!(
        "creating .venv-jupyter with tests/jupyter/setup.sh (once; pip output follows on failure)"
    );
    let mut child = Command::new("bash")
        .arg(repo().join("tests/jupyter/setup.sh"))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run bash tests/jupyter/setup.sh: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > SETUP_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(e) => return Err(format!("waiting for setup.sh: {e}")),
        }
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    Ok(match status {
        Some(status) => (status.success(), format!("{text}({status})")),
        None => (false, format!("{text}(timed out after {SETUP_LIMIT:?})")),
    })
}
