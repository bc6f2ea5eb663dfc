//! The interrupt flag (Ctrl-C, Jupyter's interrupt) that ops check before they start.
//!
//! The flag is per thread: a session lives on one thread (it holds `Rc`s), and two sessions on two
//! threads (tests, kernels) must not stop each other.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Result, TensorError};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Make ops on this thread stop with a `KeyboardInterrupt` error while `flag` is set.
/// The owner clears the flag before running code again.
pub fn set_interrupt_flag(flag: Arc<AtomicBool>) {
    FLAG.with(|f| *f.borrow_mut() = Some(flag));
}

/// `Err(KeyboardInterrupt)` when an interrupt is pending on this thread.
pub fn check_interrupt() -> Result<()> {
    let set = FLAG.with(|f| {
        f.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    });
    if set {
        Err(TensorError::interrupted())
    } else {
        Ok(())
    }
}
