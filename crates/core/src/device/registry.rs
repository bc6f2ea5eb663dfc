//! The registry of devices: the CPU, and the CUDA devices (simulated, or real via `cuda::probe`).
//!
//! Real GPUs are probed lazily, on first CUDA use, because creating a context costs a third of a
//! second that scripts touching only the CPU should not pay (PyTorch is lazy in the same way).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use torchlet_alloc::types::{Result, TensorError};
use torchlet_alloc::DeviceAllocator;

use super::blas_handle::Workspace;
use super::cpu::CpuBackend;
use super::shapes::ShapesBackend;
use super::sim::SimBackend;
use super::{Backend, Device};

/// The simulation spec chosen at start-up (`None`: use real GPUs).
static SPEC: OnceLock<Option<String>> = OnceLock::new();
/// The CUDA devices, or why there are none.
static CUDA: OnceLock<std::result::Result<Vec<Arc<dyn Backend>>, String>> = OnceLock::new();
static CPU: OnceLock<Arc<dyn Backend>> = OnceLock::new();
static CURRENT: AtomicUsize = AtomicUsize::new(0);
/// Whether simulated devices compute nothing (`torchlet fit`); set once, before CUDA starts.
static SHAPES_ONLY: OnceLock<bool> = OnceLock::new();

/// Default size of a simulated GPU, as `--simulate-cuda` without a value gives.
const DEFAULT_SIZE: &str = "16GiB";

/// Parse a byte size: "16GiB", "512MiB", "64KiB", "1000000000", "2GB" (decimal units too).
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!(
            "invalid size '{s}': expected a number of bytes such as 16GiB, 512MiB or 1000000000B"
        )
    })?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "invalid size '{s}': unknown unit '{other}' (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"
            ))
        }
    };
    let bytes = (value * mult as f64).round() as u64;
    if bytes == 0 {
        return Err(format!(
            "invalid size '{s}': a simulated GPU needs more than 0 bytes"
        ));
    }
    Ok(bytes)
}

fn parse_spec(spec: &str) -> std::result::Result<Vec<u64>, String> {
    let spec = if spec.trim().is_empty() {
        DEFAULT_SIZE
    } else {
        spec
    };
    spec.split(',').map(sized).collect()
}

/// One simulated GPU's size, which must name its unit: `--simulate-cuda=16` is far more likely
/// meant as 16 GiB than as a 16-byte GPU, so it is refused rather than guessed.
fn sized(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!(
            "invalid size '{t}': give a unit, e.g. {t}GiB (or {t}MiB; {t}B for bytes)"
        ));
    }
    parse_size(s)
}

/// Record the simulation spec (validated); a second call must agree with the first.
pub fn init(simulate: Option<&str>) -> std::result::Result<(), String> {
    if let Some(s) = simulate {
        parse_spec(s).map_err(|e| format!("--simulate-cuda: {e}"))?;
    }
    torchlet_alloc::AllocConfig::from_env().map_err(|e| e.to_string())?;
    let wanted = simulate.map(str::to_owned);
    let got = SPEC.get_or_init(|| wanted.clone());
    if *got != wanted {
        return Err(format!(
            "devices were already set up ({}); cannot switch to {} in the same process",
            describe(got),
            describe(&wanted)
        ));
    }
    Ok(())
}

/// Simulate the GPUs `sizes` (`"80GiB,24GiB"`) shapes only: they allocate as a real run does
/// and compute nothing (see [`super::shapes`]). Must come before any other device setup.
pub fn init_shapes_only(sizes: &str) -> std::result::Result<(), String> {
    if SHAPES_ONLY.set(true).is_err() || CUDA.get().is_some() {
        return Err("devices were already set up; a shapes-only run needs a fresh process".into());
    }
    init(Some(sizes))
}

/// Whether the simulated GPUs run shapes only (`torchlet fit`).
pub fn shapes_only() -> bool {
    SHAPES_ONLY.get().copied().unwrap_or(false)
}

fn describe(spec: &Option<String>) -> String {
    match spec {
        Some(s) => format!("simulated CUDA {s}"),
        None => "real CUDA devices".into(),
    }
}

fn spec() -> &'static Option<String> {
    SPEC.get_or_init(|| std::env::var("TORCHLET_SIMULATE_CUDA").ok())
}

fn cuda_devices() -> &'static std::result::Result<Vec<Arc<dyn Backend>>, String> {
    CUDA.get_or_init(|| match spec() {
        Some(s) => {
            let sizes = parse_spec(s)?;
            let config = torchlet_alloc::AllocConfig::from_env().map_err(|e| e.to_string())?;
            Ok(sizes
                .into_iter()
                .enumerate()
                .map(|(i, bytes)| -> Arc<dyn Backend> {
                    if shapes_only() {
                        Arc::new(ShapesBackend::new(i, bytes, config.clone()))
                    } else {
                        Arc::new(SimBackend::new(i, bytes, config.clone()))
                    }
                })
                .collect())
        }
        None => super::cuda::probe(),
    })
}

/// The CPU backend.
pub fn cpu() -> Arc<dyn Backend> {
    CPU.get_or_init(|| Arc::new(CpuBackend)).clone()
}

/// The meta device's backend (Note [meta device]).
fn meta() -> Arc<dyn Backend> {
    static META: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    META.get_or_init(|| Arc::new(ShapesBackend::meta())).clone()
}

