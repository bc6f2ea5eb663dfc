//! Provenance: the statement that is running, so every allocation can say which one made it.
//!
//! The script layer names the statement about to run (`FILE:LINE:COL: text`); the device
//! backends pass it to the allocator with each request, which keeps it with the block (its
//! snapshot `tag`, its trace entries). One shared string per statement: a request clones a handle.
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// The statement now running on this thread, if a script named one.
pub fn current() -> Option<Arc<str>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Name the statement now running (`None` once no script runs).
pub fn set(site: Option<Arc<str>>) {
    CURRENT.with(|c| *c.borrow_mut() = site);
}
