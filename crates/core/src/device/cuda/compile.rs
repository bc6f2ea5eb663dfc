//! The embedded CUDA C kernels, compiled with NVRTC for the device's architecture and cached on
//! disk, keyed by source hash, architecture and driver, so later starts load the binary directly.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use sha2::{Digest, Sha256};

use super::elem::CudaDType;
use super::error::{nvrtc as nvrtc_err, CudaError, CudaResult};
use torchlet_alloc::types::DType;

const PRELUDE: &str = include_str!("kernels/prelude.cuh");
const CONTIG_WALK: &str = include_str!("kernels/contig_walk.cuh");
const ELEMENTWISE: &str = include_str!("kernels/elementwise.cu");
const REDUCE: &str = include_str!("kernels/reduce.cu");
const SOFTMAX: &str = include_str!("kernels/softmax.cu");
const NORM: &str = include_str!("kernels/norm.cu");
const INDEXING: &str = include_str!("kernels/indexing.cu");
const ATTENTION: &str = include_str!("kernels/attention.cu");
const CONV: &str = include_str!("kernels/conv.cu");

/// Elements each thread of a strided elementwise kernel takes (`SILP` in prelude.cuh's
/// `strided_each`); the host launches a thread for every `STRIDED_ILP` elements.
pub const STRIDED_ILP: usize = 4;

/// Threads per block of the contiguous elementwise kernels (`CBLOCK` in contig_walk.cuh).
pub const CONTIG_BLOCK: u32 = 256;

/// 16-byte vectors each thread of a contiguous elementwise kernel takes of 4- and 8-byte types
/// (`VPT` in contig_walk.cuh); 1- and 2-byte types take one.
///
/// One, measured on the H200 against two (benches/RESULTS.md, eleventh run): PyTorch's eight
/// float32 elements a thread (128 threads of two vectors) made gelu 1% faster but `x * 2` over
/// 2^24 and 2^28 float32 elements 0.6-0.9% slower; 256 threads of two vectors, 2.8-3.8% slower.
/// Memory-bound ops are the common case.
pub const CONTIG_VECTORS: usize = 1;

/// The complete CUDA C source of one element type's module.
pub fn module_source(elem: DType) -> String {
    [
        elem.module_header().as_str(),
        &format!(
            "#define SILP {STRIDED_ILP}\n#define CBLOCK {CONTIG_BLOCK}\n#define WIDE_VPT {CONTIG_VECTORS}"
        ),
        PRELUDE,
        CONTIG_WALK,
        &super::functors::fill(ELEMENTWISE),
        REDUCE,
        SOFTMAX,
        NORM,
        INDEXING,
        ATTENTION,
        CONV,
    ]
    .join("\n")
}

/// The cache file for `source` compiled for `arch` (e.g. "sm_90") under `driver` (cuDriverGetVersion).
pub fn cache_path(dir: &Path, source: &str, arch: &str, driver: i32) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(source.as_bytes());
    hash.update(arch.as_bytes());
    hash.update(driver.to_le_bytes());
    hash.update(nvrtc_version().to_le_bytes());
    // The option changes some kernels' machine code, so cubins compiled without it are not reused.
    hash.update(SPLIT_COMPILE.as_bytes());
    let digest: String = hash
        .finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("{arch}-{digest}.cubin"))
}

/// Where compiled kernels live: `$TORCHLET_KERNEL_CACHE`, else `<cache dir>/torchlet/kernels`.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("TORCHLET_KERNEL_CACHE") {
        return Some(PathBuf::from(dir));
    }
    dirs::cache_dir().map(|d| d.join("torchlet").join("kernels"))
}

fn nvrtc_version() -> i32 {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters; only called once the probe found libnvrtc.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    major * 1000 + minor * 10
}

/// The cubin for `elem` on `arch`: read from the disk cache, or compiled and then stored there.
/// Returns the image and whether it came from the cache.
pub fn cubin(elem: DType, arch: &str, driver: i32) -> CudaResult<(Vec<u8>, bool)> {
    cubin_in(cache_dir().as_deref(), elem, arch, driver)
}

/// As `cubin`, with the cache in `dir` (no cache when `None`).
pub fn cubin_in(
    dir: Option<&Path>,
    elem: DType,
    arch: &str,
    driver: i32,
) -> CudaResult<(Vec<u8>, bool)> {
    let source = module_source(elem);
    let path = dir.map(|d| cache_path(d, &source, arch, driver));
    if let Some(bytes) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        if !bytes.is_empty() {
            return Ok((bytes, true));
        }
    }
    let image = compile(&source, &format!("torchlet_{}.cu", elem.suffix()), arch)?;
    if let Some(path) = path {
        // A failed write only costs a recompile next time; write then rename so that a
        // concurrent start never reads half a file.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, &image).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    Ok((image, false))
}

