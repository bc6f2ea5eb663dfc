//! Python's variables as the explanations see them: each name a [`Value`], walked into modules'
//! parameters, buffers and submodules, lists, tuples, dicts, objects' attributes, optimizers'
//! state and closures, with every object's path spelled as Python spells it.

use std::collections::{HashMap, HashSet};

use rustpython_vm::builtins::{PyDict, PyList, PyTuple};
use rustpython_vm::{AsObject, PyObjectRef, PyResult, VirtualMachine};
use torchlet_explain::value::{member_path, Named, Value};

use crate::native::tensor::PyTensor;

/// How deep a walk goes into nested containers (a linked structure ends the walk there).
const MAX_DEPTH: usize = 24;

/// Every variable walked, and the path of every object met (the first path that reached it).
#[derive(Default)]
pub struct Walked {
    /// The variables, in the order they were met.
    pub named: Vec<Named>,
    /// `id(obj)` of every tensor and container met, with its path.
    pub paths: HashMap<usize, String>,
}

impl Walked {
    /// The variables, as the explanations take them.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> + Clone {
        self.named.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// Every tensor the variables reach, with its path, in the order a reader meets them.
    pub fn tensor_paths(&self) -> Vec<(String, torchlet_core::tensor::Tensor)> {
        torchlet_explain::value::tensor_paths(self.iter())
    }

    /// The path and value of the object `obj`, when a variable reaches it.
    pub fn find(&self, obj: &PyObjectRef) -> Option<(String, Value)> {
        let path = self.paths.get(&obj.get_id())?.clone();
        let value = torchlet_explain::value::resolve(self.iter(), &path)
            .or_else(|| crate::native::args::tensor_of(obj).map(Value::Tensor))?;
        Some((path, value))
    }

    /// What `text` names: a path into a variable (`model.fc.weight`, `cache['k']`), else a
    /// subscript or attribute expression without calls (`opt.state[model.fc.weight]`), looked up
    /// in `__main__` and found by identity.
    pub fn lookup(&self, vm: &VirtualMachine, text: &str) -> Option<(String, Value)> {
        if let Some(found) = self.by_path(text) {
            return Some(found);
        }
        if text.contains('(') {
            return None;
        }
        let globals = crate::native::explain::main_globals(vm).ok()?;
        let globals = globals.downcast::<PyDict>().ok()?;
        let scope = rustpython_vm::scope::Scope::with_builtins(None, globals, vm);
        let code = vm
            .compile(text, rustpython_vm::compiler::Mode::Eval, "<path>".into())
            .ok()?;
        let found = vm.run_code_obj(code, scope).ok()?;
        self.find(&found)
    }

    fn by_path(&self, text: &str) -> Option<(String, Value)> {
        let path = torchlet_explain::value::canonical_path(text)?;
        let value = torchlet_explain::value::resolve(self.iter(), &path)?;
        let spelled = self
            .paths
            .values()
            .find(|p| torchlet_explain::value::canonical_path(p).as_deref() == Some(&path))
            .cloned();
        Some((spelled.unwrap_or(path), value))
    }
}

/// Walks Python objects into [`Value`]s.
pub(crate) struct Walker<'vm> {
    vm: &'vm VirtualMachine,
    module_class: Option<PyObjectRef>,
    optimizer_class: Option<PyObjectRef>,
    entered: HashSet<usize>,
    out: Walked,
}

