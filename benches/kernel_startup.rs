//! Start-up of the Jupyter kernel: spawn to kernel_info_reply, without a GPU (target ≤ 200 ms).
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use jupyter_protocol::{ConnectionInfo, KernelInfoRequest, Transport};
use jupyter_zmq_client::{create_client_shell_connection_with_identity, peer_identity_for_session};

fn connection_file(dir: &std::path::Path) -> (std::path::PathBuf, ConnectionInfo) {
    let ports: Vec<TcpListener> = (0..5)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let port = |i: usize| ports[i].local_addr().unwrap().port();
    let info = ConnectionInfo {
        transport: Transport::TCP,
        ip: "127.0.0.1".into(),
        shell_port: port(0),
        iopub_port: port(1),
        stdin_port: port(2),
        control_port: port(3),
        hb_port: port(4),
        signature_scheme: "hmac-sha256".into(),
        key: "bench".into(),
        kernel_name: None,
    };
    let path = dir.join("connection.json");
    std::fs::write(&path, serde_json::to_string(&info).unwrap()).unwrap();
    (path, info)
}

/// Spawn a kernel and time until its kernel_info_reply arrives.
fn time_to_kernel_info(runtime: &tokio::runtime::Runtime, dir: &std::path::Path) -> Duration {
    let (path, info) = connection_file(dir);
    let started = Instant::now();
    let mut kernel = Command::new(env!("CARGO_BIN_EXE_torchlet"))
        .args(["kernel", "--connection-file"])
        .arg(&path)
        .env_remove("TORCHLET_SIMULATE_CUDA")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the kernel");
    // Connect once the shell port listens, as a client that polls for it would.
    while TcpStream::connect(("127.0.0.1", info.shell_port)).is_err() {
        std::thread::sleep(Duration::from_micros(200));
    }
    runtime.block_on(async {
        let session = uuid::Uuid::new_v4().to_string();
        let identity = peer_identity_for_session(&session).unwrap();
        let mut shell = create_client_shell_connection_with_identity(&info, &session, identity)
            .await
            .expect("connect shell");
        shell.send(KernelInfoRequest {}.into()).await.unwrap();
        shell.read().await.expect("kernel_info_reply");
    });
    let elapsed = started.elapsed();
    let _ = kernel.kill();
    let _ = kernel.wait();
    elapsed
}

fn startup(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut group = c.benchmark_group("kernel");
    group.sample_size(20);
    group.bench_function("spawn_to_kernel_info_reply", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| time_to_kernel_info(&runtime, dir.path()))
                .sum()
        })
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);
