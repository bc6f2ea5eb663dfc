//! Memory figures of every CUDA device, read from their allocators, for `:mem`, `:trace` and the prompt.
use std::sync::Arc;

use torchlet_alloc::DeviceAllocator;
use torchlet_core::device;
use torchlet_core::device::blas_handle::Workspace;

/// One device's allocator figures at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceMemory {
    /// The CUDA device index (`cuda:N`).
    pub index: usize,
    /// Bytes in blocks handed to tensors.
    pub allocated: u64,
    /// Bytes the allocator holds from the driver (allocated plus cached).
    pub reserved: u64,
    /// Peak of `allocated` since start or the last reset.
    pub peak_allocated: u64,
    /// Peak of `reserved` since start or the last reset.
    pub peak_reserved: u64,
    /// Segments obtained from the driver so far (`segment.all.allocated`).
    pub segments_created: i64,
    /// Segments given back to the driver so far (`segment.all.freed`).
    pub segments_released: i64,
    /// The cuBLAS workspaces inside `allocated` (no variable holds them).
    pub workspaces: Vec<Workspace>,
    /// The statement running when `peak_allocated` was reached, if a program named one.
    pub peak_site: Option<Arc<str>>,
    /// The calls that led to that statement, as a traceback lists them (inside functions).
    pub peak_stack: Option<Arc<str>>,
}

/// The figures of every CUDA device, or why there are none.
///
/// The first call may probe the driver (real GPUs are found lazily); nothing calls this before
/// the first prompt, so start-up stays fast.
pub fn sample() -> Result<Vec<DeviceMemory>, String> {
    let workspaces = device::blas_workspaces();
    allocators()?
        .iter()
        .enumerate()
        .map(|(index, a)| {
            let stats = a.memory_stats();
            let stat = |key: &str| stats.get(key).copied().unwrap_or(0);
            let peak = a.peak_moments().allocated;
            Ok(DeviceMemory {
                index,
                allocated: a.memory_allocated(),
                reserved: a.memory_reserved(),
                peak_allocated: a.max_memory_allocated(),
                peak_reserved: a.max_memory_reserved(),
                segments_created: stat("segment.all.allocated"),
                segments_released: stat("segment.all.freed"),
                workspaces: workspaces
                    .iter()
                    .find(|(i, _)| *i == index)
                    .map(|(_, w)| w.clone())
                    .unwrap_or_default(),
                peak_site: peak.site,
                peak_stack: peak.stack,
            })
        })
        .collect()
}

/// Every device's `memory_summary()` text, each headed by its name when there are several
/// (`:summary`, `%summary`), or why there is none.
pub fn summaries_text() -> Result<String, String> {
    let summaries = allocators()?;
    let many = summaries.len() > 1;
    let text: Vec<String> = summaries
        .iter()
        .enumerate()
        .map(|(i, a)| match many {
            true => format!("cuda:{i}\n{}", a.memory_summary(false)),
            false => a.memory_summary(false),
        })
        .collect();
    Ok(text.join("\n").trim_end().to_string())
}

/// `:mem`'s text: each device's memory table, with the sparkline of recent inputs when the
/// memory chart's samples (`memplot`) have some.
pub(crate) fn mem_text(
    memplot: &std::cell::RefCell<super::memplot::MemPlot>,
) -> Result<String, String> {
    let text = table(&sample()?);
    Ok(match super::memplot::sparkline(memplot) {
        Some(line) => format!("{text}\n{line}"),
        None => text,
    })
}

/// Every CUDA device's allocator; with none, the device layer's own words on why and what to do.
fn allocators() -> Result<Vec<Arc<dyn DeviceAllocator>>, String> {
    let count = device::cuda_device_count();
    if count == 0 {
        let why = device::cuda_allocator(0).err().map(|e| e.to_string());
        return Err(format!(
            "no CUDA device: {}",
            why.unwrap_or_else(|| "none was found".into())
        ));
    }
    (0..count)
        .map(|i| device::cuda_allocator(i).map_err(|e| e.to_string()))
        .collect()
}

pub use torchlet_explain::bytes::human_bytes as human;

