//! Python callables that core calls back during `backward()`: checkpointed functions run again,
//! gradient hooks, `autograd.Function` backwards and the pass's final callbacks.
//!
//! Core's closures must be `Send + Sync` and know nothing of the interpreter, so a callable waits
//! in a per-thread table under an id, the closure holds a [`Registration`] that removes it when
//! core drops the closure (with its graph), and `backward()` lends its interpreter to whatever
//! the pass calls back for as long as it runs.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_core::tensor::{Result, TensorError};

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The callables core may call back, by id.
    static CALLABLES: RefCell<HashMap<u64, PyObjectRef>> = RefCell::new(HashMap::new());
    /// The interpreter of the `backward()` running on this thread, if any.
    static INTERPRETER: Cell<Option<*const VirtualMachine>> = const { Cell::new(None) };
}

/// A callable's place in the table; dropping it removes the callable.
pub(crate) struct Registration(u64);

impl Registration {
    /// Keep `f` callable by id until the registration is dropped.
    pub(crate) fn new(f: PyObjectRef) -> Registration {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        CALLABLES.with(|c| c.borrow_mut().insert(id, f));
        Registration(id)
    }

    /// Call the callable in the interpreter lent by `backward()`: `call` gets the interpreter and
    /// the callable, makes the call and reads its result; `what` names the callable in errors
    /// ("the checkpointed function, run again by backward").
    pub(crate) fn call<R>(
        &self,
        what: &str,
        call: impl FnOnce(&VirtualMachine, &PyObjectRef) -> PyResult<R>,
    ) -> Result<R> {
        let f = CALLABLES.with(|c| c.borrow().get(&self.0).cloned());
        let f = f.ok_or_else(|| TensorError::runtime(format!("{what}: the function is gone")))?;
        with_interpreter(what, |vm| {
            let done = super::site::around_callback(|| call(vm, &f));
            done.map_err(|e| {
                let mut text = String::new();
                let _ = vm.write_exception(&mut text, &e);
                TensorError::runtime(format!("in {what}:\n{}", text.trim_end()))
            })
        })
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let f = CALLABLES.with(|c| c.borrow_mut().remove(&self.0));
        drop(f);
    }
}

/// Run `f` (a backward) with `vm` lent to whatever the pass calls back.
pub(crate) fn lending_interpreter<R>(vm: &VirtualMachine, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const VirtualMachine>);
    impl Drop for Restore {
        fn drop(&mut self) {
            INTERPRETER.with(|c| c.set(self.0));
        }
    }
    let outer = INTERPRETER.with(|c| c.replace(Some(vm as *const VirtualMachine)));
    let _restore = Restore(outer);
    f()
}

/// `f` with the interpreter `backward()` lent, or an error naming `what` needs one.
fn with_interpreter<R>(what: &str, f: impl FnOnce(&VirtualMachine) -> Result<R>) -> Result<R> {
    let Some(vm) = INTERPRETER.with(Cell::get) else {
        return Err(TensorError::runtime(format!(
            "{what}: it is Python, so call backward() from Python"
        )));
    };
    // SAFETY: set by `lending_interpreter` on this thread from a live reference, and restored
    // before that reference's call returns; the callback runs inside that call.
    f(unsafe { &*vm })
}
