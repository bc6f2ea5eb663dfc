//! Is a usable CUDA installation here? Checked before any other cudarc call, since cudarc panics
//! when a library it needs cannot be loaded.

use std::sync::OnceLock;

/// What the probe found: `Ok(())` when the driver, NVRTC, cuBLAS and cuRAND all load and the
/// driver initialises with at least one device, else the message `.cuda()` shows.
pub fn check() -> &'static Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(run_probe)
}

fn run_probe() -> Result<(), String> {
    // SAFETY: these only try to dlopen the libraries by name; nothing is called through them.
    let libs = unsafe {
        [
            (
                "libcuda (the NVIDIA driver)",
                "cuda",
                cudarc::driver::sys::is_culib_present(),
            ),
            (
                "libnvrtc (CUDA runtime compiler)",
                "nvrtc",
                cudarc::nvrtc::sys::is_culib_present(),
            ),
            (
                "libcublas",
                "cublas",
                cudarc::cublas::sys::is_culib_present(),
            ),
            (
                "libcurand",
                "curand",
                cudarc::curand::sys::is_culib_present(),
            ),
        ]
    };
    let missing: Vec<String> = libs
        .iter()
        .filter(|(_, _, present)| !present)
        .map(|(what, stem, _)| format!("{what}: tried {}", candidates(stem)))
        .collect();
    // The registry appends how to simulate a GPU; these say what was looked for.
    if !missing.is_empty() {
        let driver_missing = !libs[0].2;
        return Err(format!(
            "{}: could not load {}; install the NVIDIA driver and the CUDA 13 libraries \
             (nvrtc, cublas, curand) and put them on LD_LIBRARY_PATH",
            if driver_missing {
                "Found no NVIDIA driver on your system"
            } else {
                "CUDA libraries are missing"
            },
            missing.join("; ")
        ));
    }
    cudarc::driver::result::init().map_err(|e| {
        format!(
            "The NVIDIA driver did not initialise ({}); check that a GPU is visible with nvidia-smi",
            super::error::describe_driver(e)
        )
    })?;
    match cudarc::driver::result::device::get_count() {
        Ok(n) if n > 0 => Ok(()),
        Ok(_) => Err("The NVIDIA driver found no GPU on this machine".into()),
        Err(e) => Err(format!(
            "cuDeviceGetCount failed ({})",
            super::error::describe_driver(e)
        )),
    }
}

/// The file names cudarc looks for, shortened to the first few for the message.
fn candidates(stem: &str) -> String {
    let names = cudarc::get_lib_name_candidates(stem);
    let shown: Vec<&str> = names.iter().map(String::as_str).take(3).collect();
    format!("{} …", shown.join(", "))
}
