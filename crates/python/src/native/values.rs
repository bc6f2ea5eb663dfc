//! Python values from Rust ones: JSON-shaped data (statistics, snapshots), scalars and shapes.

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use serde_json::Value;
use torchlet_core::tensor::Scalar;

/// A Python object with the same shape as a JSON value: dicts keep their keys' order.
pub(crate) fn from_json(vm: &VirtualMachine, value: &Value) -> PyResult<PyObjectRef> {
    Ok(match value {
        Value::Null => vm.ctx.none(),
        Value::Bool(b) => vm.ctx.new_bool(*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => vm.ctx.new_int(i).into(),
            (None, Some(u)) => vm.ctx.new_int(u).into(),
            _ => vm.ctx.new_float(n.as_f64().unwrap_or(f64::NAN)).into(),
        },
        Value::String(s) => vm.ctx.new_str(s.as_str()).into(),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|v| from_json(vm, v))
                .collect::<PyResult<Vec<_>>>()?;
            vm.ctx.new_list(items).into()
        }
        Value::Object(map) => {
            let dict = vm.ctx.new_dict();
            for (k, v) in map {
                dict.set_item(k.as_str(), from_json(vm, v)?, vm)?;
            }
            dict.into()
        }
    })
}

/// A Python `bool`, `int` or `float`.
pub(crate) fn from_scalar(vm: &VirtualMachine, s: Scalar) -> PyObjectRef {
    match s {
        Scalar::Bool(b) => vm.ctx.new_bool(b).into(),
        Scalar::Int(i) => vm.ctx.new_int(i).into(),
        Scalar::Float(f) => vm.ctx.new_float(f).into(),
    }
}

/// A tuple of ints (a shape or a stride).
pub(crate) fn int_tuple(vm: &VirtualMachine, items: &[usize]) -> PyObjectRef {
    let items = items.iter().map(|&d| vm.ctx.new_int(d).into()).collect();
    vm.ctx.new_tuple(items).into()
}

/// A Python int from a byte count.
pub(crate) fn int(vm: &VirtualMachine, n: impl Into<i128>) -> PyObjectRef {
    let n: i128 = n.into();
    vm.ctx.new_int(n).into()
}
