//! The embedded CUDA C kernels compile with NVRTC for Hopper (sm_90), for every element type.
//! Needs libnvrtc (CUDA), which machines without a GPU lack: ignored unless built with
//! TORCHLET_TEST_DEVICE=cuda.

use torchlet_alloc::types::DType;
use torchlet_core::device::cuda::compile;

/// Fail clearly when run without NVRTC (through `--include-ignored`).
fn require_nvrtc() {
    // SAFETY: only tries to dlopen libnvrtc.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    assert!(
        present,
        "libnvrtc not found: this test needs CUDA (run it with TORCHLET_TEST_DEVICE=cuda on a GPU machine)"
    );
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs CUDA's NVRTC: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn every_module_compiles_for_sm90() {
    require_nvrtc();
    for elem in DType::ALL {
        let t = std::time::Instant::now();
        let source = compile::module_source(elem);
        let image = compile::compile(&source, "test.cu", "sm_90")
            .unwrap_or_else(|e| panic!("{elem:?}: {e}"));
        // A cubin is an ELF image.
        assert_eq!(&image[..4], b"\x7fELF", "{elem:?}");
        eprintln!("{elem:?}: {} bytes in {:?}", image.len(), t.elapsed());
    }
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs CUDA's NVRTC: build with --features gpu-tests, run with TORCHLET_TEST_DEVICE=cuda"
)]
fn cache_key_changes_with_source_arch_and_driver() {
    require_nvrtc();
    let dir = std::path::Path::new("/cache");
    let a = compile::cache_path(dir, "x", "sm_90", 13000);
    assert_ne!(a, compile::cache_path(dir, "y", "sm_90", 13000));
    assert_ne!(a, compile::cache_path(dir, "x", "sm_80", 13000));
    assert_ne!(a, compile::cache_path(dir, "x", "sm_90", 12080));
    assert_eq!(a, compile::cache_path(dir, "x", "sm_90", 13000));
}
