//! Host kernels for batch norm over the channels of an [N, C, L] view, forward and backward.

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{BatchNorm, BatchNormGrads, Operand};
use torchlet_alloc::types::Result;

impl BatchNorm<'_> {
    /// (N, C, L).
    fn sizes(&self) -> (usize, usize, usize) {
        let s = &self.x.layout.shape;
        (s[0], s[1], s[2])
    }

    /// Every (n, l) of one channel.
    fn positions(&self) -> impl Iterator<Item = (usize, usize)> {
        let (n, _, l) = self.sizes();
        (0..n).flat_map(move |b| (0..l).map(move |i| (b, i)))
    }

    fn affine(&self, c: usize) -> (f64, f64) {
        let w = self.weight.as_ref().map_or(1.0, |w| get(w, &[c]));
        let b = self.bias.as_ref().map_or(0.0, |b| get(b, &[c]));
        (w, b)
    }
}

/// Normalise each channel; in training, from the batch's statistics (saved, and blended into
/// the running ones), else from the running mean and variance in `mean`/`invstd`.
pub fn batch_norm(
    bn: &BatchNorm,
    running: Option<(Operand, Operand, f64)>,
    mean: Operand,
    invstd: Operand,
    y: Operand,
) -> Result<()> {
    let (n, channels, l) = bn.sizes();
    let count = (n * l) as f64;
    (0..channels).into_par_iter().for_each(|c| {
        let (mu, inv) = if bn.training {
            let mu = bn
                .positions()
                .map(|(b, i)| get(&bn.x, &[b, c, i]))
                .sum::<f64>()
                / count;
            let var = bn
                .positions()
                .map(|(b, i)| (get(&bn.x, &[b, c, i]) - mu).powi(2))
                .sum::<f64>()
                / count;
            put(&mean, &[c], mu);
            put(&invstd, &[c], 1.0 / (var + bn.eps).sqrt());
            if let Some((rm, rv, m)) = &running {
                let unbiased = if count > 1.0 {
                    var * count / (count - 1.0)
                } else {
                    var
                };
                put(rm, &[c], (1.0 - m) * get(rm, &[c]) + m * mu);
                put(rv, &[c], (1.0 - m) * get(rv, &[c]) + m * unbiased);
            }
            (mu, 1.0 / (var + bn.eps).sqrt())
        } else {
            (get(&mean, &[c]), 1.0 / (get(&invstd, &[c]) + bn.eps).sqrt())
        };
        let (w, b) = bn.affine(c);
        for (bi, i) in bn.positions() {
            put(
                &y,
                &[bi, c, i],
                (get(&bn.x, &[bi, c, i]) - mu) * inv * w + b,
            );
        }
    });
    Ok(())
}

/// The gradients of `batch_norm` from `grads.dy`, each into its destination when given.
pub fn batch_norm_backward(
    bn: &BatchNorm,
    mean: Operand,
    invstd: Operand,
    g: BatchNormGrads,
) -> Result<()> {
    let (n, channels, l) = bn.sizes();
    let count = (n * l) as f64;
    (0..channels).into_par_iter().for_each(|c| {
        let (mu, inv) = if bn.training {
            (get(&mean, &[c]), get(&invstd, &[c]))
        } else {
            (get(&mean, &[c]), 1.0 / (get(&invstd, &[c]) + bn.eps).sqrt())
        };
        let (w, _) = bn.affine(c);
        let dy = |b, i| get(&g.dy, &[b, c, i]);
        let xhat = |b, i| (get(&bn.x, &[b, c, i]) - mu) * inv;
        let sum_dy: f64 = bn.positions().map(|(b, i)| dy(b, i)).sum();
        let sum_dy_xhat: f64 = bn.positions().map(|(b, i)| dy(b, i) * xhat(b, i)).sum();
        if let Some(dx) = &g.dx {
            for (b, i) in bn.positions() {
                let v = if bn.training {
                    (dy(b, i) - sum_dy / count - xhat(b, i) * sum_dy_xhat / count) * inv * w
                } else {
                    dy(b, i) * inv * w
                };
                put(dx, &[b, c, i], v);
            }
        }
        if let Some(dw) = &g.dweight {
            put(dw, &[c], sum_dy_xhat);
        }
        if let Some(db) = &g.dbias {
            put(db, &[c], sum_dy);
        }
    });
    Ok(())
}
