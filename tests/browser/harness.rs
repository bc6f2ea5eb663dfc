//! The browser test's machinery: prerequisites, setup.sh, a JupyterLab server that is always killed, and the node driver.
use crate::common::repo;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// setup.sh downloads JupyterLab and playwright-core once; later runs only check them.
const SETUP_LIMIT: Duration = Duration::from_secs(900);
/// A cold JupyterLab start on a loaded 2-core machine.
const SERVER_LIMIT: Duration = Duration::from_secs(180);
/// The whole browser session: two notebooks run, the panels opened, screenshots taken.
const DRIVE_LIMIT: Duration = Duration::from_secs(600);

/// What the browser test needs from the machine: chromium and node.
pub struct Tools {
    /// The chromium executable (TORCHLET_CHROMIUM, else Debian's /usr/bin/chromium).
    pub chromium: PathBuf,
}

/// The tools, or why the test cannot run; with TORCHLET_SKIP_BROWSER=1 a missing tool is a skip (None).
pub fn tools() -> Option<Tools> {
    let chromium = std::env::var_os("TORCHLET_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let node = Command::new("node").arg("--version").output();
    let mut missing = Vec::new();
    if !chromium.is_file() {
        missing.push(format!(
            "chromium (looked for {}; Debian: `apt-get install -y chromium`, or set TORCHLET_CHROMIUM)",
            chromium.display()
        ));
    }
    if !node.is_ok_and(|o| o.status.success()) {
        missing.push("node 18 or later with npm (Debian: `apt-get install -y nodejs npm`)".into());
    }
    if missing.is_empty() {
        return Some(Tools { chromium });
    }
    if std::env::var("TORCHLET_SKIP_BROWSER").as_deref() == Ok("1") {
        println!(
            "browser test skipped (TORCHLET_SKIP_BROWSER=1): missing {}",
            missing.join("; ")
        );
        return None;
    }
    panic!(
        "the browser test needs: {}.\nInstall them (scripts/test.sh does, with apt-get), or set \
         TORCHLET_SKIP_BROWSER=1 to skip this test.",
        missing.join("; ")
    );
}

/// Run tests/browser/setup.sh (the venv with JupyterLab, and playwright-core), failing with its output.
pub fn setup(dir: &Path) {
    let mut command = Command::new("bash");
    command.arg(repo().join("tests/browser/setup.sh"));
    let (ok, log) = crate::common::run_logged(command, &dir.join("setup.log"), SETUP_LIMIT);
    assert!(
        ok,
        "tests/browser/setup.sh failed:\n{log}\nIt needs python3 with venv and pip reaching PyPI, \
         and npm reaching the npm registry. Run `bash tests/browser/setup.sh` to retry by hand."
    );
}

/// A JupyterLab server in its own process group, stopped (with its kernels) when dropped.
pub struct Lab {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The token the server requires.
    pub token: String,
    log: PathBuf,
}

impl Lab {
    /// Start JupyterLab on a free port, serving `dir/root`, with every Jupyter directory under `dir`.
    pub fn start(dir: &Path) -> Lab {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let token = format!("{:x}{:x}", std::process::id(), nanos());
        let log = dir.join("lab.log");
        let mut command = Command::new(repo().join(".venv-browser/bin/jupyter-lab"));
        command
            .args(["--allow-root", "--no-browser", "--ip=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--IdentityProvider.token={token}"))
            .arg(format!(
                "--ServerApp.root_dir={}",
                dir.join("root").display()
            ))
            .env("JUPYTER_PATH", dir.join("share/jupyter"))
            .env("JUPYTER_DATA_DIR", dir.join("data"))
            .env("JUPYTER_CONFIG_DIR", dir.join("config"))
            .env("JUPYTER_RUNTIME_DIR", dir.join("runtime"))
            .env("JUPYTERLAB_SETTINGS_DIR", dir.join("settings"))
            .env("JUPYTERLAB_WORKSPACES_DIR", dir.join("workspaces"))
            .env_remove("TORCHLET_SIMULATE_CUDA")
            .stdin(Stdio::null())
            .stdout(File::create(&log).expect("lab log"))
            .stderr(File::options().append(true).open(&log).expect("lab log"))
            // Its own group, so Drop can stop the server however it was started.
            .process_group(0);
        let child = command.spawn().expect("start jupyter-lab");
        let lab = Lab {
            child,
            url: format!("http://127.0.0.1:{port}"),
            token,
            log,
        };
        lab.wait_until_serving(port);
        lab
    }

    fn wait_until_serving(&self, port: u16) {
        let started = Instant::now();
        while started.elapsed() < SERVER_LIMIT {
            if status_ok(port, &self.token) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "JupyterLab did not serve within {SERVER_LIMIT:?}:\n{}",
            self.log()
        );
    }

    /// What the server printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let group = -(self.child.id() as i32);
        // SIGTERM lets the server shut its kernels down; SIGKILL if it does not end in time.
        // SAFETY: signals to the process group this test started.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(15) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: as above.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Whether GET /api/status answers 200 with this token.
fn status_ok(port: u16, token: &str) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "GET /api/status HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: token {token}\r\n\r\n"
    );
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200")
}

/// Run drive.mjs against `lab`, with screenshots and results.json written to `out`.
pub fn drive(lab: &Lab, tools: &Tools, out: &Path, dir: &Path) -> serde_json::Value {
    std::fs::create_dir_all(out).expect("output directory");
    let _ = std::fs::remove_file(out.join("results.json"));
    let mut command = Command::new("node");
    command
        .arg("drive.mjs")
        .current_dir(repo().join("tests/browser"))
        .env("LAB_URL", &lab.url)
        .env("LAB_TOKEN", &lab.token)
        .env("OUT_DIR", out)
        .env("CHROMIUM", &tools.chromium);
    let (ok, log) = crate::common::run_logged(command, &dir.join("drive.log"), DRIVE_LIMIT);
    assert!(
        ok,
        "drive.mjs failed:\n{log}\nJupyterLab said:\n{}",
        lab.log()
    );
    let text =
        std::fs::read_to_string(out.join("results.json")).expect("drive.mjs wrote results.json");
    serde_json::from_str(&text).expect("results.json is JSON")
}
