//! Pooling (`max_pool2d` with the indices PyTorch saves, `avg_pool2d`, `adaptive_avg_pool2d`)
//! and `batch_norm` (the saved mean and inverse standard deviation, the running statistics):
//! PyTorch's checks, outputs and backward nodes.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::{BatchNorm, BatchNormGrads, Pool, PoolKind};

use super::memory_format::{empty_in, is_channels_last};
use super::{DType, Layout, ReduceOp, Result, Tensor, TensorError};

/// A 2-D pooling window: (height, width) each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolOptions {
    /// Window size.
    pub kernel: [usize; 2],
    /// Window step (PyTorch's default: the kernel size).
    pub stride: [usize; 2],
    /// Implicit padding on each side.
    pub padding: [usize; 2],
    /// Spacing of the window's taps (max pooling).
    pub dilation: [usize; 2],
    /// Round the output size up instead of down.
    pub ceil_mode: bool,
}

/// One axis's output size (PyTorch's `pooling_output_shape`).
fn pooled(size: usize, k: usize, pad: usize, stride: usize, dil: usize, ceil: bool) -> i64 {
    let span = (dil * (k - 1) + 1) as i64;
    let room = size as i64 + 2 * pad as i64 - span + if ceil { stride as i64 - 1 } else { 0 };
    let mut out = room.div_euclid(stride as i64) + 1;
    if ceil && (out - 1) * stride as i64 >= size as i64 + pad as i64 {
        out -= 1;
    }
    out
}

fn err<T>(m: String) -> Result<T> {
    Err(TensorError::runtime(m))
}

