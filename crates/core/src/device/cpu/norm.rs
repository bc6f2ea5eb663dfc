//! Host kernels for layer norm (forward and backward, per row in f64; without a mean, RMS norm)
//! and dropout.

use crate::device::backend::{LayerNormGrads, Operand};
use torchlet_alloc::types::element::{load_f64, store_f64};
use torchlet_alloc::types::Result;

/// Element `i` (in row-major order) of a strided operand, as f64.
fn get(op: &Operand, i: usize) -> f64 {
    // SAFETY: `i` < numel of the view, which lies inside its storage.
    unsafe { load_f64(op.ptr as *const u8, op.dtype, op.layout.index_of(i)) }
}

fn put(op: &Operand, i: usize, v: f64) {
    // SAFETY: as `get`; the tensor layer hands a destination no other view aliases.
    unsafe { store_f64(op.ptr as *mut u8, op.dtype, op.layout.index_of(i), v) }
}

/// `y = (x - mean) * rstd * w + b` per row of `x` [rows, n]; writes `mean` and `rstd` [rows].
pub fn layer_norm(
    x: Operand,
    weight: Option<Operand>,
    bias: Option<Operand>,
    eps: f64,
    y: Operand,
    mean: Option<Operand>,
    rstd: Operand,
) -> Result<()> {
    let n = *x.layout.shape.last().unwrap_or(&1);
    let rows = rstd.layout.numel();
    for r in 0..rows {
        let row = (0..n).map(|j| get(&x, r * n + j));
        let mu = match &mean {
            Some(_) => row.clone().sum::<f64>() / n.max(1) as f64,
            None => 0.0,
        };
        let var = row.map(|v| (v - mu) * (v - mu)).sum::<f64>() / n.max(1) as f64;
        let rs = 1.0 / (var + eps).sqrt();
        if let Some(mean) = &mean {
            put(mean, r, mu);
        }
        put(&rstd, r, rs);
        for j in 0..n {
            let mut v = (get(&x, r * n + j) - mu) * rs;
            if let Some(w) = &weight {
                v *= get(w, j);
            }
            if let Some(b) = &bias {
                v += get(b, j);
            }
            put(&y, r * n + j, v);
        }
    }
    Ok(())
}

/// Layer norm's backward per row; `grads.dweight`/`dbias` [parts, n] hold the sums over
/// consecutive blocks of `rows / parts` rows (one block: the whole gradient).
pub fn layer_norm_backward(
    dy: Operand,
    x: Operand,
    mean: Option<Operand>,
    rstd: Operand,
    weight: Option<Operand>,
    grads: LayerNormGrads,
) -> Result<()> {
    let n = *x.layout.shape.last().unwrap_or(&1);
    let rows = rstd.layout.numel();
    let centred = mean.is_some();
    let parts = grads.parts.max(1);
    let per_part = rows.div_ceil(parts).max(1);
    let mut dw = vec![0f64; parts * n];
    let mut db = vec![0f64; parts * n];
    for r in 0..rows {
        let (mu, rs) = (mean.as_ref().map_or(0.0, |m| get(m, r)), get(&rstd, r));
        let w = |j: usize| weight.as_ref().map_or(1.0, |w| get(w, j));
        let (mut s1, mut s2) = (0f64, 0f64);
        for j in 0..n {
            let (g, xh) = (get(&dy, r * n + j), (get(&x, r * n + j) - mu) * rs);
            s1 += g * w(j);
            s2 += g * w(j) * xh;
            let p = (r / per_part) * n + j;
            dw[p] += g * xh;
            db[p] += g;
        }
        if let Some(dx) = &grads.dx {
            for j in 0..n {
                let (g, xh) = (get(&dy, r * n + j), (get(&x, r * n + j) - mu) * rs);
                let s1 = if centred { s1 } else { 0.0 };
                let v = (n as f64 * g * w(j) - s1 - xh * s2) * rs / n as f64;
                put(dx, r * n + j, v);
            }
        }
    }
    for (dst, sums) in [(&grads.dweight, &dw), (&grads.dbias, &db)] {
        if let Some(d) = dst {
            for (i, v) in sums.iter().enumerate().take(d.layout.numel()) {
                put(d, i, *v);
            }
        }
    }
    Ok(())
}

/// Whether dropout keeps element `i`: a hash of the seed and the index against `1 - p`, the
/// same function as the CUDA kernel's, so every device drops the same elements.
pub fn dropout_keep(seed: u64, i: u64, p: f64) -> bool {
    let mut z = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 40) as f64 / (1u64 << 24) as f64) >= p
}

/// `mask = keep(i)`, `out = src * mask / (1 - p)`; `mask` and `out` contiguous.
pub fn dropout(src: Operand, p: f64, seed: u64, mask: Operand, out: Operand) -> Result<()> {
    let scale = 1.0 / (1.0 - p);
    for i in 0..src.layout.numel() {
        let keep = dropout_keep(seed, i as u64, p);
        put(&mask, i, keep as u8 as f64);
        put(&out, i, if keep { get(&src, i) * scale } else { 0.0 });
    }
    Ok(())
}

/// `out = grad * mask * scale` (dropout's backward).
pub fn dropout_backward(grad: Operand, mask: Operand, scale: f64, out: Operand) -> Result<()> {
    for i in 0..out.layout.numel() {
        put(&out, i, get(&grad, i) * get(&mask, i) * scale);
    }
    Ok(())
}

/// `dst = bias + lhs @ rhs` (`bias` broadcast to `dst`).
pub fn addmm(bias: Operand, lhs: Operand, rhs: Operand, dst: Operand) -> Result<()> {
    super::matmul::matmul(lhs, rhs, dst)?;
    for i in 0..dst.layout.numel() {
        put(&dst, i, get(&dst, i) + get(&bias, i));
    }
    Ok(())
}
