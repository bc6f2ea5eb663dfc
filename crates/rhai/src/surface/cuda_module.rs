//! The `cuda` module (`cuda::memory_allocated()` …) and the article's top-level names (`empty_cache()` …).
use super::documented::{Documented, DocumentedModule};
use crate::runtime::state::{LanguageState, State};
use std::sync::Arc;

use rhai::{Array, Dynamic, Engine, Map, Module, FLOAT, INT};

use super::convert::{device_of, OrRaise, Res};
use super::errors::{type_error, value_error};
use torchlet_alloc::DeviceAllocator;
use torchlet_core::device::{self, Device};

/// The CUDA index an optional device argument names; none means the current device.
fn cuda_index(device: Option<&Dynamic>) -> Res<usize> {
    match device {
        None => Ok(device::current_device()),
        Some(d) if d.is_unit() => Ok(device::current_device()),
        Some(d) => match device_of(d)? {
            Device::Cuda(i) => Ok(i),
            other => Err(value_error(format!(
                "Expected a cuda device, but got: {other}"
            ))),
        },
    }
}

fn allocator(device: Option<&Dynamic>) -> Res<Arc<dyn DeviceAllocator>> {
    device::cuda_allocator(cuda_index(device)?).or_raise()
}

/// A byte count from the allocator; 0 where no GPU was ever set up, as PyTorch reports before CUDA init.
fn stat(device: Option<&Dynamic>, read: fn(&dyn DeviceAllocator) -> u64) -> Res<INT> {
    if !device::cuda_is_available() {
        return Ok(0);
    }
    Ok(read(&*allocator(device)?) as INT)
}

fn memory_stats(device: Option<&Dynamic>) -> Res<Map> {
    if !device::cuda_is_available() {
        return Ok(Map::new());
    }
    Ok(allocator(device)?
        .memory_stats()
        .into_iter()
        .map(|(k, v)| (k.into(), Dynamic::from_int(v as INT)))
        .collect())
}

/// `memory_summary()`, `memory_summary(device)` or `memory_summary(#{device, abbreviated})`.
fn memory_summary(arg: Option<&Dynamic>) -> Res<String> {
    let mut device = None;
    let mut abbreviated = false;
    if let Some(arg) = arg {
        if let Some(map) = arg.read_lock::<Map>() {
            for (key, value) in map.iter() {
                match key.as_str() {
                    "device" => device = Some(value.clone()),
                    "abbreviated" => {
                        abbreviated = value
                            .as_bool()
                            .map_err(|_| type_error("abbreviated must be a bool"))?
                    }
                    other => {
                        return Err(type_error(format!(
                            "memory_summary(): unexpected keyword '{other}'; allowed: device, abbreviated"
                        )))
                    }
                }
            }
        } else {
            device = Some(arg.clone());
        }
    }
    Ok(allocator(device.as_ref())?.memory_summary(abbreviated))
}

fn empty_cache(state: &LanguageState) -> Res<()> {
    // As PyTorch's emptyCache: every device's cache, not only the current one.
    for index in 0..device::cuda_device_count() {
        device::cuda_allocator(index).or_raise()?.empty_cache();
    }
    state.empty_cache_called.set(true);
    Ok(())
}

fn mem_get_info(device: Option<&Dynamic>) -> Res<Array> {
    let (free, total) = allocator(device)?
        .mem_get_info()
        .map_err(|e| super::errors::raise("RuntimeError", e.to_string()))?;
    Ok(vec![
        Dynamic::from_int(free as INT),
        Dynamic::from_int(total as INT),
    ])
}

fn memory_snapshot(device: Option<&Dynamic>) -> Res<Dynamic> {
    let snapshot = allocator(device)?.snapshot();
    rhai::serde::to_dynamic(&snapshot)
}

