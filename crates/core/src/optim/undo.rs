//! Host copies of the tensors a step updates before its last allocation, to put back on failure.
//!
//! PyTorch's single-tensor functions update one parameter before allocating the next one's
//! temporaries, so an out-of-memory error half-way leaves half the parameters stepped. torchlet
//! keeps PyTorch's allocations in PyTorch's order and copies what such a step will change to host
//! memory first (host copies take no device memory, so the GPU's events are PyTorch's); a failed
//! step writes the copies back. The foreach paths mostly need none: there every allocation comes
//! before every update.

use crate::tensor::{Result, Tensor};

/// Saved bytes of some tensors' storages.
pub(crate) struct Undo {
    saved: Vec<(Tensor, Vec<u8>)>,
}

impl Undo {
    /// Copy the storages of `tensors` that are on a GPU to the host (each storage once).
    ///
    /// Host memory is not the caching allocator's and does not run out the way a GPU's does, so a
    /// step on the CPU is not copied (which would double a CPU step's memory traffic); an
    /// interrupt there leaves it half done, as it does PyTorch's.
    pub(crate) fn of<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Result<Undo> {
        let mut saved: Vec<(Tensor, Vec<u8>)> = Vec::new();
        for t in tensors {
            let seen = saved.iter().any(|(s, _)| s.storage_id() == t.storage_id());
            // Shapes only (`torchlet fit`) there are no values to put back.
            if seen || !t.device().is_cuda() || !t.has_values() {
                continue;
            }
            saved.push((t.clone(), t.storage_bytes()?));
        }
        Ok(Undo { saved })
    }

    /// Nothing to put back.
    pub(crate) fn none() -> Undo {
        Undo { saved: Vec::new() }
    }

    /// Run `body`; when it fails, write the saved bytes back and return its error.
    pub(crate) fn guard<T>(self, body: impl FnOnce() -> Result<T>) -> Result<T> {
        let result = body();
        if result.is_err() {
            for (t, bytes) in &self.saved {
                // The step's own error is the one to report; a failed write-back cannot be helped.
                let _ = t.restore_storage_bytes(bytes);
            }
        }
        result
    }
}
