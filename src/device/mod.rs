//! Devices (`cpu`, `cuda:N`), the registry of devices, and their backends.

pub mod cuda;

/// Set up the device registry once per process; `simulate` is `--simulate-cuda`'s value.
pub fn init(_simulate: Option<&str>) -> Result<(), String> {
    Ok(())
}