/// Compile `source` to a cubin for `arch` with NVRTC.
///
/// cudarc panics when a function is missing from the libnvrtc it loaded (one older than CUDA 13,
/// or not NVRTC at all, through TORCHLET_NVRTC_PATH): that becomes an error naming the library.
pub fn compile(source: &str, name: &str, arch: &str) -> CudaResult<Vec<u8>> {
    std::panic::catch_unwind(|| compile_with_nvrtc(source, name, arch)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic in cudarc");
        Err(CudaError::Unavailable(format!(
            "NVRTC (libnvrtc, the CUDA runtime compiler) failed while compiling {name}: {why}. \
             Install NVRTC for CUDA 13 (`pip install nvidia-cuda-nvrtc` or the CUDA 13 toolkit) \
             and put its lib directory on LD_LIBRARY_PATH or set TORCHLET_NVRTC_PATH to the file"
        )))
    })
}

/// Lets NVRTC run its optimizer over a module's kernels on every core. Compile time matters because
/// a cold cache compiles a whole dtype's module at that dtype's first op. Measured with NVRTC 12.9
/// on a two-core machine, each dtype's module compiled in 18–27 s instead of 35–48 s. The machine
/// code was the same for every kernel of float32, int64 and int32 (cubins compared section by
/// section), and for all but one of float16's (`where`). It differed in float64's and bfloat16's
/// softmax rows and bfloat16's scalar comparisons (at the same sizes), and in a few uint8 and bool
/// backward kernels (sizes within 16%). On the H200's machine (16 cores, NVRTC 13.0) each module
/// compiled in 6.8–10.2 s, and the test compiling all eight took 66 s where it had run past 200 s
/// without the option; the softmax, scale and transposed-copy benches there moved by at most 0.3%
/// at 2^24 elements and above (benches/RESULTS.md, tenth run).
const SPLIT_COMPILE: &str = "--split-compile=0";

fn compile_with_nvrtc(source: &str, name: &str, arch: &str) -> CudaResult<Vec<u8>> {
    let mut options = vec![
        format!("-arch={arch}"),
        "-std=c++17".into(),
        "-default-device".into(),
        SPLIT_COMPILE.into(),
    ];
    match compile_program(source, name, arch, &options)? {
        Compiled::Image(image) => Ok(image),
        // An NVRTC that does not know the option still compiles the module, on one thread.
        Compiled::OptionRejected => {
            options.pop();
            match compile_program(source, name, arch, &options)? {
                Compiled::Image(image) => Ok(image),
                Compiled::OptionRejected => Err(CudaError::Call(format!(
                    "NVRTC rejected the options {options:?} compiling {name}"
                ))),
            }
        }
    }
}

/// What NVRTC made of a program: its cubin, or a refusal of one of the options.
enum Compiled {
    Image(Vec<u8>),
    OptionRejected,
}

fn compile_program(
    source: &str,
    name: &str,
    arch: &str,
    options: &[String],
) -> CudaResult<Compiled> {
    let src =
        CString::new(source).map_err(|_| CudaError::Call("kernel source has a NUL".into()))?;
    let cname = CString::new(name).unwrap_or_default();
    let prog = nvrtc::create_program(&src, Some(&cname)).map_err(|e| nvrtc_err("create", e))?;
    // SAFETY: `prog` is a live program; destroyed below on every path.
    let compiled = unsafe { nvrtc::compile_program(prog, options) };
    let result = match compiled {
        Ok(()) => cubin_of(prog).map(Compiled::Image),
        Err(e) if e.0 == nvrtc_sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION => {
            Ok(Compiled::OptionRejected)
        }
        Err(e) => {
            // SAFETY: as above.
            let log = unsafe { nvrtc::get_program_log(prog) }
                .map(|l| {
                    let bytes: Vec<u8> =
                        l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                    String::from_utf8_lossy(&bytes).into_owned()
                })
                .unwrap_or_default();
            Err(CudaError::Call(format!(
                "NVRTC could not compile {name} for {arch} ({:?}):\n{log}",
                e.0
            )))
        }
    };
    // SAFETY: `prog` is not used after this.
    unsafe { nvrtc::destroy_program(prog) }.map_err(|e| nvrtc_err("destroy", e))?;
    result
}

fn cubin_of(prog: nvrtc_sys::nvrtcProgram) -> CudaResult<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: `prog` compiled successfully; the buffer has the size NVRTC reports.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .map_err(|e| nvrtc_err("GetCUBINSize", e))?;
    let mut image = vec![0u8; size];
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| nvrtc_err("GetCUBIN", e))?;
    Ok(image)
}
