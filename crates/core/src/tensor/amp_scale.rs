//! The two in-place kernels behind `GradScaler`: unscaling the gradients while looking for
//! infinities, and updating the scale. Neither takes memory; the values are read on the host.

use super::{Result, Scalar, Tensor};

/// `torch._amp_foreach_non_finite_check_and_unscale_`: each gradient multiplied in place by the
/// 0-dim `inv_scale`; `found_inf` becomes 1 when any gradient holds an inf or NaN.
pub fn unscale_and_check(grads: &[Tensor], found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    for g in grads {
        if g.has_values() && g.to_vec_f64()?.iter().any(|v| !v.is_finite()) {
            found_inf.fill_(Scalar::Float(1.0))?;
        }
        g.mul_(inv_scale)?;
    }
    Ok(())
}

/// How the scale moves: PyTorch's `amp_update_scale_` arguments after the tensors.
#[derive(Clone, Copy, Debug)]
pub struct ScaleUpdate {
    /// The scale's factor after `interval` steps without infinities.
    pub growth: f64,
    /// The scale's factor after a step with infinities.
    pub backoff: f64,
    /// How many clean steps in a row make the scale grow.
    pub interval: i64,
}

/// `torch._amp_update_scale_`: back off (and restart the count) after infinities, else count
/// the clean step and grow the scale every `interval` of them (unless it would overflow).
pub fn update_scale(
    scale: &Tensor,
    growth_tracker: &Tensor,
    found_inf: &Tensor,
    how: ScaleUpdate,
) -> Result<()> {
    if !scale.has_values() {
        return Ok(());
    }
    let current = scale.item()?.to_f64();
    if found_inf.item()?.to_f64() != 0.0 {
        scale.fill_(Scalar::Float(current * how.backoff))?;
        growth_tracker.fill_(Scalar::Int(0))?;
        return Ok(());
    }
    let clean = growth_tracker.item()?.to_f64() as i64 + 1;
    if clean == how.interval {
        let grown = current * how.growth;
        if (grown as f32).is_finite() {
            scale.fill_(Scalar::Float(grown))?;
        }
        growth_tracker.fill_(Scalar::Int(0))?;
    } else {
        growth_tracker.fill_(Scalar::Int(clean))?;
    }
    Ok(())
}
