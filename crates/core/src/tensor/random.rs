//! Random number state: one generator per device, reseeded together by `manual_seed`.

use std::collections::HashMap;
use std::sync::Mutex;

use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::device::Device;

/// The seed a fresh process starts from (PyTorch's default CPU seed).
const DEFAULT_SEED: u64 = 67280421310721;

static GENERATORS: Mutex<Option<HashMap<Device, StdRng>>> = Mutex::new(None);
static SEED: Mutex<u64> = Mutex::new(DEFAULT_SEED);

/// Seed every device's generator, as `torch.manual_seed` does.
pub fn manual_seed(seed: u64) {
    *SEED.lock().unwrap_or_else(|e| e.into_inner()) = seed;
    *GENERATORS.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// A fresh seed for one random fill on `device`, drawn from that device's generator.
pub(crate) fn next_seed(device: Device) -> u64 {
    let seed = *SEED.lock().unwrap_or_else(|e| e.into_inner());
    let mut gens = GENERATORS.lock().unwrap_or_else(|e| e.into_inner());
    let map = gens.get_or_insert_with(HashMap::new);
    let device_salt = match device {
        Device::Cpu => 0,
        Device::Cuda(i) => 1 + i as u64,
        Device::Meta => u64::MAX,
    };
    map.entry(device)
        .or_insert_with(|| {
            StdRng::seed_from_u64(seed ^ device_salt.wrapping_mul(0xA076_1D64_78BD_642F))
        })
        .random()
}

/// Every device's generator as it stands, for [`restore`]: what `torch.get_rng_state()` and
/// `torch.cuda.get_rng_state()` together capture.
#[derive(Clone)]
pub struct RngState {
    seed: u64,
    generators: Option<HashMap<Device, StdRng>>,
}

/// The generators' state now (checkpointing stashes it to replay dropout's masks).
pub fn snapshot() -> RngState {
    RngState {
        seed: *SEED.lock().unwrap_or_else(|e| e.into_inner()),
        generators: GENERATORS.lock().unwrap_or_else(|e| e.into_inner()).clone(),
    }
}

/// Put the generators back as [`snapshot`] found them.
pub fn restore(state: &RngState) {
    *SEED.lock().unwrap_or_else(|e| e.into_inner()) = state.seed;
    *GENERATORS.lock().unwrap_or_else(|e| e.into_inner()) = state.generators.clone();
}
