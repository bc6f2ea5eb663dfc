//! Adam and AdamW as PyTorch's `_multi_tensor_adam` and `_single_tensor_adam` compute, allocate
//! and free (AdamW is Adam with `decoupled_weight_decay`, as in PyTorch 2.11).

use super::undo::Undo;
use super::{drop_list, groups, use_foreach, AdamOptions, ParamState};
use crate::device::{BinaryOp, UnaryOp};
use crate::tensor::{Result, Tensor};

/// The lists `_multi_tensor_adam` receives, and the step counts it increments.
struct Lists {
    exp_avgs: Vec<Tensor>,
    exp_avg_sqs: Vec<Tensor>,
    max_exp_avg_sqs: Vec<Tensor>,
    steps: Vec<f64>,
}

/// One step over `params` (those with a gradient); the new state, or an error with nothing changed.
pub(super) fn step(
    o: &AdamOptions,
    params: &[Tensor],
    grads: &[Tensor],
    mut state: Vec<ParamState>,
) -> Result<Vec<ParamState>> {
    init_state(o, params, &mut state)?;
    let take = |f: fn(&ParamState) -> &Option<Tensor>| -> Vec<Tensor> {
        state.iter().filter_map(|s| f(s).clone()).collect()
    };
    let mut lists = Lists {
        exp_avgs: take(|s| &s.exp_avg),
        exp_avg_sqs: take(|s| &s.exp_avg_sq),
        max_exp_avg_sqs: take(|s| &s.max_exp_avg_sq),
        steps: state.iter().map(|s| s.step.unwrap_or(0.0)).collect(),
    };
    let saved = || {
        let state_tensors = lists.exp_avgs.iter().chain(&lists.exp_avg_sqs);
        Undo::of(
            params
                .iter()
                .chain(state_tensors)
                .chain(&lists.max_exp_avg_sqs),
        )
    };
    if use_foreach(o.foreach, params) {
        let groups = groups(params);
        // A list of temporaries freed before `_foreach_sqrt` (maximize, L2 weight decay) keeps
        // the updates ahead of that allocation; otherwise its results can be allocated first.
        let l2 = o.weight_decay.value != 0.0 && !o.decoupled_weight_decay;
        let preallocate = groups.len() == 1 && !o.maximize && !l2;
        let undo = if preallocate { Undo::none() } else { saved()? };
        undo.guard(|| {
            let mut sqrt = None;
            for group in &groups {
                multi_tensor(o, params, grads, &mut lists, group, &mut sqrt, preallocate)?;
            }
            drop_list(sqrt);
            Ok(())
        })?;
    } else {
        saved()?.guard(|| single_tensor(o, params, grads, &mut lists))?;
    }
    for (s, step) in state.iter_mut().zip(lists.steps) {
        s.step = Some(step);
    }
    Ok(state)
}

/// `_init_group`: a parameter's state is made at its first step, in parameter order.
fn init_state(o: &AdamOptions, params: &[Tensor], state: &mut [ParamState]) -> Result<()> {
    for (s, p) in state.iter_mut().zip(params) {
        if s.step.is_none() {
            s.step = Some(0.0);
            s.exp_avg = Some(p.zeros_like()?);
            s.exp_avg_sq = Some(p.zeros_like()?);
            if o.amsgrad {
                s.max_exp_avg_sq = Some(p.zeros_like()?);
            }
            let made = [&s.exp_avg, &s.exp_avg_sq, &s.max_exp_avg_sq];
            for t in made.into_iter().flatten() {
                t.mark_role(torchlet_alloc::Role::OptimizerState);
            }
        }
    }
    Ok(())
}

/// PyTorch's bias corrections for a step count: `(step_size, bias_correction2_sqrt)`.
fn corrections(o: &AdamOptions, step: f64) -> (f64, f64) {
    let (beta1, beta2) = (o.betas.0.value, o.betas.1.value);
    let bias_correction1 = 1.0 - beta1.powf(step);
    let bias_correction2 = 1.0 - beta2.powf(step);
    (o.lr.value / bias_correction1, bias_correction2.powf(0.5))
}

/// `_multi_tensor_adam` for one device/dtype group; `sqrt` is its local `exp_avg_sq_sqrt`,
/// which holds a group's list until the next group's replaces it.
fn multi_tensor(
    o: &AdamOptions,
    params: &[Tensor],
    grads: &[Tensor],
    lists: &mut Lists,
    group: &[usize],
    sqrt: &mut Option<Vec<Tensor>>,
    preallocate: bool,
) -> Result<()> {
    let pick =
        |list: &[Tensor]| -> Vec<Tensor> { group.iter().map(|&i| list[i].clone()).collect() };
    let (ps, exp_avgs, exp_avg_sqs) = (
        pick(params),
        pick(&lists.exp_avgs),
        pick(&lists.exp_avg_sqs),
    );
    let maxes = if o.amsgrad {
        pick(&lists.max_exp_avg_sqs)
    } else {
        Vec::new()
    };
    let temp = gradient_temporaries(o, &ps, &pick(grads))?;
    let sources = if o.amsgrad { &maxes } else { &exp_avg_sqs };
    let early: Option<Vec<Tensor>> = match preallocate {
        true => Some(
            sources
                .iter()
                .map(|t| t.empty_like())
                .collect::<Result<_>>()?,
        ),
        false => None,
    };
    let wd = o.weight_decay.value;
    for &i in group {
        lists.steps[i] += 1.0;
    }
    if wd != 0.0 && o.decoupled_weight_decay {
        for p in &ps {
            p.scalar_update_(BinaryOp::Mul, 1.0 - o.lr.value * wd)?;
        }
    }
    {
        let own = pick(grads);
        let device_grads = temp.as_ref().unwrap_or(&own);
        moments(o, &exp_avgs, &exp_avg_sqs, device_grads)?;
    }
    // `del device_grads`: a list of temporaries goes before the square roots are made.
    drop_list(temp);
    if o.amsgrad {
        for (m, v) in maxes.iter().zip(&exp_avg_sqs) {
            m.maximum_(v)?;
        }
    }
    let roots = match early {
        Some(out) => {
            for (s, r) in sources.iter().zip(&out) {
                s.unary_into(UnaryOp::Sqrt, r)?;
            }
            out
        }
        None => sources.iter().map(|t| t.sqrt()).collect::<Result<_>>()?,
    };
    drop_list(sqrt.replace(roots));
    let roots = sqrt.as_ref().expect("just set");
    for ((r, p), (e, &i)) in roots.iter().zip(&ps).zip(exp_avgs.iter().zip(group)) {
        let (step_size, bc2_sqrt) = corrections(o, lists.steps[i]);
        r.scalar_update_(BinaryOp::Div, bc2_sqrt)?;
        r.scalar_update_(BinaryOp::Add, o.eps.value)?;
        p.addcdiv_consuming_(e, r, -step_size)?;
    }
    Ok(())
}

