//! Host kernels for convolution over depth, height and width (a 2-D one has depth 1): forward,
//! and the input's and weight's gradients, in f64.

use rayon::prelude::*;

use super::strided::{get, put};
use crate::device::backend::{Conv, Operand};
use torchlet_alloc::types::Result;

/// The sizes of one convolution: input [n, c, d, h, w], weight [k, cg, t, r, s], output
/// [n, k, do, ho, wo]; `input`, `kernel` and `output` are (depth, height, width).
#[derive(Clone, Copy)]
struct Geometry {
    n: usize,
    c: usize,
    k: usize,
    cg: usize,
    kg: usize,
    input: [usize; 3],
    kernel: [usize; 3],
    output: [usize; 3],
}

impl Geometry {
    fn of(c: &Conv, out: &[usize]) -> Geometry {
        let (x, w) = (&c.x.layout.shape, &c.w.layout.shape);
        Geometry {
            n: x[0],
            c: x[1],
            k: w[0],
            cg: w[1],
            kg: w[0] / c.groups,
            input: [x[2], x[3], x[4]],
            kernel: [w[2], w[3], w[4]],
            output: [out[2], out[3], out[4]],
        }
    }
}

/// Every index of a box of `size`, the last axis fastest.
fn cells(size: [usize; 3]) -> impl Iterator<Item = [usize; 3]> {
    (0..size[0])
        .flat_map(move |a| (0..size[1]).flat_map(move |b| (0..size[2]).map(move |c| [a, b, c])))
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

/// The input cell output cell `o` reads at kernel tap `t`, if inside the input.
fn reads(c: &Conv, g: &Geometry, o: [usize; 3], t: [usize; 3]) -> Option<[usize; 3]> {
    Some([
        tap(c, 0, o[0], t[0], g.input[0])?,
        tap(c, 1, o[1], t[1], g.input[1])?,
        tap(c, 2, o[2], t[2], g.input[2])?,
    ])
}

/// The output cell whose tap `t` reads input cell `i`, if any.
fn read_by(c: &Conv, g: &Geometry, i: [usize; 3], t: [usize; 3]) -> Option<[usize; 3]> {
    Some([
        tapped_by(c, 0, i[0], t[0], g.output[0])?,
        tapped_by(c, 1, i[1], t[1], g.output[1])?,
        tapped_by(c, 2, i[2], t[2], g.output[2])?,
    ])
}

/// `[a, b]` followed by a cell's three coordinates: a 5-D index.
fn at(a: usize, b: usize, cell: [usize; 3]) -> [usize; 5] {
    [a, b, cell[0], cell[1], cell[2]]
}

/// `out[n, k, o] = bias[k] + Σ x[n, c, i] · w[k, c', t]` over the group's channels and taps.
pub fn conv(c: &Conv, bias: Option<Operand>, out: Operand) -> Result<()> {
    let g = Geometry::of(c, &out.layout.shape);
    (0..g.n * g.k).into_par_iter().for_each(|nk| {
        let (n, k) = (nk / g.k, nk % g.k);
        let first = k / g.kg * g.cg;
        let b = bias.as_ref().map_or(0.0, |b| get(b, &[k]));
        for o in cells(g.output) {
            let mut acc = b;
            for ci in 0..g.cg {
                for t in cells(g.kernel) {
                    if let Some(i) = reads(c, &g, o, t) {
                        acc += get(&c.x, &at(n, first + ci, i)) * get(&c.w, &at(k, ci, t));
                    }
                }
            }
            put(&out, &at(n, k, o), acc);
        }
    });
    Ok(())
}

/// The input's gradient: each input element sums `dout · w` over the outputs that read it.
fn input_grad(c: &Conv, g: &Geometry, dout: &Operand, dx: &Operand) {
    (0..g.n * g.c).into_par_iter().for_each(|nc| {
        let (n, ch) = (nc / g.c, nc % g.c);
        let (group, ci) = (ch / g.cg, ch % g.cg);
        for i in cells(g.input) {
            let mut acc = 0.0;
            for t in cells(g.kernel) {
                let Some(o) = read_by(c, g, i, t) else {
                    continue;
                };
                for k in group * g.kg..(group + 1) * g.kg {
                    acc += get(dout, &at(n, k, o)) * get(&c.w, &at(k, ci, t));
                }
            }
            put(dx, &at(n, ch, i), acc);
        }
    });
}

/// The weight's gradient: each tap sums `dout · x` over the batch and the output cells.
fn weight_grad(c: &Conv, g: &Geometry, dout: &Operand, dw: &Operand) {
    (0..g.k * g.cg).into_par_iter().for_each(|kc| {
        let (k, ci) = (kc / g.cg, kc % g.cg);
        let ch = k / g.kg * g.cg + ci;
        for t in cells(g.kernel) {
            let mut acc = 0.0;
            for n in 0..g.n {
                for o in cells(g.output) {
                    if let Some(i) = reads(c, g, o, t) {
                        acc += get(dout, &at(n, k, o)) * get(&c.x, &at(n, ch, i));
                    }
                }
            }
            put(dw, &at(k, ci, t), acc);
        }
    });
}

/// The gradients of `conv` from `dout`, each into its destination when given.
pub fn conv_backward(
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
