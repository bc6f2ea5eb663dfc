//! Provenance for Python: each call into `torch._C` names the program's innermost statement (the
//! first frame outside torchlet's own `torch` package) as `FILE:LINE:COL: text`, for the
//! allocations it makes (see [`torchlet_alloc::site`]), as the Rhai language names its statements.
//!
//! A statement is named again only when the frame or the line changes, so the ops of one
//! statement share one run (`torchlet_alloc::site::run`: what "made by the statement running"
//! counts). Names and files are cached, so a call costs a walk up the frames and a lookup.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rustpython_vm::VirtualMachine;

/// Where the last statement named ran: its frame, its file (interned path) and its line.
type Place = (usize, usize, usize);

thread_local! {
    static LAST: RefCell<Option<Place>> = const { RefCell::new(None) };
    static NAMES: RefCell<HashMap<(usize, usize, usize), Arc<str>>> = RefCell::new(HashMap::new());
    static FILES: RefCell<HashMap<usize, Arc<File>>> = RefCell::new(HashMap::new());
    /// How many calls back into the program from torch calls are running.
    static CALLBACKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The sources run from memory (a notebook cell `In[3]`, a REPL input), by the name they ran as.
    static SOURCES: RefCell<HashMap<String, Vec<String>>> = RefCell::new(HashMap::new());
}

/// `source` is about to run under `name` without a file on disk (a cell, a REPL input): its
/// statements are named from this text. The caches keyed by the interpreter's objects are
/// dropped, as a new input's objects may reuse an old one's addresses.
pub(crate) fn remember_source(name: &str, source: &str) {
    let lines = source.lines().map(str::to_string).collect();
    SOURCES.with(|s| s.borrow_mut().insert(name.to_string(), lines));
    NAMES.with(|n| n.borrow_mut().clear());
    FILES.with(|f| f.borrow_mut().clear());
    LAST.with(|l| *l.borrow_mut() = None);
}

/// A program file as statements are named from it: its name as shown, its lines if readable.
struct File {
    shown: String,
    lines: Vec<String>,
}

/// Name the statement of the innermost program frame for what the running call allocates, with
/// the program's calls that led to it when it runs inside a function.
pub(crate) fn name_statement(vm: &VirtualMachine) {
    let frames = vm.frames.borrow();
    let mut program = frames.iter().rev().filter_map(|pointer| {
        // SAFETY: the interpreter keeps every frame on its stack alive while it is there, and
        // the stack is borrowed for this walk.
        let frame = unsafe { pointer.as_ref() };
        let path = frame.code.source_path();
        (!is_torchlets_own(vm, path.as_str()) && frame.lasti() != 0).then_some(frame)
    });
    let Some(frame) = program.next() else { return };
    let path = frame.code.source_path();
    let location = frame.current_location();
    let (line, col) = (location.line.get(), location.character_offset.get());
    let place = (frame as *const _ as usize, path as *const _ as usize, line);
    if LAST.with(|l| *l.borrow() == Some(place)) {
        return;
    }
    LAST.with(|l| *l.borrow_mut() = Some(place));
    let name = NAMES.with(|names| {
        let key = (place.1, line, col);
        let mut names = names.borrow_mut();
        names
            .entry(key)
            .or_insert_with(|| statement_name(place.1, path.as_str(), line, col))
            .clone()
    });
    let callers: Vec<String> = program
        .map(|f| {
            let p = f.code.source_path();
            call_line(
                p as *const _ as usize,
                p.as_str(),
                f.current_location().line.get(),
                f.code.obj_name.as_str(),
            )
        })
        .collect();
    let stack = (!callers.is_empty()).then(|| {
        let own = call_line(place.1, path.as_str(), line, frame.code.obj_name.as_str());
        let lines: Vec<&str> = callers
            .iter()
            .rev()
            .map(String::as_str)
            .chain([own.as_str()])
            .collect();
        Arc::from(lines.join("\n"))
    });
    torchlet_alloc::site::set_with_stack(Some(name), stack);
}

/// One line of a traceback-like stack: `File "F", line L, in NAME: text`.
fn call_line(key: usize, path: &str, line: usize, function: &str) -> String {
    let file = file(key, path);
    let text = file
        .lines
        .get(line.saturating_sub(1))
        .map_or("", |l| l.trim());
    format!(
        "File \"{}\", line {line}, in {function}: {text}",
        file.shown
    )
}

