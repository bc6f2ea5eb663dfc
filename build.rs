//! Build script: compiles the tests that need a real GPU as ordinary tests when TORCHLET_TEST_DEVICE=cuda.
//!
//! Elsewhere they carry `#[ignore]`, so `cargo test` counts them as ignored instead of passing
//! without checking anything; `--include-ignored` still runs them, and they then fail clearly.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(torchlet_gpu_tests)");
    println!("cargo::rerun-if-env-changed=TORCHLET_TEST_DEVICE");
    if std::env::var("TORCHLET_TEST_DEVICE").as_deref() == Ok("cuda") {
        println!("cargo::rustc-cfg=torchlet_gpu_tests");
    }
}
