//! The real GPU: kernels against the host, NVRTC compiles, device faults; and the contiguous walk on the host.
#[path = "../common/mod.rs"]
mod common;

mod compile;
mod contig_walk;
mod faults;
mod kernels;

use std::cell::RefCell;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// cuda:0's free memory, which one raw-memory test reads and every other test here changes (module
/// loads, workspaces, and the `faults` tests' child processes): that test holds it alone, the
/// others share it.
static FREE_MEMORY: RwLock<()> = RwLock::new(());

thread_local! {
    static SHARED: RefCell<Option<RwLockReadGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// Share cuda:0 with the other tests until this test ends (libtest gives each test its own thread,
/// and the guard goes with it).
fn shares_gpu() {
    SHARED.with(|held| {
        held.borrow_mut()
            .get_or_insert_with(|| FREE_MEMORY.read().unwrap_or_else(|e| e.into_inner()));
    });
}

/// cuda:0 to this test alone while the guard lives.
fn gpu_alone() -> RwLockWriteGuard<'static, ()> {
    FREE_MEMORY.write().unwrap_or_else(|e| e.into_inner())
}
