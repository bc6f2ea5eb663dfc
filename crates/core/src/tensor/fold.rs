//! `F.unfold` (im2col) and `F.fold` (col2im) with the memory of PyTorch 2.11's CUDA kernels:
//! the result is made like the input and then resized (Note [a result made like its input]).

use crate::autograd::{needs_grad, record};

use super::{Result, Tensor, TensorError};

// Note [a result made like its input]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ATen's `im2col_cuda` and `col2im_cuda` make their output with `empty_like(input)`, make the
// input contiguous (a copy when it is not), and only then `resize_` the output to its real
// shape. A larger shape takes a new block and frees the first (the resize copies the old bytes
// over); a smaller one keeps the input-sized block, which the result then holds for its whole
// life: the gradient an unfold sends back is the size of the unfolded columns, and a fold of
// overlapping patches holds a block the size of its patches. The contiguous copy goes when the
// kernel returns. Each is the other's backward (Im2ColBackward0 folds, Col2ImBackward0 unfolds).

/// The sliding blocks both walk: (height, width) each, as `F.unfold` takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The block's size.
    pub kernel: [usize; 2],
    /// The spacing of the block's elements.
    pub dilation: [usize; 2],
    /// Zeros added on both sides.
    pub padding: [usize; 2],
    /// The step between blocks.
    pub stride: [usize; 2],
}

impl Window {
    /// `im2col_shape_check`'s checks of the four pairs, with PyTorch's messages.
    fn check(&self) -> Result<()> {
        let [kh, kw] = self.kernel;
        let [dh, dw] = self.dilation;
        let [sh, sw] = self.stride;
        let fail = |m: String| Err(TensorError::runtime(m));
        if kh == 0 || kw == 0 {
            return fail(format!(
                "kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}"
            ));
        }
        if dh == 0 || dw == 0 {
            return fail(format!(
                "dilation should be greater than zero, but got dilation_height: {dh} dilation_width: {dw}"
            ));
        }
        if sh == 0 || sw == 0 {
            return fail(format!(
                "stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}"
            ));
        }
        Ok(())
    }

    /// How many blocks fit along each axis of a `size` plane (0 where none does).
    fn blocks(&self, size: [usize; 2]) -> [usize; 2] {
        [0, 1].map(|a| {
            let span = self.dilation[a] * (self.kernel[a] - 1) + 1;
            let padded = size[a] + 2 * self.padding[a];
            if padded < span {
                0
            } else {
                (padded - span) / self.stride[a] + 1
            }
        })
    }

    /// For kernel offset `k` along axis `a` of a plane of `size`: the blocks whose element falls
    /// inside the plane (`first`, `count`) and that element's plane position for the first.
    fn inside(
        &self,
        a: usize,
        k: usize,
        size: usize,
        blocks: usize,
    ) -> Option<(usize, usize, usize)> {
        let (s, offset) = (
            self.stride[a] as isize,
            (k * self.dilation[a]) as isize - self.padding[a] as isize,
        );
        let first = if offset >= 0 {
            0
        } else {
            (-offset + s - 1) / s
        };
        let last = (size as isize - 1 - offset)
            .div_euclid(s)
            .min(blocks as isize - 1);
        (first <= last).then(|| {
            let at = first * s + offset;
            (first as usize, (last - first + 1) as usize, at as usize)
        })
    }
}

/// PyTorch's `(h, w)` spelling of a pair in its messages.
fn pair(p: [usize; 2]) -> String {
    format!("({}, {})", p[0], p[1])
}

