//! The embedded CUDA C kernels compile with NVRTC for Hopper (sm_90), for every element type.
//! Needs only libnvrtc, not a GPU; skips (and says so) where NVRTC is absent.

use torchlet::device::cuda::{compile, Elem};

fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen libnvrtc.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

#[test]
fn every_module_compiles_for_sm90() {
    if !nvrtc_present() {
        eprintln!("skipped: libnvrtc not found (kernels compile on machines with CUDA)");
        return;
    }
    for elem in Elem::ALL {
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
fn cache_key_changes_with_source_arch_and_driver() {
    if !nvrtc_present() {
        eprintln!("skipped: libnvrtc not found");
        return;
    }
    let dir = std::path::Path::new("/cache");
    let a = compile::cache_path(dir, "x", "sm_90", 13000);
    assert_ne!(a, compile::cache_path(dir, "y", "sm_90", 13000));
    assert_ne!(a, compile::cache_path(dir, "x", "sm_80", 13000));
    assert_ne!(a, compile::cache_path(dir, "x", "sm_90", 12080));
    assert_eq!(a, compile::cache_path(dir, "x", "sm_90", 13000));
}
