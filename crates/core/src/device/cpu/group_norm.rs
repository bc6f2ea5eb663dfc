//! Host kernels for group norm over an [N, C, L] view: the statistics of each (sample, group),
//! forward and backward.

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{GroupNorm, GroupNormGrads, Operand};
use torchlet_alloc::types::Result;

impl GroupNorm<'_> {
    /// (N, C, L).
    fn sizes(&self) -> (usize, usize, usize) {
        let s = &self.x.layout.shape;
        (s[0], s[1], s[2])
    }

    /// Every (channel, position) of group `g`.
    fn members(&self, g: usize) -> impl Iterator<Item = (usize, usize)> {
        let (_, c, l) = self.sizes();
        let d = c / self.groups;
        (g * d..(g + 1) * d).flat_map(move |ch| (0..l).map(move |i| (ch, i)))
    }

    fn scale(&self, ch: usize) -> f64 {
        self.weight.as_ref().map_or(1.0, |w| get(w, &[ch]))
    }

    fn count(&self) -> f64 {
        let (_, c, l) = self.sizes();
        (c / self.groups * l) as f64
    }
}

/// Normalise each (sample, group); `mean`/`rstd` [N, G] keep its statistics.
pub fn group_norm(gn: &GroupNorm, y: Operand, mean: Operand, rstd: Operand) -> Result<()> {
    let (n, _, _) = gn.sizes();
    let count = gn.count();
    (0..n * gn.groups).into_par_iter().for_each(|row| {
        let (b, g) = (row / gn.groups, row % gn.groups);
        let x = |ch, i| get(&gn.x, &[b, ch, i]);
        let mu = gn.members(g).map(|(ch, i)| x(ch, i)).sum::<f64>() / count;
        let var = gn
            .members(g)
            .map(|(ch, i)| (x(ch, i) - mu).powi(2))
            .sum::<f64>()
            / count;
        put(&mean, &[b, g], mu);
        put(&rstd, &[b, g], 1.0 / (var + gn.eps).sqrt());
        // PyTorch normalises with the statistics as stored (rounded to half in half precision).
        let (mu, rs) = (get(&mean, &[b, g]), get(&rstd, &[b, g]));
        for (ch, i) in gn.members(g) {
            let shift = gn.bias.as_ref().map_or(0.0, |v| get(v, &[ch]));
            put(&y, &[b, ch, i], (x(ch, i) - mu) * rs * gn.scale(ch) + shift);
        }
    });
    Ok(())
}

/// The gradients of `group_norm` from `grads.dy`, each into its destination when given.
pub fn group_norm_backward(
    gn: &GroupNorm,
    mean: Operand,
    rstd: Operand,
    grads: GroupNormGrads,
) -> Result<()> {
    let (n, c, l) = gn.sizes();
    let count = gn.count();
    let stats = |b: usize, ch: usize| {
        let g = ch / (c / gn.groups);
        (get(&mean, &[b, g]), get(&rstd, &[b, g]))
    };
    if let Some(dx) = &grads.dx {
        (0..n * gn.groups).into_par_iter().for_each(|row| {
            let (b, g) = (row / gn.groups, row % gn.groups);
            let (mu, rs) = (get(&mean, &[b, g]), get(&rstd, &[b, g]));
            let gw = |ch, i| get(&grads.dy, &[b, ch, i]) * gn.scale(ch);
            let xhat = |ch, i| (get(&gn.x, &[b, ch, i]) - mu) * rs;
            let s1: f64 = gn.members(g).map(|(ch, i)| gw(ch, i)).sum();
            let s2: f64 = gn.members(g).map(|(ch, i)| gw(ch, i) * xhat(ch, i)).sum();
            for (ch, i) in gn.members(g) {
                let v = (count * gw(ch, i) - s1 - xhat(ch, i) * s2) * rs / count;
                put(dx, &[b, ch, i], v);
            }
        });
    }
    if grads.dweight.is_none() && grads.dbias.is_none() {
        return Ok(());
    }
    (0..c).into_par_iter().for_each(|ch| {
        let (mut sw, mut sb) = (0.0, 0.0);
        for b in 0..n {
            let (mu, rs) = stats(b, ch);
            for i in 0..l {
                let dy = get(&grads.dy, &[b, ch, i]);
                sw += dy * (get(&gn.x, &[b, ch, i]) - mu) * rs;
                sb += dy;
            }
        }
        if let Some(dw) = &grads.dweight {
            put(dw, &[ch], sw);
        }
        if let Some(db) = &grads.dbias {
            put(db, &[ch], sb);
        }
    });
    Ok(())
}
