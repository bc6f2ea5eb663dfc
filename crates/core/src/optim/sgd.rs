//! SGD as PyTorch's `_multi_tensor_sgd` and `_single_tensor_sgd` compute, allocate and free.

use super::undo::Undo;
use super::{drop_list, groups, use_foreach, ParamState, SgdOptions};
use crate::device::BinaryOp;
use crate::tensor::{Result, Tensor};

/// One step over `params` (those with a gradient); the new state, or an error with nothing changed.
pub(super) fn step(
    o: &SgdOptions,
    params: &[Tensor],
    grads: &[Tensor],
    mut state: Vec<ParamState>,
) -> Result<Vec<ParamState>> {
    let mut bufs: Vec<Option<Tensor>> = state.iter().map(|s| s.momentum_buffer.clone()).collect();
    if use_foreach(o.foreach, params) {
        // Within a group every allocation comes before every update, so only a second group
        // (another device or dtype) can fail after the first one was stepped.
        let groups = groups(params);
        let undo = match groups.len() {
            1 => Undo::none(),
            _ => Undo::of(params.iter().chain(grads).chain(bufs.iter().flatten()))?,
        };
        undo.guard(|| {
            for group in &groups {
                multi_tensor(o, params, grads, &mut bufs, group)?;
            }
            Ok(())
        })?;
    } else {
        let saved: Vec<&Tensor> = params.iter().chain(bufs.iter().flatten()).collect();
        Undo::of(saved)?.guard(|| single_tensor(o, params, grads, &mut bufs))?;
    }
    if o.momentum.value != 0.0 {
        for (s, b) in state.iter_mut().zip(bufs) {
            s.momentum_buffer = b;
        }
    }
    Ok(state)
}

/// `_multi_tensor_sgd` for one device/dtype group (indices into the lists).
fn multi_tensor(
    o: &SgdOptions,
    params: &[Tensor],
    grads: &[Tensor],
    bufs: &mut [Option<Tensor>],
    group: &[usize],
) -> Result<()> {
    let ps: Vec<&Tensor> = group.iter().map(|&i| &params[i]).collect();
    // `device_grads`: the gradients themselves, or a list of temporaries made from them.
    let mut temp: Option<Vec<Tensor>> = None;
    if o.maximize {
        temp = Some(
            group
                .iter()
                .map(|&i| grads[i].neg())
                .collect::<Result<_>>()?,
        );
    }
    let wd = o.weight_decay.value;
    if wd != 0.0 {
        match temp.as_ref() {
            Some(t) => add_each(t, &ps, wd)?,
            None => {
                let sum = group.iter().map(|&i| grads[i].add_scaled(&params[i], wd));
                temp = Some(sum.collect::<Result<_>>()?);
            }
        }
    }
    let device_grads: Vec<Tensor> = match &temp {
        Some(t) => t.clone(),
        None => group.iter().map(|&i| grads[i].clone()).collect(),
    };
    let mut update = device_grads;
    if o.momentum.value != 0.0 {
        let group_bufs = momentum_buffers(o, bufs, group, &update)?;
        if o.nesterov {
            add_each(
                &update,
                &group_bufs.iter().collect::<Vec<_>>(),
                o.momentum.value,
            )?;
        } else {
            // `device_grads = bufs`: the list of temporaries goes now.
            update = group_bufs;
            drop_list(temp.take());
        }
    }
    for (p, g) in ps.iter().zip(&update) {
        p.add_scaled_(g, -o.lr.value)?;
    }
    drop(update);
    drop_list(temp);
    Ok(())
}

/// `_multi_tensor_sgd`'s momentum buffers of one group, updated or cloned from `grads`.
///
/// PyTorch clones a missing buffer and updates an existing one in one loop; the clones are made
/// first here (updates allocate nothing, so the events are the same) so that an allocation that
/// fails leaves every buffer as it was.
fn momentum_buffers(
    o: &SgdOptions,
    bufs: &mut [Option<Tensor>],
    group: &[usize],
    grads: &[Tensor],
) -> Result<Vec<Tensor>> {
    let mut made: Vec<Option<Tensor>> = Vec::with_capacity(group.len());
    for (k, &i) in group.iter().enumerate() {
        made.push(match &bufs[i] {
            Some(_) => None,
            None => Some(grads[k].contiguous_copy()?),
        });
    }
    let (momentum, keep) = (o.momentum.value, 1.0 - o.dampening.value);
    let mut out = Vec::with_capacity(group.len());
    for ((k, &i), new) in group.iter().enumerate().zip(made) {
        let buf = match new {
            Some(b) => b,
            None => {
                let b = bufs[i].clone().expect("an existing buffer");
                b.scalar_update_(BinaryOp::Mul, momentum)?;
                b.add_scaled_(&grads[k], keep)?;
                b
            }
        };
        buf.mark_role(torchlet_alloc::Role::OptimizerState);
        bufs[i] = Some(buf.clone());
        out.push(buf);
    }
    Ok(out)
}

/// `targets[i] += alpha * sources[i]` for each i (`torch._foreach_add_(targets, sources, alpha)`).
fn add_each(targets: &[Tensor], sources: &[&Tensor], alpha: f64) -> Result<()> {
    for (t, s) in targets.iter().zip(sources) {
        t.add_scaled_(s, alpha)?;
    }
    Ok(())
}

/// `_single_tensor_sgd`: one parameter at a time; `grad` is the Python local that may hold a
/// temporary, freed when it is rebound (after its replacement is made) or when the function returns.
fn single_tensor(
    o: &SgdOptions,
    params: &[Tensor],
    grads: &[Tensor],
    bufs: &mut [Option<Tensor>],
) -> Result<()> {
    let mut grad: Option<Tensor> = None;
    let wd = o.weight_decay.value;
    for (i, param) in params.iter().enumerate() {
        let fresh = if o.maximize {
            Some(grads[i].neg()?)
        } else {
            None
        };
        rebind(&mut grad, fresh);
        if wd != 0.0 {
            let g = current(&grad, &grads[i]).add_scaled(param, wd)?;
            rebind(&mut grad, Some(g));
        }
        let mut direction: Option<Tensor> = None;
        if o.momentum.value != 0.0 {
            let g = current(&grad, &grads[i]);
            let buf = match &bufs[i] {
                None => g.contiguous_copy()?,
                Some(b) => {
                    b.scalar_update_(BinaryOp::Mul, o.momentum.value)?;
                    b.add_scaled_(g, 1.0 - o.dampening.value)?;
                    b.clone()
                }
            };
            buf.mark_role(torchlet_alloc::Role::OptimizerState);
            bufs[i] = Some(buf.clone());
            if o.nesterov {
                let n = current(&grad, &grads[i]).add_scaled(&buf, o.momentum.value)?;
                rebind(&mut grad, Some(n));
            } else {
                // `grad = buf`: the temporary `grad` held goes now.
                rebind(&mut grad, None);
                direction = Some(buf);
            }
        }
        let d = direction
            .as_ref()
            .unwrap_or_else(|| current(&grad, &grads[i]));
        param.add_scaled_(d, -o.lr.value)?;
    }
    drop(grad);
    Ok(())
}

/// The gradient the Python local `grad` names: a temporary, or the parameter's own.
fn current<'a>(temp: &'a Option<Tensor>, own: &'a Tensor) -> &'a Tensor {
    temp.as_ref().unwrap_or(own)
}

/// `grad = value`: the new value exists before the old one is released, as in CPython.
fn rebind(slot: &mut Option<Tensor>, value: Option<Tensor>) {
    let old = std::mem::replace(slot, value);
    drop(old);
}
