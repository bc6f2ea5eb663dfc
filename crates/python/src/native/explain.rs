//! The explanations for Python (`torchlet.memory_holders()`, `torchlet.explain_free(x)`,
//! `torchlet.empty_cache_report()` and the out-of-memory notes): the program's variables, and the
//! locals of the frames running, walked into [`Value`]s by Python's names.

use rustpython_vm::builtins::PyBaseExceptionRef;
use rustpython_vm::{AsObject, PyObjectRef, PyResult, VirtualMachine};
use torchlet_explain::explain_free::{self, Way};
use torchlet_explain::holders::{self, HolderMap};
use torchlet_explain::DisplayData;

use super::args::Args;
use super::values::int;
use super::Native;
use crate::named_values::{walk, Walked};

/// How many holders the out-of-memory notes name.
const BIGGEST_HOLDERS: usize = 3;

/// The natives of `torchlet/__init__.py`.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_memory_holders", memory_holders),
    ("_explain_free", explain_free_of),
    ("_empty_cache_report", |a| {
        let walked = walk_program(a.vm)?;
        let map = HolderMap::of_variables(walked.iter());
        let text = holders::pinned_text(&map, device(a, 0)?);
        Ok(a.vm.ctx.new_str(text).into())
    }),
];

/// `_memory_holders(device)`: `(rows, plain, html)`, every live block biggest first with what
/// holds it, and the table of them.
fn memory_holders(a: &Args) -> PyResult {
    let device = device(a, 0)?;
    let walked = walk_program(a.vm)?;
    let map = HolderMap::of_variables(walked.iter());
    let blocks = holders::block_holders(&map, device);
    let vm = a.vm;
    let mut rows = Vec::new();
    for b in &blocks {
        let row = vm.ctx.new_dict();
        row.set_item("address", int(vm, b.address), vm)?;
        row.set_item("size", int(vm, b.size), vm)?;
        row.set_item("requested", int(vm, b.requested), vm)?;
        row.set_item("segment", int(vm, b.segment), vm)?;
        row.set_item("segment_size", int(vm, b.segment_size), vm)?;
        let held = b.holders.iter().map(|h| vm.ctx.new_str(h.as_str()).into());
        row.set_item("holders", vm.ctx.new_list(held.collect()).into(), vm)?;
        let made_by = match &b.made_by {
            Some(m) => vm.ctx.new_str(m.as_str()).into(),
            None => vm.ctx.none(),
        };
        row.set_item("made_by", made_by, vm)?;
        rows.push(row.into());
    }
    let shown = holders::table(device, &blocks);
    shown_tuple(vm, vm.ctx.new_list(rows).into(), shown)
}

/// `_explain_free(x, device)`: `(path, ways, plain, html)` for a tensor or container a variable
/// reaches, or a path into one given as text (`"model.fc.weight"`).
fn explain_free_of(a: &Args) -> PyResult {
    let vm = a.vm;
    let device = device(a, 1)?;
    let walked = walk_program(vm)?;
    let target = a.get(0)?;
    let found = match target.downcast_ref::<rustpython_vm::builtins::PyStr>() {
        Some(text) => walked.lookup(vm, &text.to_string_lossy()),
        None => walked.find(target),
    };
    let Some((path, value)) = found else {
        return Err(not_reached(vm, target));
    };
    let ways = explain_free::explain_free(&path, &value, walked.iter(), device);
    let rows = ways
        .iter()
        .map(|w| way_dict(vm, w))
        .collect::<PyResult<Vec<_>>>()?;
    let shown = explain_free::table(&path, &ways);
    let (plain, html) = (shown.plain, shown.html.unwrap_or_default());
    Ok(vm
        .ctx
        .new_tuple(vec![
            vm.ctx.new_str(path).into(),
            vm.ctx.new_list(rows).into(),
            vm.ctx.new_str(plain).into(),
            vm.ctx.new_str(html).into(),
        ])
        .into())
}

