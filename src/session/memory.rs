//! Memory figures of every CUDA device, read from their allocators, for `:mem`, `:trace` and the prompt.

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
}

/// What to say when there is no CUDA device to report on.
pub const NO_CUDA: &str =
    "no CUDA device: torchlet found no CUDA driver; start with --simulate-cuda to simulate one";

/// The figures of every CUDA device, or why there are none.
pub fn sample() -> Result<Vec<DeviceMemory>, String> {
    Err(NO_CUDA.into())
}

/// Each device's `memory_summary()` text, or why there is none.
pub fn summaries() -> Result<Vec<(usize, String)>, String> {
    Err(NO_CUDA.into())
}

/// Bytes as PyTorch's summaries write them: `512 B`, `3.81 MiB`, `1.50 GiB`.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// The `:mem` table: allocated, reserved and their peaks per device.
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
        let text = table(&[d]);
        assert_eq!(text.lines().count(), 2);
        assert!(
            text.contains("cuda:1") && text.contains("20.00 MiB"),
            "{text}"
        );
    }
}
