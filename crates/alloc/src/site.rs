//! Provenance: the statement that is running, so every allocation can say which one made it.
//!
//! The script layer names the statement about to run (`FILE:LINE:COL: text`); the device
//! backends pass it to the allocator with each request, which keeps it with the block (its
//! snapshot `tag`, its trace entries). One shared string per statement: a request clones a handle.
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
    static STACK: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
    static RUN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Which statement run this is: a new number each time a statement is named, so the blocks of
/// the one running now can be told from those its earlier runs (a loop's) made.
pub fn run() -> u64 {
    RUN.with(|r| r.get())
}

/// The statement now running on this thread, if a script named one.
pub fn current() -> Option<Arc<str>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// The calls that led to the running statement, as a traceback lists them (outermost first, one
/// `File "F", line L, in NAME: text` a line, the statement's own last), when the language gave them.
pub fn stack() -> Option<Arc<str>> {
    STACK.with(|s| s.borrow().clone())
}

/// Name the statement now running (`None` once no script runs).
pub fn set(site: Option<Arc<str>>) {
    set_with_stack(site, None);
}

/// Name the statement now running and the calls that led to it (see [`stack`]).
pub fn set_with_stack(site: Option<Arc<str>>, stack: Option<Arc<str>>) {
    RUN.with(|r| r.set(r.get() + 1));
    CURRENT.with(|c| *c.borrow_mut() = site);
    STACK.with(|s| *s.borrow_mut() = stack);
}