/// The temporaries `_multi_tensor_adam` makes of the gradients: `_foreach_neg` when maximizing,
/// `_foreach_add(grads, params, alpha=weight_decay)` for an L2 weight decay.
fn gradient_temporaries(
    o: &AdamOptions,
    params: &[Tensor],
    grads: &[Tensor],
) -> Result<Option<Vec<Tensor>>> {
    let mut temp: Option<Vec<Tensor>> = None;
    if o.maximize {
        temp = Some(grads.iter().map(|g| g.neg()).collect::<Result<_>>()?);
    }
    let wd = o.weight_decay.value;
    if wd != 0.0 && !o.decoupled_weight_decay {
        match &temp {
            Some(t) => {
                for (g, p) in t.iter().zip(params) {
                    g.add_scaled_(p, wd)?;
                }
            }
            None => {
                let sums = grads.iter().zip(params).map(|(g, p)| g.add_scaled(p, wd));
                temp = Some(sums.collect::<Result<_>>()?);
            }
        }
    }
    Ok(temp)
}

/// `_foreach_lerp_(exp_avgs, grads, 1 - beta1)`, `_foreach_mul_(exp_avg_sqs, beta2)`,
/// `_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)`.
fn moments(
    o: &AdamOptions,
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    grads: &[Tensor],
) -> Result<()> {
    let (beta1, beta2) = (o.betas.0.value, o.betas.1.value);
    for (m, g) in exp_avgs.iter().zip(grads) {
        m.lerp_(g, 1.0 - beta1)?;
    }
    for v in exp_avg_sqs {
        v.scalar_update_(BinaryOp::Mul, beta2)?;
    }
    for (v, g) in exp_avg_sqs.iter().zip(grads) {
        v.addcmul_same_(g, 1.0 - beta2)?;
    }
    Ok(())
}

/// `_single_tensor_adam`: one parameter at a time. Its locals `grad` (a temporary when
/// maximizing or with L2 decay) and `denom` are freed when rebound, after their replacement is
/// made, and at return in the order CPython clears a frame (`grad` first).
fn single_tensor(
    o: &AdamOptions,
    params: &[Tensor],
    grads: &[Tensor],
    lists: &mut Lists,
) -> Result<()> {
    let (mut grad, mut denom): (Option<Tensor>, Option<Tensor>) = (None, None);
    let wd = o.weight_decay.value;
    for (i, param) in params.iter().enumerate() {
        let fresh = if o.maximize {
            Some(grads[i].neg()?)
        } else {
            None
        };
        drop(std::mem::replace(&mut grad, fresh));
        lists.steps[i] += 1.0;
        if wd != 0.0 {
            if o.decoupled_weight_decay {
                param.scalar_update_(BinaryOp::Mul, 1.0 - o.lr.value * wd)?;
            } else {
                let g = grad.as_ref().unwrap_or(&grads[i]).add_scaled(param, wd)?;
                drop(grad.replace(g));
            }
        }
        let g = grad.as_ref().unwrap_or(&grads[i]);
        let (exp_avg, exp_avg_sq) = (&lists.exp_avgs[i], &lists.exp_avg_sqs[i]);
        moments(
            o,
            std::slice::from_ref(exp_avg),
            std::slice::from_ref(exp_avg_sq),
            std::slice::from_ref(g),
        )?;
        let (step_size, bc2_sqrt) = corrections(o, lists.steps[i]);
        let source = if o.amsgrad {
            let m = &lists.max_exp_avg_sqs[i];
            m.maximum_(exp_avg_sq)?;
            m
        } else {
            exp_avg_sq
        };
        // `denom = (source.sqrt() / bias_correction2_sqrt).add_(eps)`.
        let root = source.sqrt()?;
        let d = root.div_scalar(crate::tensor::Scalar::Float(bc2_sqrt))?;
        drop(root);
        d.scalar_update_(BinaryOp::Add, o.eps.value)?;
        drop(denom.replace(d));
        param.addcdiv_consuming_(exp_avg, denom.as_ref().expect("just set"), -step_size)?;
    }
    drop(grad);
    drop(denom);
    Ok(())
}
