//! Reading a native call's positional arguments, each converted with a message that names the call.
//!
//! The `torch` package's Python code keeps PyTorch's signatures (keywords, defaults, overloads) and
//! calls `torch._C` with plain positional values, so a native function only converts.

use rustpython_vm::builtins::{PyFloat, PyInt, PyList, PyStr, PyTuple};
use rustpython_vm::function::FuncArgs;
use rustpython_vm::AsObject;
use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_core::tensor::{Scalar, Tensor};

use super::tensor::PyTensor;

/// One native call's arguments.
pub(crate) struct Args<'vm> {
    /// The interpreter the call runs in.
    pub vm: &'vm VirtualMachine,
    name: &'static str,
    items: Vec<PyObjectRef>,
}

impl<'vm> Args<'vm> {
    /// The arguments of a call of `name`; keywords are refused (the Python layer binds them).
    pub fn new(vm: &'vm VirtualMachine, name: &'static str, args: FuncArgs) -> PyResult<Self> {
        if !args.kwargs.is_empty() {
            return Err(vm.new_type_error(format!("torch._C.{name}() takes no keyword arguments")));
        }
        Ok(Args {
            vm,
            name,
            items: args.args,
        })
    }

    /// How many positional arguments were passed.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Argument `i` as given.
    pub fn get(&self, i: usize) -> PyResult<&PyObjectRef> {
        self.items.get(i).ok_or_else(|| {
            self.vm.new_type_error(format!(
                "torch._C.{}() takes at least {} arguments ({} given)",
                self.name,
                i + 1,
                self.items.len()
            ))
        })
    }

    fn wrong(&self, i: usize, wanted: &str) -> rustpython_vm::builtins::PyBaseExceptionRef {
        let got = self
            .items
            .get(i)
            .map(|o| o.class().name().to_string())
            .unwrap_or_else(|| "nothing".into());
        self.vm.new_type_error(format!(
            "{}(): argument {} must be {wanted}, not {got}",
            self.name,
            i + 1
        ))
    }

    /// Whether argument `i` is missing or `None`.
    pub fn is_none(&self, i: usize) -> bool {
        self.items.get(i).is_none_or(|o| self.vm.is_none(o))
    }

    /// Argument `i` as a tensor (a new handle to the same tensor).
    pub fn tensor(&self, i: usize) -> PyResult<Tensor> {
        tensor_of(self.get(i)?).ok_or_else(|| self.wrong(i, "Tensor"))
    }

    /// Argument `i` as a tensor, or `None`.
    pub fn opt_tensor(&self, i: usize) -> PyResult<Option<Tensor>> {
        if self.is_none(i) {
            return Ok(None);
        }
        self.tensor(i).map(Some)
    }

    /// Argument `i` as an int (a bool counts, as in Python).
    pub fn int(&self, i: usize) -> PyResult<i64> {
        let obj = self.get(i)?;
        int_of(self.vm, obj).ok_or_else(|| self.wrong(i, "int"))
    }

    /// Argument `i` as an int, or `None`.
    pub fn opt_int(&self, i: usize) -> PyResult<Option<i64>> {
        if self.is_none(i) {
            return Ok(None);
        }
        self.int(i).map(Some)
    }

    /// Argument `i` as a float (an int counts).
    pub fn float(&self, i: usize) -> PyResult<f64> {
        let obj = self.get(i)?;
        float_of(self.vm, obj).ok_or_else(|| self.wrong(i, "float"))
    }

    /// Argument `i` as a float, or `None`.
    pub fn opt_float(&self, i: usize) -> PyResult<Option<f64>> {
        if self.is_none(i) {
            return Ok(None);
        }
        self.float(i).map(Some)
    }

    /// Argument `i` as a bool (its truth value).
    pub fn bool(&self, i: usize) -> PyResult<bool> {
        let obj = self.get(i)?.clone();
        obj.try_to_bool(self.vm)
    }

