//! RMSprop as PyTorch 2.11's `_multi_tensor_rmsprop` and `_single_tensor_rmsprop` compute,
//! allocate and free.

use super::undo::Undo;
use super::{drop_list, groups, use_foreach, ParamState, RmsPropOptions};
use crate::device::{BinaryOp, UnaryOp};
use crate::tensor::{Result, Tensor};

/// The state lists the update reads, parallel to the parameters.
struct Lists {
    square_avgs: Vec<Tensor>,
    momentum_buffers: Vec<Tensor>,
    grad_avgs: Vec<Tensor>,
}

/// One step over `params` (those with a gradient); the new state, or an error with nothing changed.
pub(super) fn step(
    o: &RmsPropOptions,
    params: &[Tensor],
    grads: &[Tensor],
    mut state: Vec<ParamState>,
) -> Result<Vec<ParamState>> {
    init_state(o, params, &mut state)?;
    let take = |f: fn(&ParamState) -> &Option<Tensor>| -> Vec<Tensor> {
        state.iter().filter_map(|s| f(s).clone()).collect()
    };
    let lists = Lists {
        square_avgs: take(|s| &s.square_avg),
        momentum_buffers: take(|s| &s.momentum_buffer),
        grad_avgs: take(|s| &s.grad_avg),
    };
    let state_tensors = lists
        .square_avgs
        .iter()
        .chain(&lists.momentum_buffers)
        .chain(&lists.grad_avgs);
    let undo = Undo::of(params.iter().chain(state_tensors))?;
    undo.guard(|| match use_foreach(o.foreach, params) {
        true => multi_tensor(o, params, grads, &lists),
        false => single_tensor(o, params, grads, &lists),
    })?;
    for s in &mut state {
        s.step = Some(s.step.unwrap_or(0.0) + 1.0);
    }
    Ok(state)
}

/// `_init_group`: a parameter's square average (then momentum buffer, then gradient average,
/// as asked for) is made at its first step, in parameter order.
fn init_state(o: &RmsPropOptions, params: &[Tensor], state: &mut [ParamState]) -> Result<()> {
    for (s, p) in state.iter_mut().zip(params) {
        if s.step.is_some() {
            continue;
        }
        s.step = Some(0.0);
        s.square_avg = Some(p.zeros_like()?);
        if o.momentum.value > 0.0 {
            s.momentum_buffer = Some(p.zeros_like()?);
        }
        if o.centered {
            s.grad_avg = Some(p.zeros_like()?);
        }
        let made = [&s.square_avg, &s.momentum_buffer, &s.grad_avg];
        for t in made.into_iter().flatten() {
            t.mark_role(torchlet_alloc::Role::OptimizerState);
        }
    }
    Ok(())
}

/// `_multi_tensor_rmsprop`. Its locals `grouped_grads` (a list of temporaries when maximizing or
/// with weight decay) and `avg` live until the next group rebinds them, and at return CPython
/// clears them in that order, each list's items last to first.
fn multi_tensor(
    o: &RmsPropOptions,
    params: &[Tensor],
    grads: &[Tensor],
    lists: &Lists,
) -> Result<()> {
    let (mut temp, mut avg): (Option<Vec<Tensor>>, Option<Vec<Tensor>>) = (None, None);
    for group in groups(params) {
        let pick = |list: &[Tensor]| -> Vec<Tensor> {
            match list.is_empty() {
                true => Vec::new(),
                false => group.iter().map(|&i| list[i].clone()).collect(),
            }
        };
        // The loop rebinds `grouped_grads` to the group's own gradients first.
        drop_list(temp.take());
        let ps = pick(params);
        temp = gradient_temporaries(o.maximize, o.weight_decay.value, &ps, &pick(grads))?;
        let own = pick(grads);
        let gs = temp.as_ref().unwrap_or(&own);
        let square_avgs = pick(&lists.square_avgs);
        let alpha = o.alpha.value;
        for v in &square_avgs {
            v.scalar_update_(BinaryOp::Mul, alpha)?;
        }
        for (v, g) in square_avgs.iter().zip(gs) {
            v.addcmul_same_(g, 1.0 - alpha)?;
        }
        let roots = match o.centered {
            true => centered_roots(&square_avgs, &pick(&lists.grad_avgs), gs, alpha)?,
            false => square_avgs
                .iter()
                .map(|v| v.sqrt())
                .collect::<Result<_>>()?,
        };
        drop_list(avg.replace(roots));
        let roots = avg.as_ref().expect("just set");
        for r in roots {
            r.scalar_update_(BinaryOp::Add, o.eps.value)?;
        }
        update(o, &ps, gs, roots, &pick(&lists.momentum_buffers))?;
    }
    drop_list(temp);
    drop_list(avg);
    Ok(())
}

/// `_foreach_lerp_(grad_avgs, grads, 1 - alpha)`, then
/// `avg = _foreach_addcmul(square_avgs, grad_avgs, grad_avgs, value=-1)` and `_foreach_sqrt_(avg)`.
fn centered_roots(
    square_avgs: &[Tensor],
    grad_avgs: &[Tensor],
    grads: &[Tensor],
    alpha: f64,
) -> Result<Vec<Tensor>> {
    for (a, g) in grad_avgs.iter().zip(grads) {
        a.lerp_(g, 1.0 - alpha)?;
    }
    let mut out = Vec::with_capacity(square_avgs.len());
    for (v, a) in square_avgs.iter().zip(grad_avgs) {
        out.push(centered_root(v, a)?);
    }
    Ok(out)
}

