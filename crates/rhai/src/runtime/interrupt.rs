//! The flag that stops running code from another thread (Ctrl-C, a kernel's interrupt_request).
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A handle that stops the code an engine is running, from any thread.
#[derive(Clone, Debug, Default)]
pub struct InterruptHandle(Arc<AtomicBool>);

impl InterruptHandle {
    /// Ask the running code to stop at its next operation.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// Whether an interrupt is pending.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    /// Forget a pending interrupt, before the next input runs.
    pub fn clear(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
    /// The flag itself, for tensor ops that check it between kernels.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}
