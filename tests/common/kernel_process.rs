//! A `torchlet kernel` process on free local ports, started for tests that talk to it over ZeroMQ,
//! and the client connections they talk through.
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use jupyter_protocol::{ConnectionInfo, JupyterMessageContent, Transport};
use jupyter_zmq_client::{
    create_client_iopub_connection, create_client_shell_connection_with_identity,
    peer_identity_for_session, ClientIoPubConnection, ClientShellConnection,
};

/// How long a kernel may take to listen on its ports.
const LISTEN_WAIT: Duration = Duration::from_secs(30);
/// How many sets of ports to try before giving up.
const ATTEMPTS: usize = 5;

/// Held from choosing a kernel's ports until the kernel listens on them.
static STARTING: Mutex<()> = Mutex::new(());

/// A kernel process listening on its five ports; killed when dropped.
pub struct Kernel {
    pub child: Child,
    pub info: ConnectionInfo,
    _dir: tempfile::TempDir,
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start a kernel signing with `key`, its stdout and stderr to `logs/stdout` and `logs/stderr` (or
/// nowhere), and return once it listens on every port.
///
/// Ports found free by binding port 0 stay free only until someone else binds them: another test's
/// kernel in this process (its ports chosen the same way) or a Jupyter client in another process.
/// A kernel that loses one of its ports cannot bind it and exits, and a client connecting to that
/// port meanwhile reaches the wrong socket. So this process's kernels choose their ports one at a
/// time under a lock held until the kernel listens, and a kernel that exits before listening (it
/// lost a port to another process) is started again on fresh ports.
pub fn start(key: &str, logs: Option<&Path>) -> Kernel {
    start_with(key, logs, &[], &[])
}

/// A kernel of torchlet's Python (`kernel --language python`) on a simulated GPU of `gpu`.
pub fn start_python(key: &str, gpu: &str) -> Kernel {
    start_with(
        key,
        None,
        &["--language", "python"],
        &[("TORCHLET_SIMULATE_CUDA", gpu)],
    )
}

/// `start`, with `args` after `kernel` and `env` set (TORCHLET_SIMULATE_CUDA is unset unless
/// `env` sets it).
pub fn start_with(key: &str, logs: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Kernel {
    let _starting = STARTING.lock().unwrap_or_else(PoisonError::into_inner);
    for attempt in 1..=ATTEMPTS {
        let info = free_ports(key);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("connection.json");
        std::fs::write(&file, serde_json::to_string(&info).unwrap()).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_torchlet"))
            .arg("kernel")
            .args(args)
            .arg("--connection-file")
            .arg(&file)
            .env_remove("TORCHLET_SIMULATE_CUDA")
            .envs(env.iter().copied())
            .stdout(log_file(logs, "stdout"))
            .stderr(log_file(logs, "stderr"))
            .spawn()
            .expect("start the kernel");
        match wait_listening(&mut child, &info) {
            Ok(()) => {
                return Kernel {
                    child,
                    info,
                    _dir: dir,
                }
            }
            Err(status) => eprintln!(
                "kernel exited ({status}) before listening on {:?} (attempt {attempt}); \
                 starting it again on fresh ports",
                ports(&info)
            ),
        }
    }
    panic!("no kernel listened in {ATTEMPTS} attempts on fresh ports");
}

/// Connection info on five ports that are free now.
fn free_ports(key: &str) -> ConnectionInfo {
    let listeners: Vec<TcpListener> = (0..5)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let port = |i: usize| listeners[i].local_addr().unwrap().port();
    ConnectionInfo {
        transport: Transport::TCP,
        ip: "127.0.0.1".into(),
        shell_port: port(0),
        iopub_port: port(1),
        stdin_port: port(2),
        control_port: port(3),
        hb_port: port(4),
        signature_scheme: "hmac-sha256".into(),
        key: key.into(),
        kernel_name: Some("torchlet".into()),
    }
}

fn ports(info: &ConnectionInfo) -> [u16; 5] {
    [
        info.shell_port,
        info.iopub_port,
        info.stdin_port,
        info.control_port,
        info.hb_port,
    ]
}

/// Wait until `child` accepts TCP connections on every port, or return how it exited first.
///
/// A bare TCP connection that closes without a ZeroMQ greeting is harmless: the kernel's socket
/// counts it as a failed accept and goes on listening.
fn wait_listening(child: &mut Child, info: &ConnectionInfo) -> Result<(), ExitStatus> {
    let started = Instant::now();
    let mut waiting = ports(info).to_vec();
    loop {
        if let Some(status) = child.try_wait().expect("the kernel's status") {
            return Err(status);
        }
        waiting.retain(|&port| TcpStream::connect(("127.0.0.1", port)).is_err());
        if waiting.is_empty() {
            return Ok(());
        }
        assert!(
            started.elapsed() < LISTEN_WAIT,
            "the kernel did not listen on ports {waiting:?} within {LISTEN_WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn log_file(logs: Option<&Path>, name: &str) -> Stdio {
    logs.map_or_else(Stdio::null, |dir| {
        std::fs::File::create(dir.join(name)).unwrap().into()
    })
}

/// A shell connection of a new client session to a kernel that listens.
pub async fn shell(info: &ConnectionInfo) -> ClientShellConnection {
    let session = uuid::Uuid::new_v4().to_string();
    let identity = peer_identity_for_session(&session).unwrap();
    create_client_shell_connection_with_identity(info, &session, identity)
        .await
        .expect("connect shell")
}

/// An iopub subscription the kernel has confirmed with its welcome (within `wait`), so nothing
/// published later is missed.
pub async fn iopub(info: &ConnectionInfo, wait: Duration) -> ClientIoPubConnection {
    let mut iopub = create_client_iopub_connection(info, "", "iopub-session")
        .await
        .expect("connect iopub");
    loop {
        let msg = tokio::time::timeout(wait, iopub.read())
            .await
            .expect("an iopub_welcome in time")
            .expect("a readable iopub message");
        if matches!(msg.content, JupyterMessageContent::IoPubWelcome(_)) {
            return iopub;
        }
    }
}
