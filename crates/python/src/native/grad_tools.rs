//! The gradient tools over core's ops: the norms `clip_grad_norm_` takes (`torch/nn/utils.py`)
//! and `GradScaler`'s unscale and scale update (`torch/amp.py`).

use torchlet_core::tensor::amp_scale::{unscale_and_check, update_scale, ScaleUpdate};
use torchlet_core::tensor::vector_norm::foreach_norm;

use super::tensor::{wrap, OrRaise};
use super::Native;

/// Every gradient tool, by the name `torch` calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    // (tensor, ord)
    ("_vector_norm", |a| {
        Ok(wrap(
            a.vm,
            a.tensor(0)?.vector_norm(a.float(1)?).or_raise(a.vm)?,
        ))
    }),
    // (tensors, ord)
    ("_foreach_norm", |a| {
        let norms = foreach_norm(&a.tensors(0)?, a.float(1)?).or_raise(a.vm)?;
        let items = norms.into_iter().map(|t| wrap(a.vm, t)).collect();
        Ok(a.vm.ctx.new_list(items).into())
    }),
    // (grads, found_inf, inv_scale)
    ("_amp_foreach_non_finite_check_and_unscale_", |a| {
        unscale_and_check(&a.tensors(0)?, &a.tensor(1)?, &a.tensor(2)?).or_raise(a.vm)?;
        Ok(a.vm.ctx.none())
    }),
    // (scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)
    ("_amp_update_scale_", |a| {
        let how = ScaleUpdate {
            growth: a.float(3)?,
            backoff: a.float(4)?,
            interval: a.int(5)?,
        };
        update_scale(&a.tensor(0)?, &a.tensor(1)?, &a.tensor(2)?, how).or_raise(a.vm)?;
        Ok(a.vm.ctx.none())
    }),
];