/// The backend of `device`, or a clear error when that device does not exist.
pub fn backend(device: Device) -> Result<Arc<dyn Backend>> {
    match device {
        Device::Cpu => Ok(cpu()),
        Device::Meta => Ok(meta()),
        Device::Cuda(i) => match cuda_devices() {
            Ok(list) => list.get(i).cloned().ok_or_else(|| {
                TensorError::runtime(format!(
                    "CUDA error: invalid device ordinal: cuda:{i} does not exist ({} CUDA device{} available{})",
                    list.len(),
                    if list.len() == 1 { " is" } else { "s are" },
                    match list.len() {
                        0 => String::new(),
                        1 => ": cuda:0".into(),
                        n => format!(": cuda:0 to cuda:{}", n - 1),
                    }
                ))
            }),
            Err(why) => Err(unavailable(why)),
        },
    }
}

/// The error for CUDA use when no GPU can be used: why, and how to simulate one instead.
fn unavailable(why: &str) -> TensorError {
    TensorError::runtime(format!(
        "{why}. To simulate a GPU in host memory, pass --simulate-cuda[=SIZE] or set TORCHLET_SIMULATE_CUDA=16GiB."
    ))
}

/// Whether any CUDA device (real or simulated) is present.
pub fn cuda_is_available() -> bool {
    cuda_device_count() > 0
}

/// Number of CUDA devices (real or simulated).
pub fn cuda_device_count() -> usize {
    cuda_devices().as_ref().map_or(0, |l| l.len())
}

/// Whether the CUDA devices are simulated.
pub fn is_simulated() -> bool {
    spec().is_some()
}

/// The caching allocator of CUDA device `index`.
pub fn cuda_allocator(index: usize) -> Result<Arc<dyn DeviceAllocator>> {
    backend(Device::Cuda(index))?
        .allocator()
        .ok_or_else(|| TensorError::runtime(format!("cuda:{index} has no caching allocator")))
}

/// The allocators of every CUDA device, with their indices, if CUDA has been started; never
/// starts it.
pub fn started_cuda_allocators() -> Vec<(usize, Arc<dyn DeviceAllocator>)> {
    let Some(Ok(devices)) = CUDA.get() else {
        return Vec::new();
    };
    devices
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some((i, d.allocator()?)))
        .collect()
}

/// cuda:`index`'s allocator if CUDA has been started; never starts it (for watchers that run on
/// every loop iteration, and must not bring up a GPU for a CPU-only script).
pub fn started_cuda_allocator(index: usize) -> Option<Arc<dyn DeviceAllocator>> {
    let Some(Ok(devices)) = CUDA.get() else {
        return None;
    };
    devices.get(index)?.allocator()
}

/// The cuBLAS workspaces each CUDA device holds in its caching allocator, by device index.
///
/// Probes nothing: before CUDA is first used there are no devices and so no workspaces, and a
/// memory listing must not pay for (or start) a GPU context.
pub fn blas_workspaces() -> Vec<(usize, Vec<Workspace>)> {
    let Some(Ok(devices)) = CUDA.get() else {
        return Vec::new();
    };
    devices
        .iter()
        .enumerate()
        .map(|(index, b)| (index, b.blas_workspaces()))
        .collect()
}

/// Give every CUDA device's cuBLAS workspaces back to its caching allocator (PyTorch's
/// `torch._C._cuda_clearCublasWorkspaces()`), so that `empty_cache` can release their segments.
pub fn clear_blas_workspaces() {
    if let Some(Ok(devices)) = CUDA.get() {
        devices.iter().for_each(|b| b.clear_blas_workspaces());
    }
}

/// The name of CUDA device `index`, e.g. "torchlet simulated GPU (16.00 GiB)".
pub fn get_device_name(index: usize) -> Result<String> {
    Ok(backend(Device::Cuda(index))?.name())
}

/// Wait for all work queued on CUDA device `index`.
pub fn synchronize(index: usize) -> Result<()> {
    backend(Device::Cuda(index))?.synchronize()
}

/// The device `"cuda"` means.
pub fn current_device() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// Choose the device `"cuda"` means.
pub fn set_device(index: usize) -> Result<()> {
    backend(Device::Cuda(index))?;
    CURRENT.store(index, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("16GiB"), Ok(16 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1000000000"), Ok(1_000_000_000));
        assert!(parse_size("lots").unwrap_err().contains("invalid size"));
        assert!(parse_spec("16").unwrap_err().contains("16GiB"));
        assert_eq!(parse_spec("16GiB,512B"), Ok(vec![16 << 30, 512]));
        assert_eq!(parse_spec("16GiB,8GiB").unwrap(), vec![16 << 30, 8 << 30]);
        assert_eq!(parse_spec("").unwrap(), vec![16 << 30]);
    }

    #[test]
    fn no_gpu_error_says_what_was_missing_and_how_to_simulate() {
        let why = super::super::cuda::probe()
            .err()
            .unwrap_or_else(|| "no GPU".into());
        let msg = unavailable(&why).to_string();
        assert!(
            msg.contains("--simulate-cuda") && msg.contains("TORCHLET_SIMULATE_CUDA"),
            "{msg}"
        );
        let stub = "Found no NVIDIA driver on your system (libcuda.so could not be loaded)";
        assert!(unavailable(stub).to_string().starts_with(stub));
    }
}
