//! Parameters as `torch.nn` makes them: `nn.Linear`'s weight and bias with `reset_parameters`'
//! Kaiming-uniform initialisation.

use crate::tensor::{Result, Tensor, TensorOptions};

/// `nn.Linear(in_features, out_features, bias, device, dtype)`'s parameters: the weight
/// `[out, in]` and, when asked for, the bias `[out]`, both leaves that require grad.
///
/// As PyTorch: both are allocated first (`torch.empty`), then filled in place with
/// `kaiming_uniform_(a=sqrt(5))`, which for a linear layer is uniform on `±1/sqrt(in)`, and the
/// bias uniform on the same bound (0 when `in` is 0), so no temporary memory is taken.
pub fn linear_params(
    in_features: usize,
    out_features: usize,
    bias: bool,
    options: &TensorOptions,
) -> Result<(Tensor, Option<Tensor>)> {
    let plain = TensorOptions {
        requires_grad: false,
        ..options.clone()
    };
    let weight = Tensor::empty(&[out_features, in_features], &plain)?;
    let bias = match bias {
        true => Some(Tensor::empty(&[out_features], &plain)?),
        false => None,
    };
    let bound = if in_features > 0 {
        1.0 / (in_features as f64).sqrt()
    } else {
        0.0
    };
    weight.uniform_(-bound, bound)?;
    weight.set_requires_grad(true)?;
    if let Some(b) = &bias {
        b.uniform_(-bound, bound)?;
        b.set_requires_grad(true)?;
    }
    Ok((weight, bias))
}
