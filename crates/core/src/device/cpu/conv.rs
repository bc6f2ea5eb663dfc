//! Host kernels for 2-D convolution: forward, and the input's and weight's gradients, in f64.

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{Conv, Operand};
use torchlet_alloc::types::Result;

/// The sizes of one convolution: input [n, c, h, w], weight [k, cg, r, s], output [n, k, ho, wo].
#[derive(Clone, Copy)]
struct Geometry {
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    k: usize,
    cg: usize,
    kg: usize,
    r: usize,
    s: usize,
    ho: usize,
    wo: usize,
}

impl Geometry {
    fn of(c: &Conv, out: &[usize]) -> Geometry {
        let (x, w) = (&c.x.layout.shape, &c.w.layout.shape);
        Geometry {
            n: x[0],
            c: x[1],
            h: x[2],
            w: x[3],
            k: w[0],
            cg: w[1],
            kg: w[0] / c.groups,
            r: w[2],
            s: w[3],
            ho: out[2],
            wo: out[3],
        }
    }
}

/// The input coordinate output `o` reads at tap `t` along one axis (`None` in the padding).
fn tap(c: &Conv, axis: usize, o: usize, t: usize, size: usize) -> Option<usize> {
    let i = (o * c.stride[axis] + t * c.dilation[axis]).checked_sub(c.padding[axis])?;
    (i < size).then_some(i)
}

/// The output coordinate whose tap `t` reads input `i` along one axis, if any.
fn tapped_by(c: &Conv, axis: usize, i: usize, t: usize, outs: usize) -> Option<usize> {
    let num = (i + c.padding[axis]).checked_sub(t * c.dilation[axis])?;
    let stride = c.stride[axis];
    (num % stride == 0 && num / stride < outs).then_some(num / stride)
}

/// `out[n, k, oh, ow] = bias[k] + Σ x[n, c, ih, iw] · w[k, c', r, s]` over the group's channels.
pub fn conv2d(c: &Conv, bias: Option<Operand>, out: Operand) -> Result<()> {
    let g = Geometry::of(c, &out.layout.shape);
    (0..g.n * g.k).into_par_iter().for_each(|nk| {
        let (n, k) = (nk / g.k, nk % g.k);
        let first = k / g.kg * g.cg;
        let b = bias.as_ref().map_or(0.0, |b| get(b, &[k]));
        for oh in 0..g.ho {
            for ow in 0..g.wo {
                let mut acc = b;
                for ci in 0..g.cg {
                    for r in 0..g.r {
                        let Some(ih) = tap(c, 0, oh, r, g.h) else {
                            continue;
                        };
                        for s in 0..g.s {
                            let Some(iw) = tap(c, 1, ow, s, g.w) else {
                                continue;
                            };
                            acc += get(&c.x, &[n, first + ci, ih, iw]) * get(&c.w, &[k, ci, r, s]);
                        }
                    }
                }
                put(&out, &[n, k, oh, ow], acc);
            }
        }
    });
    Ok(())
}

/// The input's gradient: each input element sums `dout · w` over the outputs that read it.
fn input_grad(c: &Conv, g: &Geometry, dout: &Operand, dx: &Operand) {
    (0..g.n * g.c).into_par_iter().for_each(|nc| {
        let (n, ch) = (nc / g.c, nc % g.c);
        let (group, ci) = (ch / g.cg, ch % g.cg);
        for ih in 0..g.h {
            for iw in 0..g.w {
                let mut acc = 0.0;
                for r in 0..g.r {
                    let Some(oh) = tapped_by(c, 0, ih, r, g.ho) else {
                        continue;
                    };
                    for s in 0..g.s {
                        let Some(ow) = tapped_by(c, 1, iw, s, g.wo) else {
                            continue;
                        };
                        for k in group * g.kg..(group + 1) * g.kg {
                            acc += get(dout, &[n, k, oh, ow]) * get(&c.w, &[k, ci, r, s]);
                        }
                    }
                }
                put(dx, &[n, ch, ih, iw], acc);
            }
        }
    });
}

/// The weight's gradient: each tap sums `dout · x` over the batch and the output plane.
fn weight_grad(c: &Conv, g: &Geometry, dout: &Operand, dw: &Operand) {
    (0..g.k * g.cg).into_par_iter().for_each(|kc| {
        let (k, ci) = (kc / g.cg, kc % g.cg);
        let ch = k / g.kg * g.cg + ci;
        for r in 0..g.r {
            for s in 0..g.s {
                let mut acc = 0.0;
                for n in 0..g.n {
                    for oh in 0..g.ho {
                        let Some(ih) = tap(c, 0, oh, r, g.h) else {
                            continue;
                        };
                        for ow in 0..g.wo {
                            let Some(iw) = tap(c, 1, ow, s, g.w) else {
                                continue;
                            };
                            acc += get(dout, &[n, k, oh, ow]) * get(&c.x, &[n, ch, ih, iw]);
                        }
                    }
                }
                put(dw, &[k, ci, r, s], acc);
            }
        }
    });
}

/// The gradients of `conv2d` from `dout`, each into its destination when given.
pub fn conv2d_backward(
    c: &Conv,
    dout: Operand,
    dx: Option<Operand>,
    dw: Option<Operand>,
) -> Result<()> {
    let g = Geometry::of(c, &dout.layout.shape);
    if let Some(dx) = &dx {
        input_grad(c, &g, &dout, dx);
    }
    if let Some(dw) = &dw {
        weight_grad(c, &g, &dout, dw);
    }
    Ok(())
}
