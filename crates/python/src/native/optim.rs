//! `torch.optim`'s native half: one core optimizer per parameter group, stepped as PyTorch's
//! foreach functions step a group (CUDA's default), with each group's options read at every step.

use std::sync::Mutex;

use rustpython_vm::builtins::{PyDict, PyTuple};
use rustpython_vm::AsObject;
use rustpython_vm::{pyclass, PyObjectRef, PyPayload, PyResult, VirtualMachine};
use torchlet_core::optim::options::{keywords, OptionRow, OptionType};
use torchlet_core::optim::{Algorithm, Number, Optimizer, OptimizerKind, OptionValue, OPTIONS};

use super::args::{float_of, int_of, Args};
use super::tensor::{wrap, OrRaise};
use super::Native;

/// One parameter group's optimizer.
#[pyclass(module = "torch._C", name = "GroupOptimizer")]
#[derive(PyPayload)]
pub(crate) struct PyOptimizer {
    inner: Mutex<Optimizer>,
}

impl std::fmt::Debug for PyOptimizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupOptimizer")
    }
}

#[pyclass]
impl PyOptimizer {}

/// The optimizer functions, by the name `torch/optim/__init__.py` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_optimizer_new", |a| {
        let kind = kind_of(a, &a.str(0)?)?;
        let mut algorithm = Algorithm::defaults(kind);
        apply(a.vm, kind, &mut algorithm, a.get(2)?)?;
        let optimizer = Optimizer::new(kind.name(), a.tensors(1)?, algorithm).or_raise(a.vm)?;
        let handle = PyOptimizer {
            inner: Mutex::new(optimizer),
        };
        Ok(handle.into_pyobject(a.vm))
    }),
    ("_optimizer_step", |a| {
        let handle = handle(a)?;
        let mut optimizer = handle.inner.lock().unwrap_or_else(|e| e.into_inner());
        let kind = kind_of(a, optimizer.name())?;
        apply(a.vm, kind, optimizer.algorithm_mut(), a.get(1)?)?;
        optimizer.step().or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_optimizer_zero_grad", |a| {
        let handle = handle(a)?;
        let optimizer = handle.inner.lock().unwrap_or_else(|e| e.into_inner());
        optimizer.zero_grad(a.bool(1)?).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_optimizer_state", |a| {
        let handle = handle(a)?;
        let optimizer = handle.inner.lock().unwrap_or_else(|e| e.into_inner());
        let i = usize::try_from(a.int(1)?).unwrap_or(usize::MAX);
        let dict = a.vm.ctx.new_dict();
        if i < optimizer.params().len() {
            let state = optimizer.state(i);
            if let Some(step) = state.step {
                dict.set_item("step", a.vm.ctx.new_float(step).into(), a.vm)?;
            }
            for (name, t) in state.tensors() {
                dict.set_item(name, wrap(a.vm, t.clone()), a.vm)?;
            }
        }
        Ok(dict.into())
    }),
];

fn handle<'a>(a: &'a Args) -> PyResult<&'a PyOptimizer> {
    a.get(0)?
        .downcast_ref::<PyOptimizer>()
        .map(|h| &**h)
        .ok_or_else(|| a.vm.new_type_error("not a torchlet optimizer"))
}

fn kind_of(a: &Args, name: &str) -> PyResult<OptimizerKind> {
    match name {
        "SGD" => Ok(OptimizerKind::Sgd),
        "Adam" => Ok(OptimizerKind::Adam),
        "AdamW" => Ok(OptimizerKind::AdamW),
        "RMSprop" => Ok(OptimizerKind::RmsProp),
        "Adagrad" => Ok(OptimizerKind::Adagrad),
        other => Err(a
            .vm
            .new_value_error(format!("torchlet has no optimizer {other}"))),
    }
}

/// Set every option of the group dict `options` that `kind` takes (other keys, such as
/// `params` and `initial_lr`, belong to the Python side).
fn apply(
    vm: &VirtualMachine,
    kind: OptimizerKind,
    algorithm: &mut Algorithm,
    options: &PyObjectRef,
) -> PyResult<()> {
    let dict = options
        .downcast_ref::<PyDict>()
        .ok_or_else(|| vm.new_type_error("optimizer options must be a dict"))?;
    for row in keywords(OPTIONS, kind) {
        let Some(value) = dict.get_item_opt(row.name, vm)? else {
            continue;
        };
        if row.only_default.is_some() {
            if !vm.is_none(&value) && value.clone().try_to_bool(vm)? {
                return Err(vm.new_value_error(format!(
                    "{}={} is not supported by torchlet; leave it out (PyTorch's default) and the \
                     foreach path runs, as on CUDA by default",
                    row.name,
                    value.repr(vm)?
                )));
            }
            continue;
        }
        let value = option_value(vm, row, &value)?;
        if !algorithm.set(row.name, value) {
            return Err(vm.new_type_error(format!("{} has no option {}", kind.name(), row.name)));
        }
    }
    Ok(())
}

/// A Python value for `row`, read as the row's type says.
fn option_value(
    vm: &VirtualMachine,
    row: &OptionRow,
    value: &PyObjectRef,
) -> PyResult<OptionValue> {
    let name = row.name;
    let number = |v: &PyObjectRef| -> PyResult<Number> {
        if let Some(i) = (!v.class().is(vm.ctx.types.bool_type))
            .then(|| int_of(vm, v))
            .flatten()
        {
            return Ok(Number::int(i));
        }
        float_of(vm, v)
            .map(Number::float)
            .ok_or_else(|| vm.new_type_error(format!("{name} must be a number")))
    };
    Ok(match row.ty {
        OptionType::Number => OptionValue::Number(number(value)?),
        OptionType::Flag => OptionValue::Flag(value.clone().try_to_bool(vm)?),
        OptionType::Auto if vm.is_none(value) => OptionValue::Auto(None),
        OptionType::Auto => OptionValue::Auto(Some(value.clone().try_to_bool(vm)?)),
        OptionType::Pair => {
            let items = value
                .downcast_ref::<PyTuple>()
                .map(|t| t.as_slice().to_vec())
                .or_else(|| {
                    value
                        .downcast_ref::<rustpython_vm::builtins::PyList>()
                        .map(|l| l.borrow_vec().to_vec())
                });
            match items.as_deref() {
                Some([x, y]) => OptionValue::Pair((number(x)?, number(y)?)),
                _ => return Err(vm.new_type_error(format!("{name} must be a pair of numbers"))),
            }
        }
    })
}
