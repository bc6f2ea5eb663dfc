//! Adagrad as PyTorch 2.11's `_multi_tensor_adagrad` and `_single_tensor_adagrad` compute,
//! allocate and free; its sums are made with the optimizer, as `Adagrad.__init__` makes them.

use super::rmsprop::{gradient_temporaries, single_gradient};
use super::undo::Undo;
use super::{drop_list, groups, use_foreach, AdagradOptions, ParamState};
use crate::device::BinaryOp;
use crate::tensor::{Result, Scalar, Tensor};

/// `Adagrad.__init__`'s state: a step count and `full_like(p, initial_accumulator_value)` for
/// every parameter, in parameter order.
pub(super) fn init_state(
    o: &AdagradOptions,
    params: &[Tensor],
    state: &mut [ParamState],
) -> Result<()> {
    for (s, p) in state.iter_mut().zip(params) {
        let value = Scalar::Float(o.initial_accumulator_value.value);
        let sum = Tensor::full(p.dims(), value, &p.like_opts())?;
        sum.mark_role(torchlet_alloc::Role::OptimizerState);
        s.step = Some(0.0);
        s.sum = Some(sum);
    }
    Ok(())
}

/// One step over `params` (those with a gradient); the new state, or an error with nothing changed.
pub(super) fn step(
    o: &AdagradOptions,
    params: &[Tensor],
    grads: &[Tensor],
    mut state: Vec<ParamState>,
) -> Result<Vec<ParamState>> {
    let sums: Vec<Tensor> = state.iter().filter_map(|s| s.sum.clone()).collect();
    let steps: Vec<f64> = state.iter().map(|s| s.step.unwrap_or(0.0) + 1.0).collect();
    let undo = Undo::of(params.iter().chain(&sums))?;
    undo.guard(|| match use_foreach(o.foreach, params) {
        true => multi_tensor(o, params, grads, &sums, &steps),
        false => single_tensor(o, params, grads, &sums, &steps),
    })?;
    for (s, step) in state.iter_mut().zip(steps) {
        s.step = Some(step);
    }
    Ok(state)
}

/// The step's learning rate after decay: `lr / (1 + (step - 1) * lr_decay)`.
fn decayed_lr(o: &AdagradOptions, step: f64) -> f64 {
    o.lr.value / (1.0 + (step - 1.0) * o.lr_decay.value)
}

/// `_multi_tensor_adagrad`. Its `std` and `numerator` lists (the latter the gradient
/// temporaries themselves when maximizing or with weight decay) live until the next group
/// replaces them, and at return CPython clears `std` first, each list last to first.
fn multi_tensor(
    o: &AdagradOptions,
    params: &[Tensor],
    grads: &[Tensor],
    sums: &[Tensor],
    steps: &[f64],
) -> Result<()> {
    let (mut std, mut numerator): (Option<Vec<Tensor>>, Option<Vec<Tensor>>) = (None, None);
    for group in groups(params) {
        let pick =
            |list: &[Tensor]| -> Vec<Tensor> { group.iter().map(|&i| list[i].clone()).collect() };
        let (ps, gs, ss) = (pick(params), pick(grads), pick(sums));
        let temp = gradient_temporaries(o.maximize, o.weight_decay.value, &ps, &gs)?;
        let device_grads = temp.as_ref().unwrap_or(&gs);
        for (s, g) in ss.iter().zip(device_grads) {
            s.addcmul_same_(g, 1.0)?;
        }
        let roots: Vec<Tensor> = ss.iter().map(|s| s.sqrt()).collect::<Result<_>>()?;
        drop_list(std.replace(roots));
        let roots = std.as_ref().expect("just set");
        for r in roots {
            r.scalar_update_(BinaryOp::Add, o.eps.value)?;
        }
        let minus_clr = group.iter().map(|&i| -decayed_lr(o, steps[i]));
        let scaled = match temp {
            Some(t) => {
                for (g, c) in t.iter().zip(minus_clr) {
                    g.scalar_update_(BinaryOp::Mul, c)?;
                }
                t
            }
            None => gs
                .iter()
                .zip(minus_clr)
                .map(|(g, c)| g.scalar_raw(BinaryOp::Mul, Scalar::Float(c), false))
                .collect::<Result<_>>()?,
        };
        drop_list(numerator.replace(scaled));
        let scaled = numerator.as_ref().expect("just set");
        for (p, (n, r)) in ps.iter().zip(scaled.iter().zip(roots)) {
            p.addcdiv_consuming_(n, r, 1.0)?;
        }
    }
    drop_list(std);
    drop_list(numerator);
    Ok(())
}

/// `_single_tensor_adagrad`: one parameter at a time. The loop's `grad` rebinding frees the last
/// parameter's temporary gradient before this one's is made; `std` is freed when the next one
/// replaces it; at return CPython clears `grad` before `std`.
fn single_tensor(
    o: &AdagradOptions,
    params: &[Tensor],
    grads: &[Tensor],
    sums: &[Tensor],
    steps: &[f64],
) -> Result<()> {
    let (mut grad, mut std): (Option<Tensor>, Option<Tensor>) = (None, None);
    for (i, param) in params.iter().enumerate() {
        single_gradient(
            &mut grad,
            &grads[i],
            param,
            o.maximize,
            o.weight_decay.value,
        )?;
        let g = grad.as_ref().unwrap_or(&grads[i]);
        sums[i].addcmul_same_(g, 1.0)?;
        let root = sums[i].sqrt()?;
        drop(std.replace(root));
        let s = std.as_ref().expect("just set");
        s.scalar_update_(BinaryOp::Add, o.eps.value)?;
        param.addcdiv_consuming_(g, s, -decayed_lr(o, steps[i]))?;
    }
    drop(grad);
    drop(std);
    Ok(())
}
