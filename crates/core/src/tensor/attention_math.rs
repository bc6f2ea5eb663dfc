//! The math SDPA backend: PyTorch 2.11's `_scaled_dot_product_attention_math`, a composite of
//! ordinary ops, each recording its own node, in PyTorch's order.
//!
//! Note [SDPA math order]: half inputs are computed in float32 (`allowFP16BF16ReductionMathSDP`
//! is off by default): q, k and v are converted first; q and kᵀ are each scaled by
//! `sqrt(scale)`; a causal mask is `ones(Tq, Tk, bool).tril()` turned into an additive one; the
//! scores go through `_safe_softmax` (softmax, then rows that were all `-inf` set to zero, with a
//! bool `isneginf`, its `all` over the row and a zero scalar as temporaries). GCC builds the
//! returned pair right to left, so the discarded probabilities' cast back to the input dtype is
//! made before the output's product. The function's locals die at its return, newest first.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::ReduceOp;

use super::attention::{bool_mask_to_float, scalar_on, SdpaOptions, Sizes};
use super::{DType, Result, Scalar, Tensor, TensorOptions};

/// `x.to(float32)` for half inputs, else `x` itself.
fn to_f32(x: &Tensor) -> Result<Tensor> {
    match x.dtype() {
        DType::F16 | DType::BF16 => x.to_dtype(DType::F32),
        _ => Ok(x.clone()),
    }
}

/// `key.repeat_interleave(groups, -3)` (expand and clone), or `key` itself for one group.
fn repeat_heads(x: &Tensor, groups: usize) -> Result<Tensor> {
    if groups == 1 {
        return Ok(x.clone());
    }
    let d = x.dims().to_vec();
    let n = d.len();
    let mut expanded = d.clone();
    expanded.insert(n - 2, groups);
    let mut merged = d.clone();
    merged[n - 3] *= groups;
    let merged: Vec<isize> = merged.iter().map(|&v| v as isize).collect();
    x.unsqueeze(n as isize - 2)?
        .expand(&expanded)?
        .contiguous()?
        .reshape(&merged)
}

/// PyTorch's `_safe_softmax(x, -1)`: softmax whose fully masked rows are zeros, not NaNs.
fn safe_softmax(x: &Tensor) -> Result<Tensor> {
    let last = x.dim().saturating_sub(1);
    let out = {
        let _off = crate::autograd::no_grad();
        x.softmax(-1)?
    };
    let neg_inf = x.compare_scalar(
        Scalar::Float(f64::NEG_INFINITY),
        crate::device::BinaryOp::Eq,
        false,
    )?;
    let all_masked = neg_inf.reduce_raw(ReduceOp::Min, &[last], DType::Bool)?;
    let zero = scalar_on(x, 0.0, out.dtype())?;
    if out.numel() > 0 && out.has_values() {
        let shape = out.dims().to_vec();
        let (c, z) = (
            all_masked.layout().broadcast_to(&shape),
            zero.layout().broadcast_to(&shape),
        );
        out.backend().where_select(
            all_masked.operand_with(&c),
            zero.operand_with(&z),
            out.operand(),
            out.operand(),
        )?;
    }
    drop(zero);
    drop(all_masked);
    drop(neg_inf);
    if needs_grad(&[x]) {
        let grad_fn =
            super::reduce::softmax_grad_fn(SavedTensor::new(&out)?, last, false, x.dtype());
        record(&out, "SafeSoftmaxBackward0", &[x], true, grad_fn);
    }
    Ok(out)
}

/// The math backend (Note [SDPA math order]); `o.attn_mask` is already float.
pub(crate) fn sdpa_math(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    o: &SdpaOptions,
    s: Sizes,
) -> Result<Tensor> {
    let origin = q.dtype();
    let (q_acc, k_acc, v_acc) = (to_f32(q)?, to_f32(k)?, to_f32(v)?);
    let scale = o.scale.unwrap_or(1.0 / (s.head_dim as f64).sqrt());
    let factor = scale.abs().sqrt();
    let query = q_acc.mul_scalar(Scalar::Float(if scale < 0.0 { -factor } else { factor }))?;
    let causal = if o.is_causal {
        let (tq, tk) = (q.dims()[q.dim() - 2], k.dims()[k.dim() - 2]);
        let opts = TensorOptions {
            dtype: DType::Bool,
            device: q.device(),
            requires_grad: false,
        };
        let ones = Tensor::ones(&[tq, tk], &opts)?;
        let tril = ones.triangle(0, false)?;
        drop(ones);
        Some(bool_mask_to_float(&tril, query.dtype())?)
    } else {
        None
    };
    let mask = causal.as_ref().or(o.attn_mask.as_ref());
    let groups = if o.enable_gqa {
        s.heads / s.kv_heads.max(1)
    } else {
        1
    };
    let key_expanded = repeat_heads(&k_acc, groups)?;
    let value_expanded = repeat_heads(&v_acc, groups)?;
    let kt = key_expanded
        .transpose(-2, -1)?
        .mul_scalar(Scalar::Float(factor))?;
    let mut attn = query.matmul(&kt)?;
    drop(kt);
    if let Some(m) = mask {
        attn = attn.add_(m)?;
    }
    let mut attn = {
        let scores = attn;
        safe_softmax(&scores)?
    };
    if o.dropout_p > 0.0 {
        attn = attn.dropout(o.dropout_p, true)?;
    }
    let attn_out = attn.to_dtype(origin)?;
    let product = attn.matmul(&value_expanded)?;
    let out = product.to_dtype(origin)?;
    drop(product);
    drop(attn);
    drop(value_expanded);
    drop(key_expanded);
    drop(query);
    drop(causal);
    drop(v_acc);
    drop(k_acc);
    drop(q_acc);
    drop(attn_out);
    Ok(out)
}
