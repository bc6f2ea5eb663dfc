//! Real-GPU faults give a clear error and never a panic or a hang: NVRTC missing, and a kernel that
//! faults (an illegal address), each in a child `torchlet run` so a lost context stays there.
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Longer than a cold start that compiles every kernel module; a hang takes forever.
const LIMIT: Duration = Duration::from_secs(300);

/// `torchlet run -e code` with `env`, killed (and the test failed) if it outlives LIMIT.
fn run(code: &str, env: &[(&str, &str)]) -> Output {
    crate::common::shares_gpu_as_is();
    // `TORCHLET_BIN` where the tests run away from the build (the GPU machine).
    let mut child = crate::common::torchlet()
        .args(["run", "-e", code])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the torchlet binary runs");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "torchlet hung for {LIMIT:?}; stderr so far:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Runs everywhere: without a GPU the driver is missing too, and NVRTC is still named.
#[test]
fn a_missing_nvrtc_is_named_with_what_to_install() {
    let nowhere = "/nonexistent/libnvrtc.so.13";
    let out = run(
        "let x = zeros(2, #{device: \"cuda\"}); print(x.sum().item());",
        &[("TORCHLET_NVRTC_PATH", nowhere)],
    );
    let err = crate::common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("<-e>:1:"), "{err}");
    assert!(err.contains("could not load libnvrtc"), "{err}");
    assert!(
        err.contains(&format!("TORCHLET_NVRTC_PATH={nowhere}")),
        "{err}"
    );
    assert!(err.contains("pip install nvidia-cuda-nvrtc"), "{err}");
    assert!(err.contains("--simulate-cuda"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

const FAULT: &str = r#"
let warm = ones(4, #{device: "cuda"});
print(`before: ${warm.sum().item()}`);
cuda::_provoke_illegal_address();
let failures = 0;
for i in 0..3 {
    try {
        let x = ones(4, #{device: "cuda"});
        print(x.sum().item());
    } catch (e) {
        failures += 1;
    }
}
print(`failures: ${failures}`);
print(ones(4, #{device: "cuda"}).sum().item());
"#;

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn an_illegal_address_in_a_kernel_is_a_clear_error_on_every_later_statement() {
    assert!(
        std::env::var("TORCHLET_TEST_DEVICE").is_ok_and(|v| v == "cuda"),
        "this test needs a real GPU: build it with --features gpu-tests and run it with TORCHLET_TEST_DEVICE=cuda"
    );
    let out = run(FAULT, &[]);
    let (stdout, err) = (
        crate::common::text(&out.stdout),
        crate::common::text(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{err}");
    assert!(stdout.starts_with("before: 4"), "{stdout}\n{err}");
    // Every statement after the fault fails, and is caught, rather than crashing the process.
    assert!(stdout.contains("failures: 3"), "{stdout}\n{err}");
    assert!(
        err.contains("RuntimeError: CUDA error: an illegal memory access was encountered"),
        "{err}"
    );
    assert!(err.contains("restart the session"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