/// PyTorch's `pool2d_shape_check`: the output [Ho, Wo] of pooling `x` [N, C, H, W].
fn check_pool(x: &Tensor, o: &PoolOptions, what: &str) -> Result<[usize; 2]> {
    if x.dim() != 4 {
        return err(format!(
            "non-empty 3D or 4D (batch mode) tensor expected for input to {what}"
        ));
    }
    if o.stride.contains(&0) {
        return err(format!(
            "stride should be greater than zero, but got dH: {} dW: {}",
            o.stride[0], o.stride[1]
        ));
    }
    if o.kernel.contains(&0) {
        return err(format!(
            "kernel size should be greater than zero, but got kH: {} kW: {}",
            o.kernel[0], o.kernel[1]
        ));
    }
    for a in 0..2 {
        let half = (o.dilation[a] * (o.kernel[a] - 1) + 1) / 2;
        if o.padding[a] > o.kernel[a] / 2 || o.padding[a] > half {
            return err(format!("pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}", o.padding[a], o.kernel[a], o.dilation[a]));
        }
    }
    let d = x.dims();
    let out = [0, 1].map(|a| {
        pooled(
            d[2 + a],
            o.kernel[a],
            o.padding[a],
            o.stride[a],
            o.dilation[a],
            o.ceil_mode,
        )
    });
    if out[0] < 1 || out[1] < 1 {
        return err(format!("Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small", d[1], d[2], d[3], d[1], out[0], out[1]));
    }
    if !x.dtype().is_float() {
        return err(format!(
            "\"{what}\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    Ok(out.map(|v| v as usize))
}

/// `x` as 4-D (an unbatched [C, H, W] gets a batch of one), and whether it was unbatched.
fn batched(x: &Tensor) -> Result<(Tensor, bool)> {
    Ok(match x.dim() {
        3 => (x.unsqueeze(0)?, true),
        _ => (x.clone(), false),
    })
}

fn unbatch(y: Tensor, unbatched: bool) -> Result<Tensor> {
    if unbatched {
        y.squeeze(Some(0))
    } else {
        Ok(y)
    }
}

impl Tensor {
    /// `F.max_pool2d(self, …)`; also the indices (flat in each H×W plane) when asked
    /// (`return_indices=True`). On a CUDA device PyTorch always makes them.
    pub fn max_pool2d(
        &self,
        o: &PoolOptions,
        return_indices: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        super::check_interrupt()?;
        let (x, unbatched) = batched(self)?;
        let [ho, wo] = check_pool(&x, o, "max_pool2d")?;
        let cl = is_channels_last(&x);
        let shape = [x.dims()[0], x.dims()[1], ho, wo];
        let y = empty_in(&x, &shape, x.dtype(), cl)?;
        let keep = return_indices || x.backend().props().is_some() || needs_grad(&[self]);
        let idx = keep
            .then(|| empty_in(&x, &shape, DType::I64, cl))
            .transpose()?;
        let p = pool(&x, PoolKind::Max, o);
        if y.numel() > 0 {
            x.backend()
                .pool2d(&p, y.operand(), idx.as_ref().map(|i| i.operand()))?;
        }
        if needs_grad(&[self]) {
            let saved = PoolSaved {
                x: SavedTensor::new(&x)?,
                indices: idx.as_ref().map(SavedTensor::new).transpose()?,
                options: *o,
                kind: PoolKind::Max,
            };
            record(
                &y,
                "MaxPool2DWithIndicesBackward0",
                &[&x],
                true,
                Box::new(move |g, _| saved.backward(g)),
            );
        }
        let idx = if return_indices {
            idx.map(|i| unbatch(i, unbatched)).transpose()?
        } else {
            None
        };
        Ok((unbatch(y, unbatched)?, idx))
    }

    /// `F.avg_pool2d(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
    pub fn avg_pool2d(
        &self,
        o: &PoolOptions,
        count_include_pad: bool,
        divisor: Option<i64>,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        if divisor == Some(0) {
            return err("divisor must be not zero".into());
        }
        let (x, unbatched) = batched(self)?;
        let [ho, wo] = check_pool(&x, o, "avg_pool2d")?;
        let kind = PoolKind::Avg {
            count_include_pad,
            divisor,
        };
        let y = Tensor::pooled_into(&x, [ho, wo], kind, o, "AvgPool2DBackward0")?;
        unbatch(y, unbatched)
    }

    /// `F.adaptive_avg_pool2d(self, output_size)`: an output of 1×1 is PyTorch's
    /// `mean((-1, -2), keepdim=True)`, any other size its adaptive kernel.
    pub fn adaptive_avg_pool2d(&self, size: [usize; 2]) -> Result<Tensor> {
        super::check_interrupt()?;
        if !(self.dim() == 3 || self.dim() == 4) || self.dims()[self.dim() - 2..].contains(&0) {
            return err(format!(
                "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {:?}",
                self.dims()
            ));
        }
        if size == [1, 1] {
            return self.reduction_over(ReduceOp::Mean, &[-1, -2], true);
        }
        let (x, unbatched) = batched(self)?;
        let o = PoolOptions {
            kernel: [1, 1],
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            ceil_mode: false,
        };
        let y = Tensor::pooled_into(
            &x,
            size,
            PoolKind::AdaptiveAvg,
            &o,
            "AdaptiveAvgPool2DBackward0",
        )?;
        unbatch(y, unbatched)
    }

    /// An average pooling of the 4-D `x` into a new [N, C, Ho, Wo], with its backward node.
    fn pooled_into(
        x: &Tensor,
        [ho, wo]: [usize; 2],
        kind: PoolKind,
        o: &PoolOptions,
        node: &'static str,
    ) -> Result<Tensor> {
        if !x.dtype().is_float() {
            return err(format!(
                "\"{node}\" not implemented for '{}'",
                x.dtype().scalar_type_name()
            ));
        }
        let cl = is_channels_last(x);
        let y = empty_in(x, &[x.dims()[0], x.dims()[1], ho, wo], x.dtype(), cl)?;
        let p = pool(x, kind, o);
        if y.numel() > 0 {
            x.backend().pool2d(&p, y.operand(), None)?;
        }
        if needs_grad(&[x]) {
            let saved = PoolSaved {
                x: SavedTensor::new(x)?,
                indices: None,
                options: *o,
                kind,
            };
            record(
                &y,
                node,
                &[x],
                true,
                Box::new(move |g, _| saved.backward(g)),
            );
        }
        Ok(y)
    }
}

/// The backend's view of a pooling of `x`.
fn pool<'a>(x: &'a Tensor, kind: PoolKind, o: &PoolOptions) -> Pool<'a> {
    Pool {
        x: x.operand(),
        kind,
        kernel: o.kernel,
        stride: o.stride,
        padding: o.padding,
        dilation: o.dilation,
    }
}

/// What a pooling's backward keeps, fields in the order PyTorch's node releases them.
struct PoolSaved {
    x: SavedTensor,
    indices: Option<SavedTensor>,
    options: PoolOptions,
    kind: PoolKind,
}

impl PoolSaved {
    /// The input's gradient, in the input's memory format.
    fn backward(&self, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let x = self.x.get()?;
        let idx = self.indices.as_ref().map(|i| i.get()).transpose()?;
        let dx = empty_in(x, x.dims(), x.dtype(), is_channels_last(x))?;
        if dx.numel() > 0 {
            let p = pool(x, self.kind, &self.options);
            x.backend()
                .pool2d_backward(&p, g.operand(), idx.map(|i| i.operand()), dx.operand())?;
        }
        Ok(vec![Some(dx)])
    }
}

/// Batch norm's running statistics and how fast they follow the batch's.
pub struct Running<'a> {
    /// The running mean [C].
    pub mean: &'a Tensor,
    /// The running variance [C].
    pub var: &'a Tensor,
    /// The batch's share in each update.
    pub momentum: f64,
}

