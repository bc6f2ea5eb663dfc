//! Host kernels for 2-D resizing (`interpolate` nearest and bilinear) of an [N, C, H, W] view:
//! each output reads at most two taps per axis; the backward gathers, for each input element,
//! the outputs that read it (no atomics, so the CUDA kernel computes the same sums).

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{Operand, Upsample, UpsampleMode};
use torchlet_alloc::types::Result;

/// The input positions output `o` reads along one axis and their weights, in f32 as PyTorch's
/// kernels compute them (`nearest_idx`, `area_pixel_compute_source_index`).
pub fn taps(o: usize, input: usize, ratio: f32, mode: UpsampleMode) -> [(usize, f32); 2] {
    match mode {
        UpsampleMode::Nearest => {
            let i = ((o as f32 * ratio).floor() as usize).min(input - 1);
            [(i, 1.0), (i, 0.0)]
        }
        UpsampleMode::Bilinear { align_corners } => {
            let src = if align_corners {
                ratio * o as f32
            } else {
                (ratio * (o as f32 + 0.5) - 0.5).max(0.0)
            };
            let i0 = src as usize;
            let step = usize::from(i0 < input - 1);
            let l = src - i0 as f32;
            [(i0, 1.0 - l), (i0 + step, l)]
        }
    }
}

/// The outputs along one axis that may read input `i` (a superset; `taps` decides).
pub fn readers(i: usize, outputs: usize, ratio: f32) -> std::ops::Range<usize> {
    if ratio <= 0.0 {
        return 0..outputs;
    }
    let lo = ((i as f32 - 1.0) / ratio).floor() as i64 - 2;
    let hi = ((i as f32 + 2.0) / ratio).ceil() as i64 + 2;
    lo.max(0) as usize..(hi.max(0) as usize).min(outputs)
}

/// The weight with which output `o` reads input `i` along one axis.
fn weight(o: usize, i: usize, input: usize, ratio: f32, mode: UpsampleMode) -> f64 {
    taps(o, input, ratio, mode)
        .iter()
        .filter(|(at, _)| *at == i)
        .map(|(_, w)| *w as f64)
        .sum()
}

/// (N, C, H, W) of the input.
fn sizes(u: &Upsample) -> (usize, usize, usize, usize) {
    let s = &u.x.layout.shape;
    (s[0], s[1], s[2], s[3])
}

/// Resize `u.x` into `out` [N, C, Ho, Wo].
pub fn upsample2d(u: &Upsample, out: Operand) -> Result<()> {
    let (n, c, h, w) = sizes(u);
    let (ho, wo) = (out.layout.shape[2], out.layout.shape[3]);
    (0..n * c).into_par_iter().for_each(|plane| {
        let (b, ch) = (plane / c, plane % c);
        for oh in 0..ho {
            let th = taps(oh, h, u.ratio[0], u.mode);
            for ow in 0..wo {
                let tw = taps(ow, w, u.ratio[1], u.mode);
                let v = if u.mode == UpsampleMode::Nearest {
                    get(&u.x, &[b, ch, th[0].0, tw[0].0])
                } else {
                    let at = |i: usize, j: usize| get(&u.x, &[b, ch, th[i].0, tw[j].0]);
                    let (h0, h1) = (th[0].1 as f64, th[1].1 as f64);
                    let (w0, w1) = (tw[0].1 as f64, tw[1].1 as f64);
                    h0 * (w0 * at(0, 0) + w1 * at(0, 1)) + h1 * (w0 * at(1, 0) + w1 * at(1, 1))
                };
                put(&out, &[b, ch, oh, ow], v);
            }
        }
    });
    Ok(())
}

/// The input's gradient `dx` (overwritten) from the output's `dout`.
pub fn upsample2d_backward(u: &Upsample, dout: Operand, dx: Operand) -> Result<()> {
    let (n, c, h, w) = sizes(u);
    let (ho, wo) = (dout.layout.shape[2], dout.layout.shape[3]);
    (0..n * c).into_par_iter().for_each(|plane| {
        let (b, ch) = (plane / c, plane % c);
        for ih in 0..h {
            let rows: Vec<(usize, f64)> = readers(ih, ho, u.ratio[0])
                .map(|oh| (oh, weight(oh, ih, h, u.ratio[0], u.mode)))
                .filter(|(_, wt)| *wt != 0.0)
                .collect();
            for iw in 0..w {
                let mut sum = 0.0;
                for ow in readers(iw, wo, u.ratio[1]) {
                    let ww = weight(ow, iw, w, u.ratio[1], u.mode);
                    if ww == 0.0 {
                        continue;
                    }
                    for &(oh, wh) in &rows {
                        sum += wh * ww * get(&dout, &[b, ch, oh, ow]);
                    }
                }
                put(&dx, &[b, ch, ih, iw], sum);
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every output that reads an input lies in `readers`, for up- and downsampling alike.
    #[test]
    fn readers_cover_every_tap() {
        let modes = [
            UpsampleMode::Nearest,
            UpsampleMode::Bilinear {
                align_corners: false,
            },
            UpsampleMode::Bilinear {
                align_corners: true,
            },
        ];
        for (input, output) in [(4, 8), (8, 4), (5, 13), (13, 5), (3, 3), (7, 1)] {
            for mode in modes {
                let ratio = match mode {
                    UpsampleMode::Bilinear {
                        align_corners: true,
                    } if output > 1 => (input - 1) as f32 / (output - 1) as f32,
                    UpsampleMode::Bilinear {
                        align_corners: true,
                    } => 0.0,
                    _ => input as f32 / output as f32,
                };
                for o in 0..output {
                    for (i, wt) in taps(o, input, ratio, mode) {
                        assert!(i < input);
                        if wt != 0.0 {
                            assert!(
                                readers(i, output, ratio).contains(&o),
                                "{mode:?} {input}->{output} o={o} i={i}"
                            );
                        }
                    }
                }
            }
        }
    }
}
