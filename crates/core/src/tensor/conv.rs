//! `conv2d` and `conv1d` (through a 4-D view, as PyTorch's cuDNN path does): PyTorch's checks and
//! messages, the output in the input's memory format, cuDNN's workspaces on CUDA devices
//! (`conv_workspace`), and `ConvolutionBackward0` with the gradients in PyTorch's order.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::Conv;

use super::conv_workspace::{workspaces, ConvCase, Workspaces};
use super::memory_format::{empty_in, in_format, is_channels_last};
use super::{DType, Result, Tensor, TensorError};

/// The geometry of a 2-D convolution: (height, width) each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOptions {
    /// Step of the window.
    pub stride: [usize; 2],
    /// Implicit zeros on each side.
    pub padding: [usize; 2],
    /// Spacing of the window's taps.
    pub dilation: [usize; 2],
    /// Channel groups.
    pub groups: usize,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

fn shape_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// PyTorch's `check_shape_forward` and type checks; the output's [Ho, Wo].
fn check(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, o: &ConvOptions) -> Result<[usize; 2]> {
    let err = |m: String| Err(TensorError::runtime(m));
    if o.stride.contains(&0) {
        return err("non-positive stride is not supported".into());
    }
    if o.dilation.contains(&0) {
        return err("dilation should be greater than zero".into());
    }
    if o.groups == 0 {
        return err("non-positive groups is not supported".into());
    }
    let (xd, wd) = (x.dims(), w.dims());
    if wd.len() != 4 {
        return err(format!(
            "weight should have at least three dimensions, got a weight of size {}",
            shape_str(wd)
        ));
    }
    if wd[0] % o.groups != 0 {
        return err(format!("Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size {} instead", o.groups, o.groups, shape_str(wd)));
    }
    if xd[1] != wd[1] * o.groups {
        return err(format!("Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} channels instead", o.groups, shape_str(wd), shape_str(xd), wd[1] * o.groups, xd[1]));
    }
    if let Some(b) = bias {
        if b.dims() != [wd[0]] {
            return err(format!("Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} instead", shape_str(wd), wd[0], shape_str(b.dims())));
        }
    }
    for (t, what) in [(Some(w), "weight"), (bias, "bias")] {
        let Some(t) = t else { continue };
        if t.dtype() != x.dtype() || t.device() != x.device() {
            return err(format!(
                "Input type ({}) and {what} type ({}) should be the same",
                x.type_name(),
                t.type_name()
            ));
        }
    }
    if !x.dtype().is_float() {
        return err(format!(
            "\"conv2d\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    let padded = [xd[2] + 2 * o.padding[0], xd[3] + 2 * o.padding[1]];
    let span = [
        o.dilation[0] * (wd[2] - 1) + 1,
        o.dilation[1] * (wd[3] - 1) + 1,
    ];
    if padded[0] < span[0] || padded[1] < span[1] {
        return err(format!("Calculated padded input size per channel: ({} x {}). Kernel size: ({} x {}). Kernel size can't be greater than actual input size", padded[0], padded[1], span[0], span[1]));
    }
    Ok([
        (padded[0] - span[0]) / o.stride[0] + 1,
        (padded[1] - span[1]) / o.stride[1] + 1,
    ])
}

impl Tensor {
    /// `F.conv2d(self, weight, bias, stride, padding, dilation, groups)`; `self` [N, C, H, W] or
    /// unbatched [C, H, W].
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvOptions,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs("conv2d", &inputs)? {
            return cast[0].conv2d(&cast[1], cast.get(2), o);
        }
        match self.dim() {
            4 => self.conv2d_batched(weight, bias, o),
            3 => self.unsqueeze(0)?.conv2d_batched(weight, bias, o)?.squeeze(Some(0)),
            _ => Err(TensorError::runtime(format!(
                "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: {}",
                shape_str(self.dims())
            ))),
        }
    }

    /// `F.conv1d(self, weight, bias, stride, padding, dilation, groups)`: a 2-D convolution over
    /// a height of 1, as PyTorch's cuDNN path runs it.
    pub fn conv1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> Result<Tensor> {
        let batched = match self.dim() {
            3 => self.clone(),
            2 => self.unsqueeze(0)?,
            _ => {
                return Err(TensorError::runtime(format!(
                    "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: {}",
                    shape_str(self.dims())
                )))
            }
        };
        if weight.dim() != 3 {
            return Err(TensorError::runtime(format!(
                "weight should have at least three dimensions, got a weight of size {}",
                shape_str(weight.dims())
            )));
        }
        let o = ConvOptions {
            stride: [1, stride],
            padding: [0, padding],
            dilation: [1, dilation],
            groups,
        };
        let y = batched
            .unsqueeze(2)?
            .conv2d(&weight.unsqueeze(2)?, bias, &o)?
            .squeeze(Some(2))?;
        if self.dim() == 2 {
            return y.squeeze(Some(0));
        }
        Ok(y)
    }

    fn conv2d_batched(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvOptions,
    ) -> Result<Tensor> {
        let [ho, wo] = check(self, weight, bias, o)?;
        let cl = is_channels_last(self) || is_channels_last(weight);
        let ws = self.conv_workspaces(weight, o, cl);
        let x = in_format(self, cl)?;
        let w = in_format(weight, cl)?;
        let shape = [self.dims()[0], weight.dims()[0], ho, wo];
        let y = empty_in(self, &shape, self.dtype(), cl)?;
        if y.numel() > 0 {
            let scratch = workspace(self, ws.forward)?;
            self.backend()
                .conv2d(&conv(&x, &w, o), bias.map(|b| b.operand()), y.operand())?;
            drop(scratch);
        }
        drop((w, x));
        let inputs: Vec<&Tensor> = [Some(self), Some(weight), bias]
            .into_iter()
            .flatten()
            .collect();
        if needs_grad(&inputs) {
            let saved = ConvSaved {
                x: SavedTensor::new(self)?,
                weight: SavedTensor::new(weight)?,
                options: *o,
                has_bias: bias.is_some(),
            };
            record(
                &y,
                "ConvolutionBackward0",
                &inputs,
                true,
                Box::new(move |g, mask| saved.backward(g, mask)),
            );
        }
        Ok(y)
    }

    /// cuDNN's workspaces for this convolution on a CUDA device; none on the CPU.
    fn conv_workspaces(&self, w: &Tensor, o: &ConvOptions, channels_last: bool) -> Workspaces {
        if self.backend().props().is_none() {
            return Workspaces::default();
        }
        let four = |d: &[usize]| [d[0], d[1], d[2], d[3]];
        workspaces(&ConvCase {
            dtype: self.dtype(),
            input: four(self.dims()),
            weight: four(w.dims()),
            stride: o.stride,
            padding: o.padding,
            dilation: o.dilation,
            groups: o.groups,
            channels_last,
        })
    }
}

/// A workspace of `bytes` from the device's allocator (none for 0), freed when dropped.
pub(super) fn workspace(like: &Tensor, bytes: usize) -> Result<Option<Tensor>> {
    if bytes == 0 {
        return Ok(None);
    }
    let ws = like.empty_same(&[bytes], DType::U8)?;
    ws.mark_role(torchlet_alloc::Role::Workspace);
    Ok(Some(ws))
}

/// The backend's view of a convolution of `x` by `w`.
pub(super) fn conv<'a>(x: &'a Tensor, w: &'a Tensor, o: &ConvOptions) -> Conv<'a> {
    Conv {
        x: x.operand(),
        w: w.operand(),
        stride: o.stride,
        padding: o.padding,
        dilation: o.dilation,
        groups: o.groups,
    }
}

/// What `ConvolutionBackward0` keeps, fields in the order PyTorch's node releases them.
struct ConvSaved {
    x: SavedTensor,
    weight: SavedTensor,
    options: ConvOptions,
    has_bias: bool,
}

impl ConvSaved {
    /// PyTorch's `convolution_backward`: the input's and the weight's gradients (in the order and
    /// with the workspaces of the backend's kernels), then the bias's, `grad.sum([0, 2, 3])`.
    ///
    /// Note [conv backward grad copies]: cuDNN's `backward_input` allocates the input's gradient
    /// and then makes its own contiguous copy of a gradient that is not dense in the format;
    /// `backward_weight` makes its copy before allocating the weight's gradient; each frees its
    /// copy on return. The native depthwise kernels (weight's gradient first) copy once.
    /// A dense but permuted gradient of a convolution in the contiguous format (from
    /// attention's `q.permute`) is copied once, before either gradient, and freed once both are
    /// made, before the bias's: `py_zoo_unet.py`'s 1x1 convolutions, recorded on an H100.
    fn backward(&self, grad: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let (input, weight) = (self.x.get()?, self.weight.get()?);
        let cl = is_channels_last(input) || is_channels_last(weight);
        let ws = input.conv_workspaces(weight, &self.options, cl);
        let permuted = super::convert::is_dense(grad) && !grad.is_contiguous();
        let upfront = if ws.weight_grad_first || !permuted || cl {
            grad.clone()
        } else {
            in_format(grad, false)?
        };
        let g = &upfront;
        let (x, w) = (in_format(input, cl)?, in_format(weight, cl)?);
        let shared = ws.weight_grad_first.then(|| in_format(g, cl)).transpose()?;
        let c = conv(&x, &w, &self.options);
        let grad_of =
            |t: &Tensor, want: bool, bytes: usize, input_grad: bool| -> Result<Option<Tensor>> {
                if !want {
                    return Ok(None);
                }
                let early = match (&shared, input_grad) {
                    (Some(_), _) | (None, true) => None,
                    (None, false) => Some(in_format(g, cl)?),
                };
                let d = empty_in(t, t.dims(), t.dtype(), cl)?;
                if d.numel() > 0 && g.numel() > 0 {
                    let dout = match (&shared, &early) {
                        (Some(s), _) | (None, Some(s)) => s.clone(),
                        (None, None) => in_format(g, cl)?,
                    };
                    let scratch = workspace(t, bytes)?;
                    let (dx, dw) = if input_grad {
                        (Some(d.operand()), None)
                    } else {
                        (None, Some(d.operand()))
                    };
                    t.backend().conv2d_backward(&c, dout.operand(), dx, dw)?;
                    drop(scratch);
                } else {
                    t.backend().fill(d.operand(), super::Scalar::Float(0.0))?;
                }
                Ok(Some(d))
            };
        let (dx, dw) = if ws.weight_grad_first {
            let dw = grad_of(weight, mask[1], ws.weight_grad, false)?;
            (grad_of(input, mask[0], ws.input_grad, true)?, dw)
        } else {
            let dx = grad_of(input, mask[0], ws.input_grad, true)?;
            (dx, grad_of(weight, mask[1], ws.weight_grad, false)?)
        };
        drop((shared, w, x, upfront));
        let mut out = vec![dx, dw];
        if self.has_bias {
            let db = match mask[2] {
                true => Some(
                    grad.reduce_raw(crate::device::ReduceOp::Sum, &[0, 2, 3], grad.dtype())?
                        .result_as_shape(&[grad.dims()[1]]),
                ),
                false => None,
            };
            out.push(db);
        }
        Ok(out)
    }
}