/// The cuBLAS workspaces of `cuda:index` named as every listing names them; `None` before the
/// first matrix product, which takes the first one.
pub fn workspace_note(index: usize, workspaces: &[Workspace]) -> Option<String> {
    let total: u64 = workspaces.iter().map(|w| w.bytes).sum();
    let each = |w: &Workspace| format!("{} B for {}", w.bytes, w.handle.user());
    match workspaces {
        [] => None,
        [one] => Some(format!(
            "cuBLAS workspace (not a variable): {total} B ({}) on cuda:{index}, for {}",
            human(total),
            one.handle.user()
        )),
        many => Some(format!(
            "cuBLAS workspaces (not variables): {total} B ({}) on cuda:{index}, {}",
            human(total),
            many.iter().map(each).collect::<Vec<_>>().join(" and ")
        )),
    }
}

/// The `:mem` table: allocated, reserved and their peaks per device, then where each device's
/// allocated peak was reached (the innermost statement, and inside functions the calls that led
/// there), then the cuBLAS workspaces inside `allocated`, since they otherwise look like tensors
/// nobody holds.
pub fn table(devices: &[DeviceMemory]) -> String {
    let mut out = format!(
        "{:<8} {:>12} {:>12} {:>16} {:>15}\n",
        "device", "allocated", "reserved", "peak allocated", "peak reserved"
    );
    for d in devices {
        out += &format!(
            "{:<8} {:>12} {:>12} {:>16} {:>15}\n",
            format!("cuda:{}", d.index),
            human(d.allocated),
            human(d.reserved),
            human(d.peak_allocated),
            human(d.peak_reserved)
        );
    }
    for d in devices {
        let Some(site) = &d.peak_site else { continue };
        out += &format!("peak allocated on cuda:{} reached at {site}\n", d.index);
        if let Some(stack) = &d.peak_stack {
            out += "  the calls that led there, innermost last:\n";
            for call in stack.lines() {
                out += &format!("    {call}\n");
            }
        }
    }
    for d in devices {
        if let Some(note) = workspace_note(d.index, &d.workspaces) {
            out += &format!("{note}; counted in allocated\n");
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_use_binary_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(4_000_256), "3.81 MiB");
        assert_eq!(human(20_971_520), "20.00 MiB");
        assert_eq!(human(3 << 30), "3.00 GiB");
    }

    #[test]
    fn table_has_one_row_per_device() {
        let d = DeviceMemory {
            index: 1,
            allocated: 4_000_256,
            reserved: 20_971_520,
            ..Default::default()
        };
        let text = table(std::slice::from_ref(&d));
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.contains("cuda:1") && text.contains("20.00 MiB"),
            "{text}"
        );
        let at_peak = DeviceMemory {
            peak_site: Some(Arc::from("m.py:5:12: return h @ w")),
            peak_stack: Some(Arc::from("File \"m.py\", line 9, in <module>: y = f(x)\nFile \"m.py\", line 5, in f: return h @ w")),
            ..d
        };
        let text = table(&[at_peak]);
        assert!(
            text.contains("peak allocated on cuda:1 reached at m.py:5:12: return h @ w"),
            "{text}"
        );
        assert!(
            text.contains("\n    File \"m.py\", line 9, in <module>: y = f(x)\n"),
            "{text}"
        );
    }

    #[test]
    fn workspaces_are_named_with_their_user() {
        use torchlet_core::device::blas_handle::BlasHandle;
        let ws = |handle| Workspace {
            handle,
            ptr: 0,
            bytes: 32 << 20,
        };
        assert_eq!(workspace_note(0, &[]), None);
        assert_eq!(
            workspace_note(0, &[ws(BlasHandle::Caller)]).unwrap(),
            "cuBLAS workspace (not a variable): 33554432 B (32.00 MiB) on cuda:0, for matmul"
        );
        let both = workspace_note(1, &[ws(BlasHandle::Caller), ws(BlasHandle::Autograd)]).unwrap();
        assert_eq!(
            both,
            "cuBLAS workspaces (not variables): 67108864 B (64.00 MiB) on cuda:1, \
             33554432 B for matmul and 33554432 B for autograd's backward"
        );
    }
}
