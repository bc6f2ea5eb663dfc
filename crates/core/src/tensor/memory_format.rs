//! 4-D memory formats as cuDNN's ops see them: contiguous (NCHW) or channels-last (NHWC), a
//! tensor's suggested format, and tensors allocated in or copied to one.

use super::{DType, Layout, Result, Tensor};

/// Whether `t` is a 4-D tensor laid out channels-last (PyTorch's `suggest_memory_format`
/// gives `ChannelsLast`): strides of [N, H, W, C] order, dims of size 1 aside, and not
/// also contiguous.
pub(crate) fn is_channels_last(t: &Tensor) -> bool {
    t.dim() == 4 && !t.is_contiguous() && {
        let want = channels_last_strides(t.dims());
        t.dims()
            .iter()
            .zip(t.stride().iter().zip(&want))
            .all(|(&d, (s, w))| d == 1 || s == w)
    }
}

/// The channels-last strides of a 4-D shape [N, C, H, W].
fn channels_last_strides(d: &[usize]) -> Vec<usize> {
    vec![d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]]
}

/// A new uninitialised tensor of the 4-D `shape` on `like`'s device, channels-last when asked.
pub(crate) fn empty_in(
    like: &Tensor,
    shape: &[usize],
    dtype: DType,
    channels_last: bool,
) -> Result<Tensor> {
    if !channels_last {
        return like.empty_same(shape, dtype);
    }
    let storage = like.empty_same(&[shape[0], shape[2], shape[3], shape[1]], dtype)?;
    let layout = Layout {
        shape: shape.to_vec(),
        strides: channels_last_strides(shape),
        offset: 0,
    };
    Ok(storage.relayout_result(layout))
}

/// `t` itself when already dense in the format, else a copy in it (no autograd: the op's own
/// `contiguous(memory_format)`).
pub(crate) fn in_format(t: &Tensor, channels_last: bool) -> Result<Tensor> {
    let ready = if channels_last && t.dim() == 4 {
        t.is_channels_last()
    } else {
        t.is_contiguous()
    };
    if ready {
        return Ok(t.clone());
    }
    if !channels_last || t.dim() != 4 {
        return t.contiguous_copy();
    }
    let dst = empty_in(t, t.dims(), t.dtype(), true)?;
    t.backend().copy(t.operand(), dst.operand())?;
    Ok(dst)
}

impl Tensor {
    /// Whether a 4-D tensor is dense in channels-last order (`is_contiguous(memory_format=
    /// torch.channels_last)`).
    pub fn is_channels_last(&self) -> bool {
        is_channels_last(self) || self.dim() == 4 && self.is_contiguous() && self.dims()[1] == 1
    }

    /// The tensor in channels-last (or contiguous) memory: itself when already so, else a copy
    /// recorded as `node` (`ToCopyBackward0` for `to`, `CloneBackward0` for `contiguous`).
    pub fn to_memory_format(&self, channels_last: bool, node: &'static str) -> Result<Tensor> {
        if channels_last && self.dim() != 4 {
            return Err(super::TensorError::runtime(format!(
                "required rank 4 tensor to use channels_last format, got a tensor of {} dims",
                self.dim()
            )));
        }
        let out = in_format(self, channels_last)?;
        if !out.same_tensor(self) && crate::autograd::needs_grad(&[self]) {
            crate::autograd::record(
                &out,
                node,
                &[self],
                false,
                Box::new(|g, _| Ok(vec![Some(g.clone())])),
            );
        }
        Ok(out)
    }
}
