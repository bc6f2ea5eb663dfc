//! `torch._C.TensorBase`: the native object that owns a tensor handle, and the classes results take.
//!
//! `torch.Tensor` is a Python subclass of `TensorBase` (as PyTorch's `Tensor` subclasses
//! `torch._C.TensorBase`), so methods keep PyTorch's Python signatures while the payload, and with
//! it the memory, lives exactly as long as the Python object: when CPython would free the object,
//! RustPython drops it and the handle returns its block to the caching allocator.

use std::cell::RefCell;

use rustpython_vm::builtins::{PyBaseExceptionRef, PyTypeRef};
use rustpython_vm::types::PyTypeFlags;
use rustpython_vm::{pyclass, PyObjectRef, PyPayload, PyRef, PyResult, VirtualMachine};
use torchlet_core::tensor::{ErrorKind, Tensor, TensorError};

/// The native payload of every `torch.Tensor`.
#[pyclass(module = "torch._C", name = "TensorBase")]
#[derive(Debug, PyPayload)]
pub struct PyTensor {
    /// The tensor this object owns a handle to; `param.data = t` replaces it (Note [data]).
    pub tensor: RefCell<Tensor>,
}

// Note [data]: PyTorch's `Module._apply` (what `model.cuda()` runs) keeps each `Parameter` object
// and replaces its data (`param.data = fn(param)`), so modules that share a parameter (weight
// tying) still share it after the move, and the old storage is freed at that assignment. The
// handle therefore sits in a cell the assignment can replace.

#[pyclass(flags(BASETYPE))]
impl PyTensor {}

/// The Python classes native code makes objects of, set once by `torch/__init__.py`.
#[derive(Default)]
struct Classes {
    tensor: Option<PyTypeRef>,
    out_of_memory: Option<PyTypeRef>,
}

thread_local! {
    static CLASSES: RefCell<Classes> = RefCell::default();
}

/// `_C._register_classes(Tensor, OutOfMemoryError)`: what results and allocation failures are.
pub(crate) fn register_classes(tensor: PyTypeRef, out_of_memory: PyTypeRef) {
    CLASSES.with(|c| {
        let mut c = c.borrow_mut();
        c.tensor = Some(tensor);
        c.out_of_memory = Some(out_of_memory);
    });
}

/// A new `torch.Tensor` object owning `tensor`.
pub(crate) fn wrap(vm: &VirtualMachine, tensor: Tensor) -> PyObjectRef {
    let class = CLASSES.with(|c| c.borrow().tensor.clone());
    wrap_as(vm, tensor, class)
}

/// A new object of `class` (a subclass of `TensorBase`, such as `nn.Parameter`) owning `tensor`.
pub(crate) fn wrap_as(
    vm: &VirtualMachine,
    tensor: Tensor,
    class: Option<PyTypeRef>,
) -> PyObjectRef {
    let payload = PyTensor {
        tensor: RefCell::new(tensor),
    };
    match class {
        Some(class) => {
            let dict = class
                .slots
                .flags
                .has_feature(PyTypeFlags::HAS_DICT)
                .then(|| vm.ctx.new_dict());
            PyRef::new_ref(payload, class, dict).into()
        }
        None => payload.into_pyobject(vm),
    }
}

/// The Python exception for a tensor error: `torch.OutOfMemoryError`, `RuntimeError`, ….
pub(crate) fn raise(vm: &VirtualMachine, error: TensorError) -> PyBaseExceptionRef {
    let message = error.message().to_string();
    let class = match error.error_kind() {
        ErrorKind::OutOfMemory => CLASSES
            .with(|c| c.borrow().out_of_memory.clone())
            .unwrap_or_else(|| vm.ctx.exceptions.memory_error.to_owned()),
        ErrorKind::Index => vm.ctx.exceptions.index_error.to_owned(),
        ErrorKind::Type => vm.ctx.exceptions.type_error.to_owned(),
        ErrorKind::Value => vm.ctx.exceptions.value_error.to_owned(),
        ErrorKind::NotImplemented => vm.ctx.exceptions.not_implemented_error.to_owned(),
        ErrorKind::Interrupt => vm.ctx.exceptions.keyboard_interrupt.to_owned(),
        ErrorKind::Runtime => vm.ctx.exceptions.runtime_error.to_owned(),
    };
    vm.new_exception_msg(class, message.into())
}

/// Results of core calls, as Python results.
pub(crate) trait OrRaise<T> {
    /// The value, or the Python exception for the error.
    fn or_raise(self, vm: &VirtualMachine) -> PyResult<T>;
}

impl<T> OrRaise<T> for torchlet_core::tensor::Result<T> {
    fn or_raise(self, vm: &VirtualMachine) -> PyResult<T> {
        self.map_err(|e| raise(vm, e))
    }
}