fn record_memory_history(
    enabled: &Dynamic,
    max_entries: Option<INT>,
    device: Option<&Dynamic>,
) -> Res<()> {
    use torchlet_alloc::{HistoryMode, HistoryOptions};
    let mode = if enabled.is_unit() {
        None
    } else if let Ok(flag) = enabled.as_bool() {
        flag.then_some(HistoryMode::All)
    } else {
        let text = enabled.clone().into_string().map_err(|t| {
            type_error(format!(
                "record_memory_history: enabled is \"all\", \"state\" or (), not {t}"
            ))
        })?;
        Some(HistoryMode::parse(&text).map_err(|e| value_error(e.to_string()))?)
    };
    let mut options = HistoryOptions {
        enabled: mode,
        ..HistoryOptions::default()
    };
    if let Some(n) = max_entries {
        options.max_entries = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| value_error("max_entries must be 1 or more"))?;
    }
    allocator(device)?.record_memory_history(options);
    Ok(())
}

fn set_fraction(fraction: FLOAT, device: Option<&Dynamic>) -> Res<()> {
    allocator(device)?
        .set_memory_fraction(fraction)
        .map_err(|e| value_error(e.to_string()))
}

/// Register `fname()` and `fname(device)` in `module`, documented by `doc`, and, when `top` is a
/// top-level function's help, in `engine` too.
macro_rules! with_optional_device {
    ($module:expr, $engine:expr, $top:expr, $name:literal, $doc:expr, $body:expr) => {{
        let body = $body;
        $module.register_doc($name, &[$doc], move || body(None));
        $module.set_native_fn($name, move |d: Dynamic| body(Some(&d)));
        let top: Option<&str> = $top;
        if let Some(top) = top {
            $engine.register_doc($name, &[top], move || body(None));
            $engine.register_fn($name, move |d: Dynamic| body(Some(&d)));
        }
    }};
}

/// `cuda::_provoke_illegal_address()`: run a kernel that writes through a null pointer on the
/// current device; the statements after it see the fault.
fn provoke_illegal_address() -> Res<()> {
    if !torchlet_core::device::cuda::is_available() {
        return Err(super::errors::raise(
            "RuntimeError",
            "cuda::_provoke_illegal_address() needs a real GPU",
        ));
    }
    torchlet_core::device::cuda::fault::provoke_illegal_address(device::current_device())
        .map_err(|e| super::errors::raise("RuntimeError", e.to_string()))
}

