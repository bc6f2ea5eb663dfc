//! `torch.cuda`'s native half: devices, the caching allocator's figures and statistics,
//! `empty_cache`, history recording and snapshots in PyTorch's format.

use std::sync::Arc;

use rustpython_vm::PyResult;
use torchlet_alloc::{DeviceAllocator, HistoryMode, HistoryOptions};
use torchlet_core::device;

use super::args::Args;
use super::tensor::OrRaise;
use super::values::{from_json, int};
use super::Native;

/// The allocator functions, by the name `torch/cuda/__init__.py` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_cuda_is_available", |a| {
        Ok(a.vm.ctx.new_bool(device::cuda_is_available()).into())
    }),
    ("_cuda_device_count", |a| {
        Ok(int(a.vm, device::cuda_device_count() as u64))
    }),
    ("_cuda_current_device", |a| {
        Ok(int(a.vm, device::current_device() as u64))
    }),
    ("_cuda_set_device", |a| {
        device::set_device(index(a, 0)?).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_cuda_synchronize", |a| {
        device::synchronize(index(a, 0)?).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_cuda_device_name", |a| {
        Ok(a.vm
            .ctx
            .new_str(device::get_device_name(index(a, 0)?).or_raise(a.vm)?)
            .into())
    }),
    ("_memory_allocated", |a| figure(a, |x| x.memory_allocated())),
    ("_max_memory_allocated", |a| {
        figure(a, |x| x.max_memory_allocated())
    }),
    ("_memory_reserved", |a| figure(a, |x| x.memory_reserved())),
    ("_max_memory_reserved", |a| {
        figure(a, |x| x.max_memory_reserved())
    }),
    ("_memory_stats", |a| {
        let dict = a.vm.ctx.new_dict();
        if device::cuda_is_available() {
            for (key, value) in allocator(a, 0)?.memory_stats() {
                dict.set_item(key.as_str(), int(a.vm, value), a.vm)?;
            }
        }
        Ok(dict.into())
    }),
    ("_memory_summary", |a| {
        let text = allocator(a, 0)?.memory_summary(a.bool(1)?);
        Ok(a.vm.ctx.new_str(text).into())
    }),
    ("_reset_peak_memory_stats", |a| {
        allocator(a, 0)?.reset_peak_memory_stats();
        super::none(a.vm)
    }),
    ("_reset_accumulated_memory_stats", |a| {
        allocator(a, 0)?.reset_accumulated_memory_stats();
        super::none(a.vm)
    }),
    ("_empty_cache", |a| {
        // As PyTorch's emptyCache: every device's cache, not only the current one.
        for i in 0..device::cuda_device_count() {
            device::cuda_allocator(i).or_raise(a.vm)?.empty_cache();
        }
        super::none(a.vm)
    }),
    ("_mem_get_info", |a| {
        let (free, total) = allocator(a, 0)?
            .mem_get_info()
            .map_err(|e| a.vm.new_runtime_error(e.to_string()))?;
        Ok(a.vm
            .ctx
            .new_tuple(vec![int(a.vm, free), int(a.vm, total)])
            .into())
    }),
    ("_set_per_process_memory_fraction", |a| {
        allocator(a, 1)?
            .set_memory_fraction(a.float(0)?)
            .map_err(|e| a.vm.new_value_error(e.to_string()))?;
        super::none(a.vm)
    }),
    ("_record_memory_history", record_memory_history),
    ("_snapshot", |a| {
        let snapshots: Vec<_> = torchlet_explain::snapshot_dump::allocators()
            .iter()
            .map(|x| (x.device_index(), x.snapshot()))
            .collect();
        from_json(
            a.vm,
            &torchlet_explain::snapshot_dump::viewer_document(&snapshots),
        )
    }),
    ("_dump_snapshot", |a| {
        let path = a.str(0)?;
        torchlet_explain::snapshot_dump::dump(&path)
            .map_err(|e| a.vm.new_runtime_error(e.to_string()))?;
        super::none(a.vm)
    }),
];

/// The CUDA device index at argument `i`, the current device when it is `None`.
pub(super) fn index(a: &Args, i: usize) -> PyResult<usize> {
    match a.opt_int(i)? {
        Some(n) => usize::try_from(n).map_err(|_| a.vm.new_value_error(format!("no device {n}"))),
        None => Ok(device::current_device()),
    }
}

fn allocator(a: &Args, i: usize) -> PyResult<Arc<dyn DeviceAllocator>> {
    device::cuda_allocator(index(a, i)?).or_raise(a.vm)
}

/// A byte count of the allocator at argument 0; 0 where no GPU was set up, as PyTorch reports
/// before CUDA starts.
fn figure(a: &Args, read: fn(&dyn DeviceAllocator) -> u64) -> PyResult {
    if !device::cuda_is_available() {
        return Ok(int(a.vm, 0u64));
    }
    Ok(int(a.vm, read(&*allocator(a, 0)?)))
}

/// `_record_memory_history(enabled, max_entries)`: `enabled` is "all", "state" or None (stop).
fn record_memory_history(a: &Args) -> PyResult {
    let mode = match a.opt_str(0)? {
        None => None,
        Some(text) => {
            Some(HistoryMode::parse(&text).map_err(|e| a.vm.new_value_error(e.to_string()))?)
        }
    };
    let mut options = HistoryOptions {
        enabled: mode,
        ..HistoryOptions::default()
    };
    if let Some(n) = a.opt_int(1)? {
        options.max_entries = usize::try_from(n)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| a.vm.new_value_error("max_entries must be 1 or more"))?;
    }
    // As PyTorch's recordHistory: every device's allocator records.
    for i in 0..device::cuda_device_count() {
        device::cuda_allocator(i)
            .or_raise(a.vm)?
            .record_memory_history(options.clone());
    }
    super::none(a.vm)
}
