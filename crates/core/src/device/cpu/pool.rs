//! Host kernels for 2-D pooling (max with indices, average, adaptive average), forward and
//! backward, one [H, W] plane at a time.

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{Operand, Pool, PoolKind};
use torchlet_alloc::types::Result;

/// The input rows (or columns) one output cell's window covers along one axis, before clipping
/// to the input (`lo` may be negative, `hi` past the end: the padding), with its tap spacing.
#[derive(Clone, Copy)]
struct Span {
    lo: isize,
    hi: isize,
    step: usize,
}

impl Pool<'_> {
    /// The window of output cell `o` along `axis` (0: height, 1: width) of an input `size` long
    /// and an output `outs` long.
    fn span(&self, axis: usize, o: usize, size: usize, outs: usize) -> Span {
        if self.kind == PoolKind::AdaptiveAvg {
            let lo = o * size / outs;
            let hi = ((o + 1) * size).div_ceil(outs);
            return Span {
                lo: lo as isize,
                hi: hi as isize,
                step: 1,
            };
        }
        let lo = (o * self.stride[axis]) as isize - self.padding[axis] as isize;
        let dil = self.dilation[axis];
        let hi = lo + ((self.kernel[axis] - 1) * dil + 1) as isize;
        Span { lo, hi, step: dil }
    }

    /// The divisor of an average window: PyTorch's `pool_size` (the window clipped to the padded
    /// input) when padding counts, else the input cells it covers.
    fn divisor(&self, hs: Span, ws: Span, h: usize, w: usize) -> f64 {
        let clip = |s: Span, n: usize| (s.lo.max(0), s.hi.min(n as isize));
        let ((h0, h1), (w0, w1)) = (clip(hs, h), clip(ws, w));
        match self.kind {
            PoolKind::Avg {
                divisor: Some(d), ..
            } => d as f64,
            PoolKind::Avg {
                count_include_pad: true,
                ..
            } => {
                let pad = |s: Span, axis: usize, n: usize| {
                    (s.hi.min((n + self.padding[axis]) as isize) - s.lo) as f64
                };
                pad(hs, 0, h) * pad(ws, 1, w)
            }
            _ => ((h1 - h0) * (w1 - w0)) as f64,
        }
    }
}

/// The in-range input coordinates of a window.
fn cells(s: Span, n: usize) -> impl Iterator<Item = usize> {
    (s.lo..s.hi)
        .step_by(s.step)
        .filter(move |&i| i >= 0 && (i as usize) < n)
        .map(|i| i as usize)
}

/// `out` (and max pooling's `indices`) for every window of every plane.
pub fn pool2d(p: &Pool, out: Operand, indices: Option<Operand>) -> Result<()> {
    let x = &p.x.layout.shape;
    let (n, c, h, w) = (x[0], x[1], x[2], x[3]);
    let (ho, wo) = (out.layout.shape[2], out.layout.shape[3]);
    (0..n * c).into_par_iter().for_each(|nc| {
        let (b, ch) = (nc / c, nc % c);
        for oh in 0..ho {
            let hs = p.span(0, oh, h, ho);
            for ow in 0..wo {
                let ws = p.span(1, ow, w, wo);
                let at = [b, ch, oh, ow];
                if p.kind == PoolKind::Max {
                    let (mut best, mut arg) = (f64::NEG_INFINITY, None);
                    for ih in cells(hs, h) {
                        for iw in cells(ws, w) {
                            let v = get(&p.x, &[b, ch, ih, iw]);
                            // PyTorch's kernel: the first cell's index to start, then any larger value or NaN.
                            if arg.is_none() || v > best || v.is_nan() {
                                (best, arg) = (v, Some(ih * w + iw));
                            }
                        }
                    }
                    put(&out, &at, best);
                    if let Some(ix) = &indices {
                        put(ix, &at, arg.unwrap_or(0) as f64);
                    }
                    continue;
                }
                let sum: f64 = cells(hs, h)
                    .flat_map(|ih| cells(ws, w).map(move |iw| (ih, iw)))
                    .map(|(ih, iw)| get(&p.x, &[b, ch, ih, iw]))
                    .sum();
                put(&out, &at, sum / p.divisor(hs, ws, h, w));
            }
        }
    });
    Ok(())
}

/// `dx` from `dout`: max pooling adds each gradient at its window's argmax, average pooling
/// spreads it over the window's cells.
pub fn pool2d_backward(
    p: &Pool,
    dout: Operand,
    indices: Option<Operand>,
    dx: Operand,
) -> Result<()> {
    let x = &p.x.layout.shape;
    let (n, c, h, w) = (x[0], x[1], x[2], x[3]);
    let (ho, wo) = (dout.layout.shape[2], dout.layout.shape[3]);
    (0..n * c).into_par_iter().for_each(|nc| {
        let (b, ch) = (nc / c, nc % c);
        let mut plane = vec![0.0; h * w];
        for oh in 0..ho {
            let hs = p.span(0, oh, h, ho);
            for ow in 0..wo {
                let ws = p.span(1, ow, w, wo);
                let g = get(&dout, &[b, ch, oh, ow]);
                if let Some(ix) = &indices {
                    plane[get(ix, &[b, ch, oh, ow]) as usize] += g;
                    continue;
                }
                let share = g / p.divisor(hs, ws, h, w);
                for ih in cells(hs, h) {
                    for iw in cells(ws, w) {
                        plane[ih * w + iw] += share;
                    }
                }
            }
        }
        for (i, v) in plane.into_iter().enumerate() {
            put(&dx, &[b, ch, i / w, i % w], v);
        }
    });
    Ok(())
}