impl<'vm> Walker<'vm> {
    /// A walker that knows `torch.nn.Module` and `torch.optim.Optimizer` when `torch` is imported.
    pub(crate) fn new(vm: &'vm VirtualMachine) -> Walker<'vm> {
        let class = |module: &'static str, name: &'static str| -> Option<PyObjectRef> {
            let modules = vm.sys_module.get_attr("modules", vm).ok()?;
            let module = modules.get_item(module, vm).ok()?;
            module.get_attr(name, vm).ok()
        };
        Walker {
            vm,
            module_class: class("torch.nn", "Module"),
            optimizer_class: class("torch.optim", "Optimizer"),
            entered: HashSet::new(),
            out: Walked::default(),
        }
    }

    /// Walk the names of `namespace` (a dict: globals, a frame's locals), each named by
    /// `spell(name)`; dunder names, modules, classes and plain functions are left out.
    pub(crate) fn namespace(
        &mut self,
        namespace: &PyObjectRef,
        spell: impl Fn(&str) -> String,
    ) -> PyResult<()> {
        let Some(dict) = namespace.downcast_ref::<PyDict>() else {
            return Ok(());
        };
        for (key, value) in dict.items_vec() {
            let Some(name) = key.downcast_ref::<rustpython_vm::builtins::PyStr>() else {
                continue;
            };
            let name = name.to_string_lossy();
            if name.starts_with("__") || self.is_code_or_module(&value) {
                continue;
            }
            let path = spell(&name);
            let walked = self.value(&path, &value, 0);
            self.out.named.push((path, walked));
        }
        Ok(())
    }

    /// What was walked.
    pub(crate) fn finish(self) -> Walked {
        self.out
    }

    pub(crate) fn is_code_or_module(&self, obj: &PyObjectRef) -> bool {
        let types = &self.vm.ctx.types;
        let class = obj.class();
        [
            types.module_type,
            types.type_type,
            types.builtin_function_or_method_type,
        ]
        .iter()
        .any(|t| class.fast_issubclass(*t))
            || (class.fast_issubclass(types.function_type) && self.closure(obj).is_empty())
    }

    fn value(&mut self, path: &str, obj: &PyObjectRef, depth: usize) -> Value {
        let id = obj.get_id();
        if let Some(t) = obj.downcast_ref::<PyTensor>() {
            self.out.paths.entry(id).or_insert_with(|| path.to_string());
            return Value::Tensor(t.tensor.borrow().clone());
        }
        if depth > MAX_DEPTH || self.is_scalar(obj) || !self.entered.insert(id) {
            return Value::Other;
        }
        self.out.paths.insert(id, path.to_string());
        let depth = depth + 1;
        if let Some(list) = obj.downcast_ref::<PyList>() {
            let items: Vec<PyObjectRef> = list.borrow_vec().to_vec();
            return self.items(path, &items, depth);
        }
        if let Some(tuple) = obj.downcast_ref::<PyTuple>() {
            return self.items(path, tuple.as_slice(), depth);
        }
        if let Some(dict) = obj.downcast_ref::<PyDict>() {
            return self.dict(path, dict.items_vec(), depth);
        }
        if self.is_instance(obj, &self.module_class) {
            return self.module(path, obj, depth);
        }
        if self.is_instance(obj, &self.optimizer_class) {
            return self.optimizer(path, obj, depth);
        }
        if obj.class().fast_issubclass(self.vm.ctx.types.function_type) {
            let cells = self.closure(obj);
            let captured = cells
                .iter()
                .enumerate()
                .map(|(i, c)| self.value(&format!("{path}.__closure__[{i}]"), c, depth))
                .collect();
            return Value::Function(captured);
        }
        match obj.dict() {
            Some(attributes) if !self.is_code_or_module(obj) => {
                let members = self.members(path, attributes.items_vec(), depth, |_| true);
                Value::Map(members)
            }
            _ => Value::Other,
        }
    }

    fn is_scalar(&self, obj: &PyObjectRef) -> bool {
        let types = &self.vm.ctx.types;
        let class = obj.class();
        [
            types.int_type,
            types.float_type,
            types.str_type,
            types.bytes_type,
            types.bool_type,
            types.none_type,
        ]
        .iter()
        .any(|t| class.is(*t))
    }

    fn is_instance(&self, obj: &PyObjectRef, class: &Option<PyObjectRef>) -> bool {
        class
            .as_ref()
            .is_some_and(|c| obj.is_instance(c, self.vm).unwrap_or(false))
    }

    fn items(&mut self, path: &str, items: &[PyObjectRef], depth: usize) -> Value {
        let walked = items
            .iter()
            .enumerate()
            .map(|(i, item)| self.value(&format!("{path}[{i}]"), item, depth))
            .collect();
        Value::List(walked)
    }

    /// A dict: each entry is `path[repr(key)]`; a tensor key is spelled by the path that
    /// reaches it (`opt.state[model.fc.weight]`).
    fn dict(
        &mut self,
        path: &str,
        entries: Vec<(PyObjectRef, PyObjectRef)>,
        depth: usize,
    ) -> Value {
        let mut walked = Vec::new();
        for (key, item) in entries {
            let index = self.key_text(&key);
            let value = self.value(&format!("{path}[{index}]"), &item, depth);
            walked.push((index, value));
        }
        Value::Indexed(walked)
    }

    fn key_text(&self, key: &PyObjectRef) -> String {
        if let Some(known) = self.out.paths.get(&key.get_id()) {
            return known.clone();
        }
        key.repr(self.vm)
            .map(|r| r.to_string_lossy().to_string())
            .unwrap_or_else(|_| "?".into())
    }

    /// Attributes, each `path.name`, those `keep` accepts.
    fn members(
        &mut self,
        path: &str,
        entries: Vec<(PyObjectRef, PyObjectRef)>,
        depth: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<(String, Value)> {
        let mut walked = Vec::new();
        for (key, item) in entries {
            let Some(name) = key.downcast_ref::<rustpython_vm::builtins::PyStr>() else {
                continue;
            };
            let name = name.to_string_lossy().to_string();
            if name.starts_with("__") || !keep(&name) || self.is_code_or_module(&item) {
                continue;
            }
            let value = self.value(&member_path(path, &name), &item, depth);
            walked.push((name, value));
        }
        walked
    }

    /// An `nn.Module`: its parameters, buffers and submodules by name, then its other
    /// attributes (a cache kept on `self`); a module of numbered children alone (`Sequential`,
    /// `ModuleList`) is a list, `model[0]`.
    fn module(&mut self, path: &str, obj: &PyObjectRef, depth: usize) -> Value {
        let table = |name: &'static str| -> Vec<(PyObjectRef, PyObjectRef)> {
            obj.get_attr(name, self.vm)
                .ok()
                .and_then(|d| d.downcast_ref::<PyDict>().map(|d| d.items_vec()))
                .unwrap_or_default()
        };
        let params = table("_parameters");
        let buffers = table("_buffers");
        let children = table("_modules");
        let numbered = children.iter().enumerate().all(|(i, (k, _))| {
            k.str(self.vm)
                .is_ok_and(|s| s.to_string_lossy() == i.to_string())
        });
        if numbered && !children.is_empty() && params.is_empty() && buffers.is_empty() {
            let items: Vec<PyObjectRef> = children.into_iter().map(|(_, m)| m).collect();
            return self.items(path, &items, depth);
        }
        let mut members = Vec::new();
        for entries in [params, buffers, children] {
            let present = entries.into_iter().filter(|(_, v)| !self.vm.is_none(v));
            members.extend(self.members(path, present.collect(), depth, |_| true));
        }
        if let Some(attributes) = obj.dict() {
            let own = |name: &str| !name.starts_with('_') && name != "training";
            members.extend(self.members(path, attributes.items_vec(), depth, own));
        }
        Value::Map(members)
    }

    /// An optimizer: `param_groups` first (so each parameter has a path), then `state`, keyed
    /// by those paths.
    fn optimizer(&mut self, path: &str, obj: &PyObjectRef, depth: usize) -> Value {
        let mut members = Vec::new();
        for name in ["param_groups", "state"] {
            if let Ok(item) = obj.get_attr(name, self.vm) {
                let value = self.value(&member_path(path, name), &item, depth);
                members.push((name.to_string(), value));
            }
        }
        Value::Map(members)
    }

    fn closure(&self, function: &PyObjectRef) -> Vec<PyObjectRef> {
        let Ok(cells) = function.get_attr("__closure__", self.vm) else {
            return Vec::new();
        };
        let Some(cells) = cells.downcast_ref::<PyTuple>() else {
            return Vec::new();
        };
        cells
            .iter()
            .filter_map(|cell| cell.get_attr("cell_contents", self.vm).ok())
            .collect()
    }
}

/// The variables of `__main__` (`globals`), and of each frame in `frames` (innermost last):
/// the innermost frame's locals by their names, an outer function's as
/// `qualname.<locals>.name`, as Python spells what a function defines.
pub(crate) fn walk(
    vm: &VirtualMachine,
    globals: &PyObjectRef,
    frames: &[PyObjectRef],
) -> PyResult<Walked> {
    let mut walker = Walker::new(vm);
    let function_frames: Vec<(String, PyObjectRef)> = frames
        .iter()
        .filter_map(|frame| {
            let locals = frame.get_attr("f_locals", vm).ok()?;
            let frame_globals = frame.get_attr("f_globals", vm).ok()?;
            if locals.is(&frame_globals) {
                return None;
            }
            let code = frame.get_attr("f_code", vm).ok()?;
            let name = code
                .get_attr("co_qualname", vm)
                .or_else(|_| code.get_attr("co_name", vm))
                .ok()?
                .str(vm)
                .ok()?
                .to_string_lossy()
                .to_string();
            Some((name, locals))
        })
        .collect();
    if let Some(((_, innermost), outer)) = function_frames.split_last() {
        walker.namespace(innermost, |n| n.to_string())?;
        for (qualname, locals) in outer.iter().rev() {
            walker.namespace(locals, |n| format!("{qualname}.<locals>.{n}"))?;
        }
        let shadowed: HashSet<String> = walker.out.named.iter().map(|(n, _)| n.clone()).collect();
        walker.namespace(globals, |n| match shadowed.contains(n) {
            true => format!("globals()['{n}']"),
            false => n.to_string(),
        })?;
    } else {
        walker.namespace(globals, |n| n.to_string())?;
    }
    // Note [frame locals]: `f_locals` of a function's frame is a dict the frame keeps, filled
    // from its fast locals; left filled it would hold each local past its `del` or rebinding
    // (a tensor PyTorch frees would stay), so it is emptied once read.
    for (_, locals) in &function_frames {
        if let Some(dict) = locals.downcast_ref::<PyDict>() {
            dict.clear();
        }
    }
    Ok(walker.finish())
}
