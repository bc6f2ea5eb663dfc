//! Start-up of the Jupyter kernel: spawn to kernel_info_reply, without a GPU (target ≤ 200 ms).
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use jupyter_protocol::KernelInfoRequest;
use jupyter_zmq_client::{create_client_shell_connection_with_identity, peer_identity_for_session};

#[path = "../tests/common/kernel_process.rs"]
#[allow(dead_code)]
mod kernel_process;

/// Spawn a kernel and time until its kernel_info_reply arrives.
fn time_to_kernel_info(runtime: &tokio::runtime::Runtime) -> Duration {
    let started = Instant::now();
    // Returns once the kernel listens on its ports, as a client that polls for them would.
    let kernel = kernel_process::start("bench", None);
    runtime.block_on(async {
        let session = uuid::Uuid::new_v4().to_string();
        let identity = peer_identity_for_session(&session).unwrap();
        let mut shell =
            create_client_shell_connection_with_identity(&kernel.info, &session, identity)
                .await
                .expect("connect shell");
        shell.send(KernelInfoRequest {}.into()).await.unwrap();
        shell.read().await.expect("kernel_info_reply");
    });
    started.elapsed()
}

fn startup(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let mut group = c.benchmark_group("kernel");
    group.sample_size(20);
    group.bench_function("spawn_to_kernel_info_reply", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| time_to_kernel_info(&runtime)).sum())
    });
    group.finish();
}

criterion_group!(benches, startup);
criterion_main!(benches);