/// Register the `cuda` module and the top-level memory functions.
pub(crate) fn register(engine: &mut Engine, state: &State) {
    let mut m = Module::new();
    m.register_doc(
        "is_available",
        &["cuda::is_available() — whether a GPU (real or simulated) can be used"],
        || Ok(device::cuda_is_available()),
    );
    m.register_doc(
        "device_count",
        &["cuda::device_count() — how many GPUs there are"],
        || Ok(device::cuda_device_count() as INT),
    );
    m.register_doc(
        "current_device",
        &["cuda::current_device() — the index `cuda` without a number means"],
        || Ok(device::current_device() as INT),
    );
    m.register_doc(
        "set_device",
        &["cuda::set_device(device) — choose what `cuda` without a number means"],
        |d: Dynamic| device::set_device(cuda_index(Some(&d))?).or_raise(),
    );
    m.register_doc(
        "empty_cache",
        &["cuda::empty_cache() — release cached, wholly free segments to the GPU"],
        {
            let state = state.clone();
            move || empty_cache(&state)
        },
    );
    engine.register_doc(
        "empty_cache",
        &["empty_cache() — release cached, wholly free GPU segments (cuda::empty_cache)"],
        {
            let state = state.clone();
            move || empty_cache(&state)
        },
    );
    with_optional_device!(
        m,
        engine,
        None,
        "get_device_name",
        "cuda::get_device_name([device]) — the GPU's name",
        |d: Option<&Dynamic>| { device::get_device_name(cuda_index(d)?).or_raise() }
    );
    with_optional_device!(
        m,
        engine,
        None,
        "synchronize",
        "cuda::synchronize([device]) — wait for the GPU's queued work",
        |d: Option<&Dynamic>| { device::synchronize(cuda_index(d)?).or_raise() }
    );
    with_optional_device!(
        m,
        engine,
        None,
        "mem_get_info",
        "cuda::mem_get_info([device]) — [free, total] bytes device-wide",
        mem_get_info
    );
    with_optional_device!(
        m,
        engine,
        Some("memory_allocated([device]) — bytes held by live tensors on the GPU"),
        "memory_allocated",
        "cuda::memory_allocated([device]) — bytes held by live tensors",
        |d: Option<&Dynamic>| { stat(d, |a| a.memory_allocated()) }
    );
    with_optional_device!(
        m,
        engine,
        Some("max_memory_allocated([device]) — peak of memory_allocated"),
        "max_memory_allocated",
        "cuda::max_memory_allocated([device]) — peak of memory_allocated",
        |d: Option<&Dynamic>| { stat(d, |a| a.max_memory_allocated()) }
    );
    with_optional_device!(
        m,
        engine,
        Some("memory_reserved([device]) — bytes the caching allocator holds from the GPU"),
        "memory_reserved",
        "cuda::memory_reserved([device]) — bytes the caching allocator holds",
        |d: Option<&Dynamic>| { stat(d, |a| a.memory_reserved()) }
    );
    with_optional_device!(
        m,
        engine,
        Some("max_memory_reserved([device]) — peak of memory_reserved"),
        "max_memory_reserved",
        "cuda::max_memory_reserved([device]) — peak of memory_reserved",
        |d: Option<&Dynamic>| { stat(d, |a| a.max_memory_reserved()) }
    );
    with_optional_device!(
        m,
        engine,
        None,
        "memory_stats",
        "cuda::memory_stats([device]) — the allocator's statistics, PyTorch's flat keys",
        memory_stats
    );
    with_optional_device!(
        m,
        engine,
        Some("memory_summary([#{device, abbreviated}]) — the allocator's table, as text"),
        "memory_summary",
        "cuda::memory_summary([#{device, abbreviated}]) — the allocator's table, as text",
        memory_summary
    );
    with_optional_device!(
        m,
        engine,
        None,
        "reset_peak_memory_stats",
        "cuda::reset_peak_memory_stats([device]) — restart the peak figures",
        |d: Option<&Dynamic>| { allocator(d).map(|a| a.reset_peak_memory_stats()) }
    );
    with_optional_device!(
        m,
        engine,
        None,
        "reset_accumulated_memory_stats",
        "cuda::reset_accumulated_memory_stats([device]) — zero the counters",
        |d: Option<&Dynamic>| { allocator(d).map(|a| a.reset_accumulated_memory_stats()) }
    );
    with_optional_device!(
        m,
        engine,
        None,
        "memory_snapshot",
        "cuda::memory_snapshot([device]) — segments and blocks, as a map",
        memory_snapshot
    );
    m.register_doc("record_memory_history", &["cuda::record_memory_history([enabled[, max_entries[, device]]]) — trace allocations (\"all\", \"state\" or ())"], || {
        record_memory_history(&"all".into(), None, None)
    });
    m.set_native_fn("record_memory_history", |e: Dynamic| {
        record_memory_history(&e, None, None)
    });
    m.set_native_fn("record_memory_history", |e: Dynamic, n: INT| {
        record_memory_history(&e, Some(n), None)
    });
    m.set_native_fn("record_memory_history", |e: Dynamic, n: INT, d: Dynamic| {
        record_memory_history(&e, Some(n), Some(&d))
    });
    m.register_doc("set_per_process_memory_fraction", &["cuda::set_per_process_memory_fraction(fraction[, device]) — cap what the allocator may reserve"], |f: FLOAT| {
        set_fraction(f, None)
    });
    m.set_native_fn("set_per_process_memory_fraction", |f: FLOAT, d: Dynamic| {
        set_fraction(f, Some(&d))
    });
    m.register_doc("dump_snapshot", &["cuda::dump_snapshot(path) — write segments and history for PyTorch's memory viewer (.json, or .pickle)"], |path: &str| {
        torchlet_explain::snapshot_dump::dump(path).map(|_| ()).map_err(|e| {
            let kind = match e {
                torchlet_explain::snapshot_dump::DumpError::Write(_) => "OSError",
                _ => "RuntimeError",
            };
            super::errors::raise(kind, e.to_string())
        })
    });
    super::distributed_module::register(&mut m);
    // Only GPU test builds (the `gpu-faults` feature, which `gpu-tests` turns on) may fault the GPU on purpose.
    if cfg!(feature = "gpu-faults") {
        m.set_native_fn("_provoke_illegal_address", provoke_illegal_address);
    }
    engine.register_static_module("cuda", m.into());
}
