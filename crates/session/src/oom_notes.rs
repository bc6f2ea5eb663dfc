//! The lines torchlet adds after PyTorch's out-of-memory message: the allocator's diagnosis of
//! each device that failed, and the variables holding the most memory there.

use super::holders::{self, HolderMap};
use super::Session;

/// How many holders the notes name.
const BIGGEST_HOLDERS: usize = 3;

impl Session {
    /// Forgets diagnoses of failures that an earlier input caught, so notes speak of this one.
    pub(crate) fn forget_oom_diagnoses(&self) {
        for_each_started_allocator(|_, allocator| {
            allocator.take_oom_diagnosis();
        });
    }

    /// The notes for an out-of-memory error just raised: one block of lines per failed device.
    pub(crate) fn oom_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for_each_started_allocator(|device, allocator| {
            let Some(diagnosis) = allocator.take_oom_diagnosis() else {
                return;
            };
            notes.extend(diagnosis.lines("cuda::record_memory_history()"));
            let variables = self.named_values();
            let map = HolderMap::of_variables(variables.iter().map(|(n, v)| (n.as_str(), v)));
            notes.push(holders::biggest_line(
                &holders::block_holders(&map, device),
                BIGGEST_HOLDERS,
            ));
        });
        notes
    }
}

/// Runs `f` on the allocator of every CUDA device, if CUDA has been started.
fn for_each_started_allocator(mut f: impl FnMut(usize, &dyn torchlet_alloc::DeviceAllocator)) {
    for (device, allocator) in torchlet_core::device::started_cuda_allocators() {
        f(device, allocator.as_ref());
    }
}
