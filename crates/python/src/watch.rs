//! The trace function behind the per-line ledger and the leak warnings: each line of the
//! program's own files is told to the ledger when one is kept for that file (as the Rhai
//! language's `__line` marks), and each pass of a loop to the leak watch (as its `__iteration`
//! marks); a return to a line of the ledger's file resumes that line's run.
//!
//! Note [one-line loops]: RustPython reports a line when control moves to another line, so the
//! passes of a loop written on one line (`for i in r: s += i`) count as one run of it in the
//! ledger, and the leak watch never sees them.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use rustpython_vm::builtins::PyStrRef;
use rustpython_vm::builtins::PyTuple;
use rustpython_vm::frame::Frame;
use rustpython_vm::{AsObject, PyObjectRef, PyResult, VirtualMachine};
use torchlet_explain::leaks::LeakWatch;
use torchlet_explain::ledger::{Ledger, LineStats};

use crate::interpreter::Python;

thread_local! {
    /// The ledger being kept and the file whose lines it marks.
    static LEDGER: RefCell<Option<(String, Ledger)>> = const { RefCell::new(None) };
    /// The loops of the program running now, watched for leaks.
    static LEAKS: RefCell<LeakWatch> = RefCell::new(LeakWatch::default());
    /// The trace function, which returns itself for the frames it traces.
    static TRACER: RefCell<Option<PyObjectRef>> = const { RefCell::new(None) };
    /// The lines that start a loop (`for`, `while`), by file.
    static LOOP_LINES: RefCell<HashMap<String, Rc<HashSet<usize>>>> = RefCell::new(HashMap::new());
    /// What tracing needs of each code object met, by its address (the entry keeps the object,
    /// so no other takes the address while it is cached).
    static CODES: RefCell<HashMap<usize, Rc<CodeInfo>>> = RefCell::new(HashMap::new());
}

/// A code object of the program: its file, and the lines of it that start a loop.
struct CodeInfo {
    file: String,
    loops: HashSet<usize>,
    _code: PyObjectRef,
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
        LEDGER.with(|k| *k.borrow_mut() = Some((file.to_string(), Ledger::start(device))));
        let result = run();
        let ledger = LEDGER.with(|k| k.borrow_mut().take());
        let lines = ledger.map(|(_, l)| l.finish()).unwrap_or_default();
        (result, lines)
    }
}

/// A program is about to run: trace its lines and watch its loops afresh.
pub(crate) fn start(vm: &VirtualMachine) {
    LEAKS.with(|l| l.borrow_mut().clear());
    LOOP_LINES.with(|l| l.borrow_mut().clear());
    CODES.with(|c| c.borrow_mut().clear());
    let tracer: PyObjectRef = vm.new_function("_torchlet_trace", trace).into();
    TRACER.with(|t| *t.borrow_mut() = Some(tracer.clone()));
    set_trace(vm, tracer);
}

/// The program ended: stop tracing, and write the leak warnings of the loops whose graph is
/// still held (Note [what a leak is] in `torchlet_explain::leaks`).
pub(crate) fn finish(vm: &VirtualMachine) {
    set_trace(vm, vm.ctx.none());
    TRACER.with(|t| t.borrow_mut().take());
    CODES.with(|c| c.borrow_mut().clear());
    let suspected = LEAKS.with(|l| l.borrow().has_suspects());
    if !suspected {
        return;
    }
    let Ok(walked) = crate::native::explain::walk_from(vm, None) else {
        return;
    };
    let warnings = LEAKS.with(|l| l.borrow_mut().finish(walked.iter()));
    warn(vm, &warnings);
}

fn set_trace(vm: &VirtualMachine, function: PyObjectRef) {
    if let Ok(settrace) = vm.sys_module.get_attr("settrace", vm) {
        let _ = settrace.call((function,), vm);
    }
}

/// The trace function: lines go to the ledger and the leak watch. A frame is traced line by
/// line only where that is needed (its file's ledger is kept, or a loop starts in its code):
/// torchlet's own frames and the program's loop-free functions cost one call each.
fn trace(frame: PyObjectRef, event: PyStrRef, _arg: PyObjectRef, vm: &VirtualMachine) -> PyResult {
    let Some(code) = code_info(vm, &frame) else {
        return Ok(vm.ctx.none());
    };
    let file = code.file.as_str();
    match &*event.to_string_lossy() {
        "call" if code.loops.is_empty() && !ledger_kept_for(file) => return Ok(vm.ctx.none()),
        "line" => {
            let line = line_of(&frame);
            with_ledger_of(file, |ledger| ledger.on_statement(line, 0));
            if code.loops.contains(&line) {
                loop_pass(vm, &frame, file, line);
            }
        }
        "return" => {
            let caller = frame.get_attr("f_back", vm).ok().filter(|b| !vm.is_none(b));
            if let Some(caller) = caller {
                if code_info(vm, &caller).is_some_and(|c| c.file == file) {
                    let line = line_of(&caller);
                    with_ledger_of(file, |ledger| ledger.resume(line));
                }
            }
        }
        _ => {}
    }
    Ok(TRACER
        .with(|t| t.borrow().clone())
        .unwrap_or_else(|| vm.ctx.none()))
}

