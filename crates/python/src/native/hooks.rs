//! Backward hooks from Python: `Tensor.register_hook`, `autograd.Function.apply`'s node, the
//! engine's `queue_callback`, and `untyped_storage().resize_` and the version counter (FSDP2's
//! unsharded parameters).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rustpython_vm::{PyObjectRef, PyResult, VirtualMachine};
use torchlet_core::autograd::hooks::{self, GradHook, PostAccumulateHook};
use torchlet_core::tensor::{Result, Tensor, TensorError};

use super::args::{tensor_of, Args};
use super::callbacks::Registration;
use super::tensor::{wrap, OrRaise};
use super::Native;

thread_local! {
    /// Node names of `autograd.Function` subclasses, made `'static` once each.
    static NAMES: RefCell<HashMap<String, &'static str>> = RefCell::new(HashMap::new());
}

/// The functions, by the name the `torch` package calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_register_hook", |a| {
        let (t, hook) = (a.tensor(0)?, grad_hook(a.get(1)?.clone()));
        let id = t.register_hook(hook).or_raise(a.vm)?;
        Ok(a.vm.ctx.new_int(id).into())
    }),
    ("_remove_hook", |a| {
        a.tensor(0)?.remove_hook(a.int(1)? as u64);
        super::none(a.vm)
    }),
    ("_register_post_accumulate_grad_hook", |a| {
        let (t, hook) = (a.tensor(0)?, post_accumulate_hook(a.get(1)?.clone()));
        let id = t.register_post_accumulate_grad_hook(hook).or_raise(a.vm)?;
        Ok(a.vm.ctx.new_int(id).into())
    }),
    ("_remove_post_accumulate_grad_hook", |a| {
        a.tensor(0)?
            .remove_post_accumulate_grad_hook(a.int(1)? as u64);
        super::none(a.vm)
    }),
    ("_function_apply", function_apply),
    ("_queue_callback", |a| {
        let registration = Registration::new(a.get(0)?.clone());
        let callback = Box::new(move || {
            registration.call("a callback queued with queue_callback", |vm, f| {
                f.call((), vm).map(drop)
            })
        });
        hooks::queue_callback(callback).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_version", |a| {
        Ok(a.vm.ctx.new_int(a.tensor(0)?.storage().version()).into())
    }),
    ("_set_version", |a| {
        a.tensor(0)?.storage().set_version(a.int(1)? as u64);
        super::none(a.vm)
    }),
    ("_resize_storage", |a| {
        let bytes = usize::try_from(a.int(1)?)
            .map_err(|_| a.vm.new_value_error("a storage size cannot be negative"))?;
        a.tensor(0)?.resize_storage(bytes).or_raise(a.vm)?;
        super::none(a.vm)
    }),
];

/// A core gradient hook that calls the Python `hook(grad)`, keeping what it returns if a tensor.
fn grad_hook(hook: PyObjectRef) -> GradHook {
    let registration = Registration::new(hook);
    Arc::new(move |grad: &Tensor| {
        registration.call("a gradient hook, run by backward", |vm, f| {
            let out = f.call((wrap(vm, grad.clone()),), vm)?;
            returned_tensor(vm, &out, "a gradient hook")
        })
    })
}

/// A core post-accumulate hook that calls the Python `hook(param)`.
fn post_accumulate_hook(hook: PyObjectRef) -> PostAccumulateHook {
    let registration = Registration::new(hook);
    Arc::new(move |param: &Tensor| {
        registration.call("a post-accumulate-grad hook, run by backward", |vm, f| {
            f.call((wrap(vm, param.clone()),), vm).map(drop)
        })
    })
}

/// `None` or the tensor `out` is, else a TypeError naming `what` returned it.
fn returned_tensor(vm: &VirtualMachine, out: &PyObjectRef, what: &str) -> PyResult<Option<Tensor>> {
    if vm.is_none(out) {
        return Ok(None);
    }
    tensor_of(out).map(Some).ok_or_else(|| {
        vm.new_type_error(format!(
            "{what} returned {}, where a tensor or None was expected",
            out.class().name()
        ))
    })
}

/// `_function_apply(name, backward, inputs, outputs)`: one node named `name` over the tensor
/// `inputs` makes `outputs` (an output that is an input comes back as a view of it); its backward
/// calls `backward(grads)` with one gradient or None per output and takes one per input back.
fn function_apply(a: &Args) -> PyResult {
    let name = node_name(&a.str(0)?);
    let registration = Registration::new(a.get(1)?.clone());
    let inputs = a.tensors(2)?;
    let objects = a.sequence(3)?;
    let outputs: Vec<Tensor> = objects
        .iter()
        .map(|o| {
            tensor_of(o).ok_or_else(|| {
                a.vm.new_type_error("autograd.Function outputs must be tensors")
            })
        })
        .collect::<PyResult<_>>()?;
    let count = inputs.len();
    let backward = Box::new(
        move |grads: &[Option<Tensor>], _: &[bool]| -> Result<Vec<Option<Tensor>>> {
            registration.call("an autograd.Function's backward", |vm, f| {
            let grads: Vec<PyObjectRef> = grads
                .iter()
                .map(|g| g.clone().map_or_else(|| vm.ctx.none(), |g| wrap(vm, g)))
                .collect();
            let out = f.call((vm.ctx.new_list(grads),), vm)?;
            let items: Vec<PyObjectRef> = out.try_to_value(vm)?;
            items
                .iter()
                .map(|g| returned_tensor(vm, g, "an autograd.Function's backward"))
                .collect::<PyResult<Vec<_>>>()
        })
        .and_then(|grads| {
            if grads.len() == count {
                Ok(grads)
            } else {
                Err(TensorError::runtime(format!(
                    "function backward returned an incorrect number of gradients (expected {count}, got {})",
                    grads.len()
                )))
            }
        })
        },
    );
    let made = hooks::record_custom(name, &inputs, &outputs, backward).or_raise(a.vm)?;
    let results: Vec<PyObjectRef> = made
        .into_iter()
        .zip(objects)
        .zip(&outputs)
        .map(|((t, object), original)| {
            if t.same_tensor(original) {
                object
            } else {
                wrap(a.vm, t)
            }
        })
        .collect();
    Ok(a.vm.ctx.new_list(results).into())
}

/// `name` as the `'static` node name core keeps (one leak per Function class).
fn node_name(name: &str) -> &'static str {
    NAMES.with(|n| {
        *n.borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| Box::leak(name.to_string().into_boxed_str()))
    })
}
