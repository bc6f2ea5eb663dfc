//! `constant_pad_nd` (`F.pad` in constant mode): PyTorch's checks, one new tensor filled with the
//! value and the input copied into its window; the backward pads the gradient back by the
//! negated amounts (one narrowing copy, the input's size).

use crate::autograd::{needs_grad, record};

use super::memory_format::{empty_in, is_channels_last};
use super::{Layout, Result, Scalar, Tensor, TensorError};

/// Where the input's kept part sits: its view of the input and of the output.
struct Window {
    from: Layout,
    to: Layout,
}

impl Tensor {
    /// `F.pad(self, pad, value=value)`: `pad` holds (before, after) pairs from the last dim
    /// backwards; negative amounts crop.
    pub fn constant_pad(&self, pad: &[i64], value: f64) -> Result<Tensor> {
        super::check_interrupt()?;
        let shape = padded_shape(self.dims(), pad)?;
        let cl = self.dim() == 4 && is_channels_last(self);
        let out = empty_in(self, &shape, self.dtype(), cl)?;
        if pad.iter().any(|&p| p > 0) && out.numel() > 0 {
            out.backend().fill(out.operand(), Scalar::Float(value))?;
        }
        let w = window(self, &out, pad);
        if w.from.numel() > 0 {
            self.backend()
                .copy(self.operand_with(&w.from), out.operand_with(&w.to))?;
        }
        if needs_grad(&[self]) {
            let back: Vec<i64> = pad.iter().map(|p| -p).collect();
            record(
                &out,
                "ConstantPadNdBackward0",
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(g.constant_pad(&back, 0.0)?)])),
            );
        }
        Ok(out)
    }
}

/// The padded shape, with PyTorch's errors for an odd, too long or over-cropping `pad`.
fn padded_shape(dims: &[usize], pad: &[i64]) -> Result<Vec<usize>> {
    if pad.len() % 2 != 0 {
        return Err(TensorError::runtime(
            "Padding length must be divisible by 2",
        ));
    }
    if pad.len() / 2 > dims.len() {
        return Err(TensorError::runtime(format!(
            "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
            pad.len(),
            dims.len()
        )));
    }
    let mut shape = dims.to_vec();
    for (i, pair) in pad.chunks(2).enumerate() {
        let d = dims.len() - 1 - i;
        let size = dims[d] as i64 + pair[0] + pair[1];
        if size < 0 {
            return Err(TensorError::runtime(format!(
                "The input size {}, plus negative padding {} and {} resulted in a negative output size, which is invalid. Check dimension {d} of your input.",
                dims[d], pair[0], pair[1]
            )));
        }
        shape[d] = size as usize;
    }
    Ok(shape)
}

/// The kept part of `x` and where it lands in `out`.
fn window(x: &Tensor, out: &Tensor, pad: &[i64]) -> Window {
    let (mut from, mut to) = (x.layout().clone(), out.layout().clone());
    to.shape = x.dims().to_vec();
    for (i, pair) in pad.chunks(2).enumerate() {
        let d = x.dim() - 1 - i;
        let (before, after) = (pair[0], pair[1]);
        let kept = (x.dims()[d] as i64 + before.min(0) + after.min(0)).max(0) as usize;
        from.offset += (-before).max(0) as usize * from.strides[d];
        from.shape[d] = kept;
        to.offset += before.max(0) as usize * to.strides[d];
        to.shape[d] = kept;
    }
    Window { from, to }
}
