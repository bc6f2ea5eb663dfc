//! The interrupt flag (Ctrl-C, Jupyter's interrupt) that ops check before they start.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use super::{Result, TensorError};

static GLOBAL: RwLock<Option<Arc<AtomicBool>>> = RwLock::new(None);

thread_local! {
    static LOCAL: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Make ops on this thread (and, failing a flag of their own, on every thread) stop with a
/// `KeyboardInterrupt` error while `flag` is set. The owner clears the flag before running again.
pub fn set_interrupt_flag(flag: Arc<AtomicBool>) {
    LOCAL.with(|l| *l.borrow_mut() = Some(flag.clone()));
    *GLOBAL.write().unwrap_or_else(|e| e.into_inner()) = Some(flag);
}

/// `Err(KeyboardInterrupt)` when an interrupt is pending.
pub fn check_interrupt() -> Result<()> {
    let set = LOCAL.with(|l| l.borrow().as_ref().map(|f| f.load(Ordering::Relaxed)));
    let set = match set {
        Some(s) => s,
        None => GLOBAL
            .read()
            .ok()
            .and_then(|g| g.as_ref().map(|f| f.load(Ordering::Relaxed)))
            .unwrap_or(false),
    };
    if set {
        Err(TensorError::interrupted())
    } else {
        Ok(())
    }
}
