//! Grad mode and autocast as stacks the `with` blocks push and pop, `backward` and `grad`.
//!
//! Note [mode stacks]: PyTorch's `no_grad`, `enable_grad`, `inference_mode`, `set_grad_enabled`
//! and `autocast` are context managers whose `__exit__` restores what `__enter__` found. Core's
//! guards restore on drop, so `__enter__` pushes a guard here and `__exit__` pops it: the mode is
//! restored also when the body raises, and nesting unwinds in order.

use std::cell::RefCell;

use rustpython_vm::PyResult;
use torchlet_core::autograd::{self as mode, GradModeGuard};
use torchlet_core::tensor::autocast::{self, AutocastGuard, DeviceType};
use torchlet_core::tensor::Tensor;

use super::args::{tensor_of, Args};
use super::creation::dtype_named;
use super::tensor::{wrap, OrRaise};
use super::Native;

thread_local! {
    static GRAD_MODES: RefCell<Vec<GradModeGuard>> = const { RefCell::new(Vec::new()) };
    static AUTOCASTS: RefCell<Vec<AutocastGuard>> = const { RefCell::new(Vec::new()) };
}

/// The autograd functions, by the name the `torch` package calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_grad_enter", |a| {
        let guard = match a.str(0)?.as_str() {
            "no_grad" => mode::no_grad(),
            "enable_grad" => mode::enable_grad(),
            "inference_mode" => mode::inference_mode(),
            "set_enabled" => mode::set_grad_enabled(a.bool(1)?),
            other => return Err(a.vm.new_value_error(format!("no grad mode {other}"))),
        };
        GRAD_MODES.with(|m| m.borrow_mut().push(guard));
        super::none(a.vm)
    }),
    ("_grad_exit", |a| {
        let guard = GRAD_MODES.with(|m| m.borrow_mut().pop());
        drop(guard);
        super::none(a.vm)
    }),
    ("_is_grad_enabled", |a| {
        Ok(a.vm.ctx.new_bool(mode::is_grad_enabled()).into())
    }),
    ("_is_inference_mode_enabled", |a| {
        Ok(a.vm.ctx.new_bool(mode::is_inference_mode()).into())
    }),
    ("_autocast_enter", |a| {
        let device_type = device_type(a, 0)?;
        let dtype = match a.opt_str(1)? {
            Some(name) => dtype_named(a, &name)?,
            None => autocast::autocast_dtype(device_type),
        };
        let guard =
            autocast::autocast(device_type, dtype, a.bool(2)?, a.bool(3)?).or_raise(a.vm)?;
        AUTOCASTS.with(|s| s.borrow_mut().push(guard));
        super::none(a.vm)
    }),
    ("_autocast_exit", |a| {
        let guard = AUTOCASTS.with(|s| s.borrow_mut().pop());
        drop(guard);
        super::none(a.vm)
    }),
    ("_is_autocast_enabled", |a| {
        let on = autocast::is_autocast_enabled(device_type(a, 0)?);
        Ok(a.vm.ctx.new_bool(on).into())
    }),
    ("_autocast_dtype", |a| {
        let dtype = autocast::autocast_dtype(device_type(a, 0)?);
        Ok(a.vm.ctx.new_str(dtype.name()).into())
    }),
    ("_backward", |a| {
        let (root, gradient, retain) = (a.tensor(0)?, a.opt_tensor(1)?, a.bool(2)?);
        let pass = || match &gradient {
            Some(g) => root.backward_with(g, retain),
            None => root.backward(retain),
        };
        super::callbacks::lending_interpreter(a.vm, pass).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_backward_many", |a| {
        let (roots, retain) = (a.tensors(0)?, a.bool(2)?);
        let gradients = optional_tensors(a, 1)?;
        let pass = || torchlet_core::autograd::backward_many(&roots, &gradients, retain);
        super::callbacks::lending_interpreter(a.vm, pass).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_backward_to", |a| {
        let (roots, inputs, retain) = (a.tensors(0)?, a.tensors(2)?, a.bool(3)?);
        let gradients = optional_tensors(a, 1)?;
        let pass = || torchlet_core::autograd::backward_to(&roots, &gradients, &inputs, retain);
        super::callbacks::lending_interpreter(a.vm, pass).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_autograd_grad", |a| {
        let (roots, inputs) = (a.tensors(0)?, a.tensors(2)?);
        let (retain, allow_unused) = (a.bool(3)?, a.bool(4)?);
        let gradients = optional_tensors(a, 1)?;
        let pass =
            || torchlet_core::autograd::grad(&roots, &gradients, &inputs, retain, allow_unused);
        let grads = super::callbacks::lending_interpreter(a.vm, pass).or_raise(a.vm)?;
        let items = grads
            .into_iter()
            .map(|g| match g {
                Some(g) => wrap(a.vm, g),
                None => a.vm.ctx.none(),
            })
            .collect();
        Ok(a.vm.ctx.new_tuple(items).into())
    }),
];

/// Argument `i`: a sequence of tensors or None, one gradient for each root.
fn optional_tensors(a: &Args, i: usize) -> PyResult<Vec<Option<Tensor>>> {
    a.sequence(i)?
        .iter()
        .map(|g| match a.vm.is_none(g) {
            true => Ok(None),
            false => tensor_of(g).map(Some).ok_or_else(|| {
                a.vm.new_type_error("grad_tensors must be Tensors or None, one for each of tensors")
            }),
        })
        .collect()
}

fn device_type(a: &Args, i: usize) -> PyResult<DeviceType> {
    DeviceType::parse(&a.str(i)?).or_raise(a.vm)
}
