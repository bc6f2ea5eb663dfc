//! Host kernels for fused attention (flash and memory-efficient SDPA): forward and backward in f64.

use super::norm::dropout_keep;
use super::strided::{get, put};
use crate::device::backend::{Attention, AttentionGrads, Operand};
use torchlet_alloc::types::Result;

/// One query row's view of the problem: its batch, head, the key head it reads and its index.
#[derive(Clone, Copy)]
struct Row {
    b: usize,
    h: usize,
    hk: usize,
    i: usize,
}

impl Attention<'_> {
    fn dims(&self) -> (usize, usize, usize, usize, usize, usize) {
        let q = &self.q.layout.shape;
        let (k, v) = (&self.k.layout.shape, &self.v.layout.shape);
        (q[0], q[1], q[2], k[2], q[3], v[3])
    }

    /// Every query row, with the key head it reads (grouped-query attention shares one per group).
    fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        let (bs, hs, tq, ..) = self.dims();
        let group = hs / self.k.layout.shape[1];
        (0..bs).flat_map(move |b| {
            (0..hs).flat_map(move |h| {
                (0..tq).map(move |i| Row {
                    b,
                    h,
                    hk: h / group,
                    i,
                })
            })
        })
    }

    /// The scaled, masked score of query row `r` against key `j` (-inf where masked out).
    fn score(&self, r: Row, j: usize) -> f64 {
        let d = self.q.layout.shape[3];
        if self.causal && j > r.i {
            return f64::NEG_INFINITY;
        }
        let dot: f64 = (0..d)
            .map(|c| get(&self.q, &[r.b, r.h, r.i, c]) * get(&self.k, &[r.b, r.hk, j, c]))
            .sum();
        let mut s = dot * self.scale;
        if let Some(m) = &self.mask {
            let v = get(m, &[r.b, r.h, r.i, j]);
            if m.dtype.is_float() {
                s += v;
            } else if v == 0.0 {
                s = f64::NEG_INFINITY;
            }
        }
        s
    }

    /// Dropout's factor for probability `(r, j)`: 0 when dropped, `1 / (1 - p)` when kept.
    fn keep(&self, r: Row, j: usize) -> f64 {
        let Some((p, seed)) = self.dropout else {
            return 1.0;
        };
        let (_, hs, tq, tk, ..) = self.dims();
        let flat = ((r.b * hs + r.h) * tq + r.i) * tk + j;
        if dropout_keep(seed, flat as u64, p) {
            1.0 / (1.0 - p)
        } else {
            0.0
        }
    }

    /// Softmax probabilities of row `r` from its log-sum-exp (0 for a fully masked row).
    fn probs(&self, r: Row, lse: f64) -> Vec<f64> {
        let tk = self.k.layout.shape[2];
        (0..tk)
            .map(|j| match self.score(r, j) {
                s if s == f64::NEG_INFINITY || !lse.is_finite() => 0.0,
                s => (s - lse).exp(),
            })
            .collect()
    }
}

/// `out = softmax(q kᵀ · scale + mask) v` per row, with each row's log-sum-exp in `lse` [B, H, Tq]
/// when given.
pub fn attention(a: &Attention, out: Operand, lse: Option<Operand>) -> Result<()> {
    let (.., tk, _, dv) = a.dims();
    for r in a.rows() {
        let scores: Vec<f64> = (0..tk).map(|j| a.score(r, j)).collect();
        let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
        let l = if max == f64::NEG_INFINITY {
            f64::INFINITY
        } else {
            max + sum.ln()
        };
        if let Some(lse) = &lse {
            put(lse, &[r.b, r.h, r.i], l);
        }
        let p = a.probs(r, l);
        for c in 0..dv {
            let o: f64 = (0..tk)
                .map(|j| p[j] * a.keep(r, j) * get(&a.v, &[r.b, r.hk, j, c]))
                .sum();
            put(&out, &[r.b, r.h, r.i, c], o);
        }
    }
    Ok(())
}

/// The gradients of `attention` from `dout`, the forward's `out` and `lse`; `grads.delta` [B, H, Tq]
/// (float32) receives each row's `dout · out`, as the fused kernels' own buffer does.
pub fn attention_backward(
    a: &Attention,
    out: Operand,
    lse: Operand,
    g: AttentionGrads,
) -> Result<()> {
    let (bs, _, _, tk, d, dv) = a.dims();
    let hk = a.k.layout.shape[1];
    let mut dk = vec![0.0; bs * hk * tk * d];
    let mut dvv = vec![0.0; bs * hk * tk * dv];
    for r in a.rows() {
        let delta: f64 = (0..dv)
            .map(|c| get(&g.dout, &[r.b, r.h, r.i, c]) * get(&out, &[r.b, r.h, r.i, c]))
            .sum();
        put(&g.delta, &[r.b, r.h, r.i], delta);
        let p = a.probs(r, get(&lse, &[r.b, r.h, r.i]));
        let mut dq = vec![0.0; d];
        for (j, &pj) in p.iter().enumerate() {
            if pj == 0.0 {
                continue;
            }
            let keep = a.keep(r, j);
            let base = (r.b * hk + r.hk) * tk + j;
            let mut dp = 0.0;
            for c in 0..dv {
                let go = get(&g.dout, &[r.b, r.h, r.i, c]);
                dvv[base * dv + c] += pj * keep * go;
                dp += go * get(&a.v, &[r.b, r.hk, j, c]);
            }
            let ds = pj * (dp * keep - delta) * a.scale;
            for c in 0..d {
                dq[c] += ds * get(&a.k, &[r.b, r.hk, j, c]);
                dk[base * d + c] += ds * get(&a.q, &[r.b, r.h, r.i, c]);
            }
        }
        for (c, v) in dq.into_iter().enumerate() {
            put(&g.dq, &[r.b, r.h, r.i, c], v);
        }
    }
    write_keys(&g.dk, &dk, d);
    write_keys(&g.dv, &dvv, dv);
    Ok(())
}

/// Store per-key sums laid out [B, Hk, Tk, width] into `dst` of that shape.
fn write_keys(dst: &Operand, sums: &[f64], width: usize) {
    let s = &dst.layout.shape;
    for (n, v) in sums.iter().enumerate() {
        let (row, c) = (n / width, n % width);
        let (j, bh) = (row % s[2], row / s[2]);
        put(dst, &[bh / s[1], bh % s[1], j, c], *v);
    }
}