/// `square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()`: one new tensor.
fn centered_root(square_avg: &Tensor, grad_avg: &Tensor) -> Result<Tensor> {
    let r = square_avg.empty_like()?;
    r.copy_(square_avg)?;
    r.addcmul_same_(grad_avg, -1.0)?;
    r.unary_into(UnaryOp::Sqrt, &r)?;
    Ok(r)
}

/// `_foreach_neg(grads)` when maximizing, then `_foreach_add(grads, params, alpha=weight_decay)`
/// (in place on the negated list when there is one).
pub(super) fn gradient_temporaries(
    maximize: bool,
    weight_decay: f64,
    params: &[Tensor],
    grads: &[Tensor],
) -> Result<Option<Vec<Tensor>>> {
    let mut temp: Option<Vec<Tensor>> = None;
    if maximize {
        temp = Some(grads.iter().map(|g| g.neg()).collect::<Result<_>>()?);
    }
    if weight_decay != 0.0 {
        match &temp {
            Some(t) => {
                for (g, p) in t.iter().zip(params) {
                    g.add_scaled_(p, weight_decay)?;
                }
            }
            None => {
                let sums = grads.iter().zip(params);
                temp = Some(
                    sums.map(|(g, p)| g.add_scaled(p, weight_decay))
                        .collect::<Result<_>>()?,
                );
            }
        }
    }
    Ok(temp)
}

/// A single-tensor step's local `grad` for one parameter: the last one's temporary freed first
/// (`grad = grads[i]`), then `-grad` when maximizing, then `grad.add(param, alpha=weight_decay)`
/// (the negation freed once the sum is made), as RMSprop's and Adagrad's loops rebind it.
pub(super) fn single_gradient(
    grad: &mut Option<Tensor>,
    own: &Tensor,
    param: &Tensor,
    maximize: bool,
    weight_decay: f64,
) -> Result<()> {
    drop(grad.take());
    if maximize {
        *grad = Some(own.neg()?);
    }
    if weight_decay != 0.0 {
        let g = grad
            .as_ref()
            .unwrap_or(own)
            .add_scaled(param, weight_decay)?;
        drop(grad.replace(g));
    }
    Ok(())
}

/// The parameters' update from `grads / avg`: through the momentum buffers when there is
/// momentum, else directly. `avg` is a temporary and takes the quotient.
fn update(
    o: &RmsPropOptions,
    params: &[Tensor],
    grads: &[Tensor],
    avg: &[Tensor],
    bufs: &[Tensor],
) -> Result<()> {
    let lr = o.lr.value;
    if o.momentum.value > 0.0 {
        for (b, (g, a)) in bufs.iter().zip(grads.iter().zip(avg)) {
            b.scalar_update_(BinaryOp::Mul, o.momentum.value)?;
            b.addcdiv_consuming_(g, a, 1.0)?;
        }
        for (p, b) in params.iter().zip(bufs) {
            p.add_scaled_(b, -lr)?;
        }
    } else {
        for (p, (g, a)) in params.iter().zip(grads.iter().zip(avg)) {
            p.addcdiv_consuming_(g, a, -lr)?;
        }
    }
    Ok(())
}

/// `_single_tensor_rmsprop`: one parameter at a time. `grad = grads[i]` frees the last
/// parameter's temporary gradient before this one's is made; `avg` is freed when the next one
/// replaces it; at return CPython clears `grad` before `avg`.
fn single_tensor(
    o: &RmsPropOptions,
    params: &[Tensor],
    grads: &[Tensor],
    lists: &Lists,
) -> Result<()> {
    let (mut grad, mut avg): (Option<Tensor>, Option<Tensor>) = (None, None);
    for (i, param) in params.iter().enumerate() {
        single_gradient(
            &mut grad,
            &grads[i],
            param,
            o.maximize,
            o.weight_decay.value,
        )?;
        let g = grad.as_ref().unwrap_or(&grads[i]);
        let square_avg = &lists.square_avgs[i];
        square_avg.scalar_update_(BinaryOp::Mul, o.alpha.value)?;
        square_avg.addcmul_same_(g, 1.0 - o.alpha.value)?;
        let root = match o.centered {
            true => {
                let grad_avg = &lists.grad_avgs[i];
                grad_avg.lerp_(g, 1.0 - o.alpha.value)?;
                centered_root(square_avg, grad_avg)?
            }
            false => square_avg.sqrt()?,
        };
        drop(avg.replace(root));
        let a = avg.as_ref().expect("just set");
        a.scalar_update_(BinaryOp::Add, o.eps.value)?;
        let bufs = match o.momentum.value > 0.0 {
            true => std::slice::from_ref(&lists.momentum_buffers[i]),
            false => &[],
        };
        update(
            o,
            std::slice::from_ref(param),
            std::slice::from_ref(g),
            std::slice::from_ref(a),
            bufs,
        )?;
    }
    drop(grad);
    drop(avg);
    Ok(())
}