fn not_reached(vm: &VirtualMachine, target: &PyObjectRef) -> PyBaseExceptionRef {
    let what = match target.downcast_ref::<rustpython_vm::builtins::PyStr>() {
        Some(text) => format!("name '{}' is not defined", text.to_string_lossy()),
        None => format!(
            "explain_free() takes a variable or what one holds (x, model.fc.weight, \
             opt.state[p]); this {} is held by no variable (a temporary): assign it to a \
             variable first",
            target.class().name()
        ),
    };
    vm.new_value_error(what)
}

fn way_dict(vm: &VirtualMachine, way: &Way) -> PyResult {
    let row = vm.ctx.new_dict();
    row.set_item("way", vm.ctx.new_str(way.code.as_str()).into(), vm)?;
    row.set_item("allocated", int(vm, way.allocated), vm)?;
    row.set_item("reserved", int(vm, way.reserved), vm)?;
    row.set_item("why", vm.ctx.new_str(way.why.as_str()).into(), vm)?;
    Ok(row.into())
}

fn shown_tuple(vm: &VirtualMachine, value: PyObjectRef, shown: DisplayData) -> PyResult {
    let html = shown.html.unwrap_or_default();
    Ok(vm
        .ctx
        .new_tuple(vec![
            value,
            vm.ctx.new_str(shown.plain).into(),
            vm.ctx.new_str(html).into(),
        ])
        .into())
}

fn device(a: &Args, i: usize) -> PyResult<usize> {
    Ok(match a.opt_int(i)? {
        Some(d) => d as usize,
        None => torchlet_core::device::current_device(),
    })
}

/// The program's variables now: `__main__`'s, and the locals of the program's frames on the
/// stack (torchlet's own `torch` package left out).
pub(crate) fn walk_program(vm: &VirtualMachine) -> PyResult<Walked> {
    walk_from(vm, vm.current_frame().map(Into::into))
}

/// The program's variables: `__main__`'s, and the locals of `innermost` and the program's frames
/// that called it.
pub(crate) fn walk_from(vm: &VirtualMachine, innermost: Option<PyObjectRef>) -> PyResult<Walked> {
    if super::site::in_callback() {
        return Err(vm.new_runtime_error(
            "torchlet's explanations cannot be asked inside a hook or a function backward runs again (backward holds the graph); ask after backward() returns"
                .to_string(),
        ));
    }
    let mut frames = Vec::new();
    let mut frame = innermost;
    while let Some(f) = frame {
        if !super::site::is_torchlets_frame(vm, &f) {
            frames.push(f.clone());
        }
        frame = f.get_attr("f_back", vm).ok().filter(|b| !vm.is_none(b));
    }
    frames.reverse();
    walk(vm, &main_globals(vm)?, &frames)
}

pub(crate) fn main_globals(vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    let modules = vm.sys_module.get_attr("modules", vm)?;
    modules.get_item("__main__", vm)?.get_attr("__dict__", vm)
}

/// The lines torchlet adds after an uncaught out-of-memory error: each failed device's
/// diagnosis and the biggest holders, by the names of the program and of the frames the
/// traceback kept.
pub(crate) fn oom_notes(vm: &VirtualMachine, exc: &PyBaseExceptionRef) -> Vec<String> {
    let mut frames = Vec::new();
    let mut tb = exc.as_object().get_attr("__traceback__", vm).ok();
    while let Some(t) = tb.filter(|t| !vm.is_none(t)) {
        if let Ok(frame) = t.get_attr("tb_frame", vm) {
            if !super::site::is_torchlets_frame(vm, &frame) {
                frames.push(frame);
            }
        }
        tb = t.get_attr("tb_next", vm).ok();
    }
    let mut notes = Vec::new();
    for (device, allocator) in torchlet_core::device::started_cuda_allocators() {
        let Some(diagnosis) = allocator.take_oom_diagnosis() else {
            continue;
        };
        notes.extend(diagnosis.lines("torch.cuda.memory._record_memory_history()"));
        let Ok(walked) = main_globals(vm).and_then(|g| walk(vm, &g, &frames)) else {
            continue;
        };
        let map = HolderMap::of_variables(walked.iter());
        let blocks = holders::block_holders(&map, device);
        notes.push(holders::biggest_line(&blocks, BIGGEST_HOLDERS));
    }
    notes
}