fn ledger_kept_for(file: &str) -> bool {
    LEDGER.with(|k| k.borrow().as_ref().is_some_and(|(kept, _)| kept == file))
}

/// What tracing needs of `frame`'s code; `None` for torchlet's own code.
fn code_info(vm: &VirtualMachine, frame: &PyObjectRef) -> Option<Rc<CodeInfo>> {
    let frame = frame.downcast_ref::<Frame>()?;
    let id = frame.code.as_object().get_id();
    if let Some(known) = CODES.with(|c| c.borrow().get(&id).cloned()) {
        return (!known.file.is_empty()).then_some(known);
    }
    let code: PyObjectRef = frame.code.clone().into();
    let file = frame.code.source_path().as_str().to_string();
    let own = crate::native::site::is_torchlets_own(vm, &file);
    let loops = match own {
        true => HashSet::new(),
        false => {
            let starts = loop_lines(&file);
            let lines = code_lines(vm, &code);
            lines.into_iter().filter(|l| starts.contains(l)).collect()
        }
    };
    let info = Rc::new(CodeInfo {
        file: if own { String::new() } else { file },
        loops,
        _code: code,
    });
    CODES.with(|c| c.borrow_mut().insert(id, info.clone()));
    (!info.file.is_empty()).then_some(info)
}

/// The source lines `code`'s instructions come from (`co_lines()`).
fn code_lines(vm: &VirtualMachine, code: &PyObjectRef) -> Vec<usize> {
    let Ok(entries) = vm.call_method(code, "co_lines", ()) else {
        return Vec::new();
    };
    let Ok(entries) = entries.try_to_value::<Vec<PyObjectRef>>(vm) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| e.downcast_ref::<PyTuple>()?.get(2).cloned())
        .filter_map(|l| l.try_into_value::<usize>(vm).ok())
        .collect()
}

fn with_ledger_of(file: &str, f: impl FnOnce(&mut Ledger)) {
    LEDGER.with(|k| {
        if let Some((kept, ledger)) = k.borrow_mut().as_mut() {
            if kept == file {
                f(ledger);
            }
        }
    });
}

/// A pass of the loop at `line`: report the allocated bytes, and weigh the variables when the
/// watch asks (its growths, or a suspect's step ending).
fn loop_pass(vm: &VirtualMachine, frame: &PyObjectRef, file: &str, line: usize) {
    let device = torchlet_core::device::current_device();
    let Some(allocator) = torchlet_core::device::started_cuda_allocator(device) else {
        return;
    };
    // Note [no walks in callbacks] (`native/site.rs`): a loop run again by backward is not watched.
    if crate::native::site::in_callback() {
        return;
    }
    let key = (line as i64, file_key(file));
    let now = allocator.memory_allocated();
    if !LEAKS.with(|l| l.borrow_mut().pass(key, now)) {
        return;
    }
    let Ok(walked) = crate::native::explain::walk_from(vm, Some(frame.clone())) else {
        return;
    };
    let warnings = LEAKS.with(|l| l.borrow_mut().weighed(key, walked.iter()));
    warn(vm, &warnings);
}

fn warn(vm: &VirtualMachine, warnings: &[String]) {
    let Ok(stderr) = vm.sys_module.get_attr("stderr", vm) else {
        return;
    };
    for text in warnings {
        let _ = vm.call_method(&stderr, "write", (format!("{text}\n"),));
    }
}

/// A number for the file, to tell loops on the same line of two files apart.
fn file_key(file: &str) -> i64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    file.hash(&mut hasher);
    hasher.finish() as i64
}

/// The lines of `file` that start a `for` or `while` loop: where each pass is reported.
fn loop_lines(file: &str) -> Rc<HashSet<usize>> {
    if let Some(known) = LOOP_LINES.with(|l| l.borrow().get(file).cloned()) {
        return known;
    }
    let lines = crate::native::site::source_lines(file);
    let starts: HashSet<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, text)| {
            let text = text.trim_start();
            ["for ", "while ", "async for "]
                .iter()
                .any(|k| text.starts_with(k))
        })
        .map(|(i, _)| i + 1)
        .collect();
    let starts = Rc::new(starts);
    LOOP_LINES.with(|l| l.borrow_mut().insert(file.to_string(), starts.clone()));
    starts
}

fn line_of(frame: &PyObjectRef) -> usize {
    frame.downcast_ref::<Frame>().map_or(0, |f| f.f_lineno())
}
