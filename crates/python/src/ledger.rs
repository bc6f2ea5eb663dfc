//! The per-line ledger for Python (`torchlet run FILE.py --ledger`, `%%ledger`): a trace function
//! marks each line of the program's own file as control reaches it, as the Rhai language's
//! `__line` marks its statements, and a return to a line of that file resumes its run.
//!
//! Note [one-line loops]: RustPython reports a line when control moves to another line, so the
//! passes of a loop written on one line (`for i in r: s += i`) count as one run of it; their
//! memory is all charged to it.

use std::cell::RefCell;
use std::collections::BTreeMap;

use rustpython_vm::builtins::PyStrRef;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_explain::ledger::{Ledger, LineStats};

use crate::interpreter::Python;

thread_local! {
    /// The ledger being kept and the file whose lines it marks.
    static KEPT: RefCell<Option<(String, Ledger)>> = const { RefCell::new(None) };
    /// The trace function, which returns itself for the frames it traces.
    static TRACER: RefCell<Option<PyObjectRef>> = const { RefCell::new(None) };
}

impl Python {
    /// Run `run` keeping the ledger of cuda:`device` for the lines of the file named `file` (a
    /// program's path as it runs, or a cell's `In[3]`); the ledger comes back with its result.
    pub fn with_ledger<T>(
        &self,
        file: &str,
        device: usize,
        run: impl FnOnce() -> T,
    ) -> (T, BTreeMap<usize, LineStats>) {
        KEPT.with(|k| *k.borrow_mut() = Some((file.to_string(), Ledger::start(device))));
        self.interpreter.enter(|vm| {
            let tracer: PyObjectRef = vm.new_function("_torchlet_ledger", trace).into();
            TRACER.with(|t| *t.borrow_mut() = Some(tracer.clone()));
            set_trace(vm, tracer);
        });
        let result = run();
        self.interpreter.enter(|vm| set_trace(vm, vm.ctx.none()));
        TRACER.with(|t| t.borrow_mut().take());
        let ledger = KEPT.with(|k| k.borrow_mut().take());
        let lines = ledger.map(|(_, l)| l.finish()).unwrap_or_default();
        (result, lines)
    }
}

fn set_trace(vm: &VirtualMachine, function: PyObjectRef) {
    if let Ok(settrace) = vm.sys_module.get_attr("settrace", vm) {
        let _ = settrace.call((function,), vm);
    }
}

/// The trace function: a line of the ledger's file starts a run of it; a return to one resumes.
fn trace(frame: PyObjectRef, event: PyStrRef, _arg: PyObjectRef, vm: &VirtualMachine) -> PyResult {
    if !in_ledger_file(vm, &frame) {
        return Ok(vm.ctx.none());
    }
    match &*event.to_string_lossy() {
        "line" => {
            let line = line_of(vm, &frame);
            KEPT.with(|k| {
                if let Some((_, ledger)) = k.borrow_mut().as_mut() {
                    ledger.on_statement(line, 0);
                }
            });
        }
        "return" => {
            let caller = frame.get_attr("f_back", vm).ok().filter(|b| !vm.is_none(b));
            if let Some(caller) = caller.filter(|c| in_ledger_file(vm, c)) {
                let line = line_of(vm, &caller);
                KEPT.with(|k| {
                    if let Some((_, ledger)) = k.borrow_mut().as_mut() {
                        ledger.resume(line);
                    }
                });
            }
        }
        _ => {}
    }
    Ok(TRACER
        .with(|t| t.borrow().clone())
        .unwrap_or_else(|| vm.ctx.none()))
}

fn in_ledger_file(vm: &VirtualMachine, frame: &PyObjectRef) -> bool {
    let file = frame
        .get_attr("f_code", vm)
        .and_then(|c| c.get_attr("co_filename", vm))
        .and_then(|f| f.str(vm));
    let Ok(file) = file else {
        return false;
    };
    KEPT.with(|k| {
        k.borrow()
            .as_ref()
            .is_some_and(|(kept, _)| *kept == *file.to_string_lossy())
    })
}

fn line_of(vm: &VirtualMachine, frame: &PyObjectRef) -> usize {
    frame
        .get_attr("f_lineno", vm)
        .ok()
        .and_then(|l| l.try_into_value::<usize>(vm).ok())
        .unwrap_or(0)
}
