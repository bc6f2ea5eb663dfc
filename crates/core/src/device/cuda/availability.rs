//! Is a usable CUDA installation here? Checked before any other cudarc call, since cudarc panics
//! when a library it needs cannot be loaded.

use std::sync::OnceLock;

/// What the probe found: `Ok(())` when the driver, NVRTC, cuBLAS and cuRAND all load and the
/// driver initialises with at least one device, else the message `.cuda()` shows.
pub fn check() -> &'static Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(run_probe)
}

/// One library cudarc loads by name, and what to install when it is missing.
struct Library {
    what: &'static str,
    stem: &'static str,
    install: &'static str,
}

const DRIVER: Library = Library {
    what: "libcuda (the NVIDIA driver)",
    stem: "cuda",
    install: "install the NVIDIA driver (https://www.nvidia.com/Download/index.aspx); \
              nvidia-smi should then list the GPU",
};
const NVRTC: Library = Library {
    what: "libnvrtc (NVRTC, the CUDA runtime compiler that builds torchlet's kernels)",
    stem: "nvrtc",
    install: "install it with `pip install nvidia-cuda-nvrtc` (CUDA 13) or the CUDA 13 toolkit, \
              then put its lib directory on LD_LIBRARY_PATH or set TORCHLET_NVRTC_PATH to the file",
};
const CUBLAS: Library = Library {
    what: "libcublas",
    stem: "cublas",
    install: "install it with `pip install nvidia-cublas` (CUDA 13) or the CUDA 13 toolkit, \
              then put its lib directory on LD_LIBRARY_PATH",
};
const CURAND: Library = Library {
    what: "libcurand",
    stem: "curand",
    install: "install it with `pip install nvidia-curand` (CUDA 13) or the CUDA 13 toolkit, \
              then put its lib directory on LD_LIBRARY_PATH",
};

fn run_probe() -> Result<(), String> {
    // SAFETY: these only try to dlopen the libraries by name; nothing is called through them.
    let found = unsafe {
        [
            (DRIVER, cudarc::driver::sys::is_culib_present()),
            (NVRTC, nvrtc_present()),
            (CUBLAS, cudarc::cublas::sys::is_culib_present()),
            (CURAND, cudarc::curand::sys::is_culib_present()),
        ]
    };
    let missing: Vec<String> = found
        .iter()
        .filter(|(_, present)| !present)
        .map(|(lib, _)| missing_library(lib))
        .collect();
    // The registry appends how to simulate a GPU; these say what was looked for and what to do.
    if !missing.is_empty() {
        let headline = if !found[0].1 {
            "Found no NVIDIA driver on your system"
        } else {
            "CUDA libraries are missing"
        };
        return Err(format!("{headline}:\n  - {}", missing.join("\n  - ")));
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

/// What the message says of a library that did not load: what was tried, and what to install.
fn missing_library(lib: &Library) -> String {
    let tried = match (lib.stem, nvrtc_override()) {
        ("nvrtc", Some(path)) => format!("TORCHLET_NVRTC_PATH={}", path.display()),
        _ => candidates(lib.stem),
    };
    format!(
        "could not load {} (tried {tried}): {}",
        lib.what, lib.install
    )
}

/// `TORCHLET_NVRTC_PATH`: the NVRTC library file to use instead of searching for one.
fn nvrtc_override() -> Option<std::path::PathBuf> {
    std::env::var_os("TORCHLET_NVRTC_PATH")
        .filter(|p| !p.is_empty())
        .map(Into::into)
}

/// Whether NVRTC loads: from `TORCHLET_NVRTC_PATH` when set (and then from there only), else by
/// the names cudarc searches.
///
/// cudarc opens libraries by name, with no way to give it a path. Opening the file first works
/// because the dynamic loader then answers cudarc's `dlopen("libnvrtc.so.13")` with the library
/// already loaded under that soname.
///
/// # Safety
/// Loading a library runs its initialisers.
unsafe fn nvrtc_present() -> bool {
    if let Some(path) = nvrtc_override() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let Ok(name) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
                return false;
            };
            // Never closed: cudarc keeps using the library for the life of the process.
            if libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL).is_null() {
                return false;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            return false;
        }
    }
    cudarc::nvrtc::sys::is_culib_present()
}

/// The file names cudarc looks for, shortened to the first few for the message.
fn candidates(stem: &str) -> String {
    let names = cudarc::get_lib_name_candidates(stem);
    // The Windows-style names (libcuda64_13.so …) never exist on Linux; the driver's soname is
    // libcuda.so.1, the libraries' libX.so.<CUDA major>.
    let shown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| match stem {
            "cuda" => n.ends_with(".so") || n.ends_with(".so.1"),
            _ => !n.contains("64"),
        })
        .take(3)
        .collect();
    format!("{} …", shown.join(", "))
}