    /// Argument `i` as a string.
    pub fn str(&self, i: usize) -> PyResult<String> {
        let obj = self.get(i)?;
        obj.downcast_ref::<PyStr>()
            .map(|s| s.to_string_lossy().to_string())
            .ok_or_else(|| self.wrong(i, "str"))
    }

    /// Argument `i` as a string, or `None`.
    pub fn opt_str(&self, i: usize) -> PyResult<Option<String>> {
        if self.is_none(i) {
            return Ok(None);
        }
        self.str(i).map(Some)
    }

    /// Argument `i` as a tuple or list of ints.
    pub fn ints(&self, i: usize) -> PyResult<Vec<i64>> {
        let items = self.sequence(i)?;
        items
            .iter()
            .map(|o| int_of(self.vm, o).ok_or_else(|| self.wrong(i, "a sequence of ints")))
            .collect()
    }

    /// Argument `i` as a tuple or list of non-negative ints (a shape).
    pub fn shape(&self, i: usize) -> PyResult<Vec<usize>> {
        self.ints(i)?
            .into_iter()
            .map(|d| {
                usize::try_from(d).map_err(|_| {
                    self.vm.new_runtime_error(format!(
                        "Trying to create tensor with negative dimension {d}: {:?}",
                        self.ints(i).unwrap_or_default()
                    ))
                })
            })
            .collect()
    }

    /// Argument `i` as a tuple or list of tensors.
    pub fn tensors(&self, i: usize) -> PyResult<Vec<Tensor>> {
        let items = self.sequence(i)?;
        items
            .iter()
            .map(|o| tensor_of(o).ok_or_else(|| self.wrong(i, "a sequence of Tensors")))
            .collect()
    }

    /// Argument `i` as a Python number: bool, int or float.
    pub fn scalar(&self, i: usize) -> PyResult<Scalar> {
        scalar_of(self.vm, self.get(i)?).ok_or_else(|| self.wrong(i, "a number"))
    }

    /// The items of argument `i`, a tuple or a list.
    pub fn sequence(&self, i: usize) -> PyResult<Vec<PyObjectRef>> {
        let obj = self.get(i)?;
        if let Some(t) = obj.downcast_ref::<PyTuple>() {
            return Ok(t.as_slice().to_vec());
        }
        if let Some(l) = obj.downcast_ref::<PyList>() {
            return Ok(l.borrow_vec().to_vec());
        }
        Err(self.wrong(i, "a tuple or list"))
    }
}

/// The tensor an object is (a `torch.Tensor`, `nn.Parameter` or any subclass), if it is one.
pub(crate) fn tensor_of(obj: &PyObjectRef) -> Option<Tensor> {
    obj.downcast_ref::<PyTensor>()
        .map(|t| t.tensor.borrow().clone())
}

/// A Python int or bool as an i64.
pub(crate) fn int_of(vm: &VirtualMachine, obj: &PyObjectRef) -> Option<i64> {
    let int = obj.downcast_ref::<PyInt>()?;
    int.try_to_primitive::<i64>(vm).ok()
}

/// A Python float, int or bool as an f64.
pub(crate) fn float_of(vm: &VirtualMachine, obj: &PyObjectRef) -> Option<f64> {
    if let Some(f) = obj.downcast_ref::<PyFloat>() {
        return Some(f.to_f64());
    }
    int_of(vm, obj).map(|i| i as f64)
}

/// A Python bool, int or float as a scalar of that kind.
pub(crate) fn scalar_of(vm: &VirtualMachine, obj: &PyObjectRef) -> Option<Scalar> {
    if obj.class().is(vm.ctx.types.bool_type) {
        return Some(Scalar::Bool(obj.clone().try_to_bool(vm).ok()?));
    }
    if let Some(f) = obj.downcast_ref::<PyFloat>() {
        return Some(Scalar::Float(f.to_f64()));
    }
    int_of(vm, obj).map(Scalar::Int)
}
