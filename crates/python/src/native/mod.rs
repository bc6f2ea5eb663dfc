//! `torch._C`: the native half of torchlet's `torch`, over `torchlet_core`.
//!
//! Map: `args` (reading a call's positional arguments), `tensor` (the `TensorBase` payload, the
//! classes results take, errors as Python exceptions), `values` (Python values from Rust ones:
//! JSON-like data, scalars, shapes), `creation` (factories and `manual_seed`), `ops` (tensor
//! methods and functions, by name from core's op tables where core has one), `attention`
//! (`scaled_dot_product_attention` and the backend switches), `conv` (convolutions, pooling,
//! batch norm), `norm` (group and RMS norm, padding, resizing), `grad_tools` (gradient norms,
//! GradScaler's kernels), `autograd` (grad
//! mode, autocast, backward), `callbacks` (Python callables core calls back during backward),
//! `checkpoint` (activation checkpointing: the function run again by backward), `hooks`
//! (gradient hooks, `autograd.Function`, final callbacks, storage resizing), `optim` (SGD, Adam, AdamW as core runs them), `memory`
//! (the CUDA caching allocator's API and devices), `streams` (CUDA streams and
//! `record_stream`), `serialization` (storages to and from bytes for `torch.save`/`load`), `explain` (what holds
//! memory, by the program's names, for the `torchlet` module and out-of-memory notes), `site` (the program's statement each call allocates for).

pub(crate) mod args;
mod attention;
mod autograd;
mod callbacks;
mod checkpoint;
mod conv;
mod creation;
pub(crate) mod explain;
mod grad_tools;
mod hooks;
mod memory;
mod norm;
mod ops;
mod optim;
mod serialization;
pub(crate) mod site;
mod streams;
pub(crate) mod tensor;
mod values;

use rustpython_vm::builtins::PyModule;
use rustpython_vm::class::PyClassImpl;
use rustpython_vm::function::FuncArgs;
use rustpython_vm::AsObject;
use rustpython_vm::{Py, PyObjectRef, PyRef, PyResult, VirtualMachine};

pub(crate) use args::Args;

/// The name `torch/__init__.py` imports the native module by.
pub const MODULE_NAME: &str = "torch._C";

/// A native function of `torch._C`: its name and body.
pub(crate) type Native = fn(&Args) -> PyResult;

/// Build `torch._C` with every native function and class.
pub(crate) fn module(vm: &VirtualMachine) -> PyResult<PyRef<PyModule>> {
    let module = vm.new_module(MODULE_NAME, vm.ctx.new_dict(), None);
    let class = tensor::PyTensor::make_static_type();
    module.as_object().set_attr("TensorBase", class, vm)?;
    // Made before any optimizer is, as every native class must be.
    module
        .as_object()
        .set_attr("GroupOptimizer", optim::PyOptimizer::make_static_type(), vm)?;
    let tables: [&[(&'static str, Native)]; 15] = [
        creation::FUNCTIONS,
        attention::FUNCTIONS,
        conv::FUNCTIONS,
        norm::FUNCTIONS,
        grad_tools::FUNCTIONS,
        checkpoint::FUNCTIONS,
        hooks::FUNCTIONS,
        ops::FUNCTIONS,
        autograd::FUNCTIONS,
        optim::FUNCTIONS,
        memory::FUNCTIONS,
        streams::FUNCTIONS,
        serialization::FUNCTIONS,
        explain::FUNCTIONS,
        tensor_functions(),
    ];
    for table in tables {
        for &(name, body) in table {
            define(vm, &module, name, body)?;
        }
    }
    Ok(module)
}

/// Put `name` into `module`, calling `body` with the call's arguments.
fn define(
    vm: &VirtualMachine,
    module: &Py<PyModule>,
    name: &'static str,
    body: Native,
) -> PyResult<()> {
    let function = vm.new_function(name, move |args: FuncArgs, vm: &VirtualMachine| {
        site::name_statement(vm);
        let args = Args::new(vm, name, args)?;
        body(&args)
    });
    module.as_object().set_attr(name, function, vm)
}

/// The functions about classes and payloads: `_register_classes(Tensor, OutOfMemoryError)`,
/// `_make_subclass(cls, data, requires_grad)` (`nn.Parameter(t)`), `_set_data(t, new)`.
fn tensor_functions() -> &'static [(&'static str, Native)] {
    &[
        ("_register_classes", |a| {
            tensor::register_classes(class(a, 0)?, class(a, 1)?);
            none(a.vm)
        }),
        ("_make_subclass", |a| {
            let data = a.tensor(1)?.detach().map_err(|e| tensor::raise(a.vm, e))?;
            data.set_requires_grad(a.bool(2)?)
                .map_err(|e| tensor::raise(a.vm, e))?;
            Ok(tensor::wrap_as(a.vm, data, Some(class(a, 0)?)))
        }),
        ("_set_data", |a| {
            let target = a.get(0)?;
            let payload = target
                .downcast_ref::<tensor::PyTensor>()
                .ok_or_else(|| a.vm.new_type_error("data can be set on a tensor only"))?;
            let old = payload.tensor.borrow().clone();
            let new = a.tensor(1)?.detach().map_err(|e| tensor::raise(a.vm, e))?;
            new.set_requires_grad(old.requires_grad())
                .map_err(|e| tensor::raise(a.vm, e))?;
            let replaced = payload.tensor.replace(new);
            drop((old, replaced));
            none(a.vm)
        }),
    ]
}

fn class(a: &Args, i: usize) -> PyResult<rustpython_vm::builtins::PyTypeRef> {
    a.get(i)?
        .clone()
        .downcast::<rustpython_vm::builtins::PyType>()
        .map_err(|_| {
            a.vm.new_type_error(format!("argument {} must be a class", i + 1))
        })
}

/// `None`, the result of a native call made for its effect.
pub(crate) fn none(vm: &VirtualMachine) -> PyResult<PyObjectRef> {
    Ok(vm.ctx.none())
}