/// A program has stopped running: what is allocated now belongs to no statement.
pub(crate) fn forget_statement() {
    LAST.with(|l| *l.borrow_mut() = None);
    torchlet_alloc::site::set(None);
}

/// Whether the program runs inside a torch call that called it back (a hook, a checkpointed
/// function run again by backward). Note [no walks in callbacks]: backward keeps the node it
/// runs locked while it calls back, so walking graphs then (the leak watch, the holders) would
/// wait on that lock forever; they are not done there.
pub(crate) fn in_callback() -> bool {
    CALLBACKS.with(|c| c.get() > 0)
}

/// Run `f`, a call back into the program from inside a torch call (backward recomputing a
/// checkpointed function), and name the outer statement again afterwards: what the outer call
/// allocates after the callback returns is the outer statement's.
pub(crate) fn around_callback<T>(f: impl FnOnce() -> T) -> T {
    let last = LAST.with(|l| *l.borrow());
    let (site, stack) = (
        torchlet_alloc::site::current(),
        torchlet_alloc::site::stack(),
    );
    CALLBACKS.with(|c| c.set(c.get() + 1));
    let result = f();
    CALLBACKS.with(|c| c.set(c.get() - 1));
    LAST.with(|l| *l.borrow_mut() = last);
    torchlet_alloc::site::set_with_stack(site, stack);
    result
}

/// Whether the frame object `frame` runs torchlet's own code (its `torch` package, the frozen
/// standard library) rather than the program's.
pub(crate) fn is_torchlets_frame(vm: &VirtualMachine, frame: &rustpython_vm::PyObjectRef) -> bool {
    let file = frame
        .get_attr("f_code", vm)
        .and_then(|code| code.get_attr("co_filename", vm))
        .and_then(|name| name.str(vm));
    file.map_or(true, |name| is_torchlets_own(vm, &name.to_string_lossy()))
}

/// torchlet's `torch` package (frozen, or read from `TORCHLET_PY_SOURCES` while developing it)
/// and the interpreter's frozen modules are not the program.
pub(crate) fn is_torchlets_own(vm: &VirtualMachine, path: &str) -> bool {
    thread_local! {
        static SOURCES: Option<String> =
            std::env::var(crate::package::SOURCE_DIR_ENV).ok().filter(|d| !d.is_empty());
    }
    // The interpreter's frozen standard library names its frames by module (`pickle`,
    // `_collections_abc`), as a notebook names its cells (`In[3]`): ask the frozen table, after
    // the cheaper tests (this runs for each frame of each call into `torch._C`).
    path.starts_with("<torchlet")
        || path.starts_with("<frozen")
        || path.starts_with("_frozen")
        || SOURCES.with(|dir| dir.as_deref().is_some_and(|dir| path.starts_with(dir)))
        || vm.state.frozen.contains_key(path)
}

fn statement_name(key: usize, path: &str, line: usize, col: usize) -> Arc<str> {
    let file = file(key, path);
    let text = file
        .lines
        .get(line.saturating_sub(1))
        .map_or("", |l| l.trim());
    Arc::from(format!("{}:{line}:{col}: {text}", file.shown))
}

/// The program file at `path` (interned as `key`), read once.
fn file(key: usize, path: &str) -> Arc<File> {
    FILES.with(|files| {
        files
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| Arc::new(read(path)))
            .clone()
    })
}

/// The lines of the program file `path`: a remembered cell's or input's, else the file's on disk.
pub(crate) fn source_lines(path: &str) -> Vec<String> {
    read(path).lines
}

/// The file at `path`, shown relative to the working folder when it lies in it.
fn read(path: &str) -> File {
    if let Some(lines) = SOURCES.with(|s| s.borrow().get(path).cloned()) {
        return File {
            shown: path.to_string(),
            lines,
        };
    }
    let lines = std::fs::read_to_string(path)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default();
    let shown = std::fs::canonicalize(path)
        .ok()
        .and_then(|full| {
            let here = std::env::current_dir().ok()?.canonicalize().ok()?;
            let relative = full.strip_prefix(&here).ok()?;
            Some(relative.display().to_string())
        })
        .unwrap_or_else(|| path.to_string());
    File { shown, lines }
}