impl Tensor {
    /// `F.batch_norm(self, running_mean, running_var, weight, bias, training, momentum, eps)`
    /// over dim 1 of an [N, C, …] input.
    pub fn batch_norm(
        &self,
        running: Option<Running>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        eps: f64,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let c = check_batch_norm(self, running.as_ref(), weight, bias, training)?;
        let x = if self.is_contiguous() {
            self.clone()
        } else {
            self.contiguous_copy()?
        };
        let rows = Layout::contiguous(&[x.dims()[0], c, x.numel() / (x.dims()[0] * c).max(1)]);
        let y = x.empty_same(x.dims(), x.dtype())?;
        // Training saves the batch's float32 statistics; evaluation reads the running ones.
        let (mean, invstd) = match (training, &running) {
            (true, _) => (
                x.empty_same(&[c], DType::F32)?,
                x.empty_same(&[c], DType::F32)?,
            ),
            (false, Some(r)) => (r.mean.clone(), r.var.clone()),
            (false, None) => unreachable!("checked: evaluation needs running statistics"),
        };
        let bn = BatchNorm {
            x: x.operand_with(&rows),
            weight: weight.map(|w| w.operand()),
            bias: bias.map(|b| b.operand()),
            eps,
            training,
        };
        if y.numel() > 0 {
            let stats = running
                .as_ref()
                .filter(|_| training)
                .map(|r| (r.mean.operand(), r.var.operand(), r.momentum));
            x.backend().batch_norm(
                &bn,
                stats,
                mean.operand(),
                invstd.operand(),
                y.operand_with(&rows),
            )?;
        }
        let inputs: Vec<&Tensor> = [Some(self), weight, bias].into_iter().flatten().collect();
        if needs_grad(&inputs) {
            let saved = BatchNormSaved {
                x: SavedTensor::new(&x)?,
                weight: weight.map(SavedTensor::new).transpose()?,
                mean: SavedTensor::new(&mean)?,
                invstd: SavedTensor::new(&invstd)?,
                has_bias: bias.is_some(),
                eps,
                training,
            };
            let node = if self.backend().props().is_some() {
                "CudnnBatchNormBackward0"
            } else {
                "NativeBatchNormBackward0"
            };
            record(
                &y,
                node,
                &inputs,
                true,
                Box::new(move |g, mask| saved.backward(g, mask)),
            );
        }
        Ok(y)
    }
}

/// PyTorch's checks of batch norm's arguments; the number of channels.
fn check_batch_norm(
    x: &Tensor,
    running: Option<&Running>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
) -> Result<usize> {
    if x.dim() < 2 {
        return Err(TensorError::value(format!(
            "expected 2D or 3D input (got {}D input)",
            x.dim()
        )));
    }
    let c = x.dims()[1];
    let params = [
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running.map(|r| r.mean)),
        ("running_var", running.map(|r| r.var)),
    ];
    for (name, t) in params {
        let Some(t) = t else { continue };
        if t.numel() != c {
            return err(format!(
                "{name} should contain {c} elements not {}",
                t.numel()
            ));
        }
        x.check_same_device(t)?;
    }
    if !training && running.is_none() {
        return err("running_mean must be defined in evaluation mode".into());
    }
    if training && x.numel() / c.max(1) <= 1 {
        return Err(TensorError::value(format!(
            "Expected more than 1 value per channel when training, got input size {:?}",
            x.dims()
        )));
    }
    if !x.dtype().is_float() {
        return err(format!(
            "\"batch_norm\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    Ok(c)
}

/// What batch norm's backward keeps, fields in the order PyTorch's node releases them.
struct BatchNormSaved {
    x: SavedTensor,
    weight: Option<SavedTensor>,
    mean: SavedTensor,
    invstd: SavedTensor,
    has_bias: bool,
    eps: f64,
    training: bool,
}

impl BatchNormSaved {
    /// The input's, weight's and bias's gradients, in that order.
    fn backward(&self, g: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let x = self.x.get()?;
        let weight = self.weight.as_ref().map(|w| w.get()).transpose()?;
        let c = x.dims()[1];
        let rows = Layout::contiguous(&[x.dims()[0], c, x.numel() / (x.dims()[0] * c).max(1)]);
        let dy = if g.is_contiguous() {
            g.clone()
        } else {
            g.contiguous_copy()?
        };
        let param_dtype = weight.map_or(x.dtype(), |w| w.dtype());
        let dx = mask[0]
            .then(|| x.empty_same(x.dims(), x.dtype()))
            .transpose()?;
        let want_w = weight.is_some() && mask[1];
        let want_b = self.has_bias && mask[mask.len() - 1];
        let dw = want_w
            .then(|| x.empty_same(&[c], param_dtype))
            .transpose()?;
        let db = want_b
            .then(|| x.empty_same(&[c], param_dtype))
            .transpose()?;
        let bn = BatchNorm {
            x: x.operand_with(&rows),
            weight: weight.map(|w| w.operand()),
            bias: None,
            eps: self.eps,
            training: self.training,
        };
        if x.numel() > 0 {
            let grads = BatchNormGrads {
                dy: dy.operand_with(&rows),
                dx: dx.as_ref().map(|d| d.operand_with(&rows)),
                dweight: dw.as_ref().map(|d| d.operand()),
                dbias: db.as_ref().map(|d| d.operand()),
            };
            x.backend().batch_norm_backward(
                &bn,
                self.mean.get()?.operand(),
                self.invstd.get()?.operand(),
                grads,
            )?;
        }
        drop(dy);
        let mut out = vec![dx];
        if weight.is_some() {
            out.push(dw);
        }
        if self.has_bias {
            out.push(db);
        }
        Ok(out)
    }
}