impl Tensor {
    /// `F.unfold(self, …)`: each sliding block of a [N, C, H, W] (or [C, H, W]) input as a
    /// column, [N, C·kh·kw, L].
    pub fn im2col(&self, w: Window) -> Result<Tensor> {
        super::check_interrupt()?;
        w.check()?;
        let d = self.dims();
        if !(d.len() == 3 || d.len() == 4) || d[d.len() - 3] == 0 {
            return Err(TensorError::runtime(format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{:?}",
                d
            )));
        }
        let plane = [d[d.len() - 2], d[d.len() - 1]];
        let blocks = w.blocks(plane);
        if blocks[0] < 1 || blocks[1] < 1 {
            return Err(TensorError::runtime(format!(
                "Given input with spatial size {}, kernel_size={}, dilation={}, padding={}, calculated shape of the array of sliding blocks as {}, but its components must be at least one.",
                pair(plane), pair(w.kernel), pair(w.dilation), pair(w.padding), pair(blocks)
            )));
        }
        let (n, c) = (if d.len() == 4 { d[0] } else { 1 }, d[d.len() - 3]);
        let rows = c * w.kernel[0] * w.kernel[1];
        let cols = blocks[0] * blocks[1];
        let shape: Vec<usize> = match d.len() {
            4 => vec![n, rows, cols],
            _ => vec![rows, cols],
        };
        let out = self.made_like_then_resized(&shape, |x, out| {
            out.zero_()?;
            walk(&w, [n, c], plane, blocks, x, out, |plane, col| {
                col.copy_(&plane)
            })
        })?;
        if needs_grad(&[self]) {
            record(
                &out,
                "Im2ColBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.col2im(plane, w)?)])),
            );
        }
        Ok(out)
    }

    /// `F.fold(self, output_size, …)`: columns [N, C·kh·kw, L] (or unbatched) summed back into
    /// [N, C, H, W] planes of `output_size`, overlapping elements added.
    pub fn col2im(&self, output_size: [usize; 2], w: Window) -> Result<Tensor> {
        super::check_interrupt()?;
        w.check()?;
        let d = self.dims();
        if !(d.len() == 2 || d.len() == 3) || d[d.len() - 2] == 0 || d[d.len() - 1] == 0 {
            return Err(TensorError::runtime(format!(
                "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions for input, but got: {:?}",
                d
            )));
        }
        let per_block = w.kernel[0] * w.kernel[1];
        let rows = d[d.len() - 2];
        if !rows.is_multiple_of(per_block) {
            return Err(TensorError::runtime(format!(
                "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)={rows} and kernel_size={}",
                pair(w.kernel)
            )));
        }
        let blocks = w.blocks(output_size);
        let cols = d[d.len() - 1];
        if blocks[0] < 1 || blocks[1] < 1 || blocks[0] * blocks[1] != cols {
            return Err(TensorError::runtime(format!(
                "Given output_size={}, kernel_size={}, dilation={}, padding={}, stride={}, expected size of input's dimension 2 to match the calculated number of sliding blocks {} * {} = {}, but got input.size(2)={cols}.",
                pair(output_size), pair(w.kernel), pair(w.dilation), pair(w.padding), pair(w.stride),
                blocks[0], blocks[1], blocks[0] * blocks[1]
            )));
        }
        let (n, c) = (if d.len() == 3 { d[0] } else { 1 }, rows / per_block);
        let shape: Vec<usize> = match d.len() {
            3 => vec![n, c, output_size[0], output_size[1]],
            _ => vec![c, output_size[0], output_size[1]],
        };
        let out = self.made_like_then_resized(&shape, |cols, out| {
            out.zero_()?;
            walk(&w, [n, c], output_size, blocks, out, cols, |plane, col| {
                plane.add_scaled_(&col, 1.0)
            })
        })?;
        if needs_grad(&[self]) {
            record(
                &out,
                "Col2ImBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.im2col(w)?)])),
            );
        }
        Ok(out)
    }

    /// Note [a result made like its input]: `empty_like(self)`, the contiguous input, then the
    /// resize to `shape`; `fill` writes the result from the contiguous input.
    fn made_like_then_resized(
        &self,
        shape: &[usize],
        fill: impl FnOnce(&Tensor, &Tensor) -> Result<()>,
    ) -> Result<Tensor> {
        let opts = self.like_opts();
        let first = Tensor::empty(&[self.numel()], &opts)?;
        let input = self.detach()?.contiguous()?;
        let numel: usize = shape.iter().product();
        let block = if numel > first.numel() {
            let grown = Tensor::empty(&[numel], &opts)?;
            drop(first);
            grown
        } else {
            first
        };
        let out = block.storage_view(shape, &contiguous_strides(shape), 0)?;
        drop(block);
        if self.has_values() && numel > 0 {
            fill(&input, &out)?;
        }
        drop(input);
        Ok(out)
    }
}

/// Row-major strides of `shape`.
fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// For each kernel offset, the [N, C, bh, bw] views of the `plane` tensor's elements under it
/// (contiguous [N, C, H, W]) and of the columns' (contiguous [N, C, kh, kw, blocks]) that
/// correspond, padding left out; `each(plane view, columns view)` moves the values.
fn walk(
    w: &Window,
    [n, c]: [usize; 2],
    plane: [usize; 2],
    blocks: [usize; 2],
    planes: &Tensor,
    columns: &Tensor,
    each: impl Fn(Tensor, Tensor) -> Result<()>,
) -> Result<()> {
    let [h, wd] = plane;
    let [kh, kw] = w.kernel;
    let cols = blocks[0] * blocks[1];
    let (p0, c0) = (planes.storage_offset(), columns.storage_offset());
    for ki in 0..kh {
        let Some((bi, ni, hi)) = w.inside(0, ki, h, blocks[0]) else {
            continue;
        };
        for kj in 0..kw {
            let Some((bj, nj, wj)) = w.inside(1, kj, wd, blocks[1]) else {
                continue;
            };
            let size = [n, c, ni, nj];
            let plane_view = planes.storage_view(
                &size,
                &[c * h * wd, h * wd, w.stride[0] * wd, w.stride[1]],
                p0 + hi * wd + wj,
            )?;
            let column_view = columns.storage_view(
                &size,
                &[c * kh * kw * cols, kh * kw * cols, blocks[1], 1],
                c0 + (ki * kw + kj) * cols + bi * blocks[1] + bj,
            )?;
            each(plane_view, column_view)?;
        }
    }
    Ok(())
}
