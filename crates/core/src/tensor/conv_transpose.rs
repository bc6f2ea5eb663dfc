//! `conv_transpose2d` and `conv_transpose1d` (through a 4-D view, as PyTorch's cuDNN path runs
//! them): the output as a convolution's input gradient, cuDNN's workspaces by recorded case, and
//! `ConvolutionBackward0` with the gradient copied once for both of its gradients.

use crate::autograd::{needs_grad, record, SavedTensor};

use super::conv::{conv, workspace, ConvOptions};
use super::memory_format::{empty_in, in_format, is_channels_last};
use super::{DType, Result, Tensor, TensorError};

// Note [transposed convolutions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A transposed convolution is the input gradient of the convolution with the same weight and
// geometry, and cuDNN runs it as one: the output is allocated, then the backward-data
// algorithm's workspace comes and goes, then the bias is added in place (no allocation). Its
// backward (`cudnn_convolution_transpose_backward`) makes the gradient contiguous first (a copy
// when it is not dense), allocates the input's gradient, runs a forward convolution of the
// gradient (that algorithm's workspace), allocates the weight's gradient, runs the
// backward-filter algorithm (its workspace), and frees the copy at return; the bias's gradient
// is `grad.sum([0, 2, 3])` after. Which algorithm cuDNN picks, and so each workspace, is known
// only for the recorded cases (`tests/parity/py_conv_more.py` on an H100); elsewhere the nearest
// recorded case with the same kernel and stride is scaled by the output's size, and the front
// ends say that it was estimated.

/// A transposed convolution's geometry: a convolution's, and the rows and columns added at the
/// far end of the output (`output_padding`, less than the stride or the dilation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvTransposeOptions {
    /// Stride, padding, dilation and groups of the convolution it transposes.
    pub conv: ConvOptions,
    /// Extra output size on the bottom and right.
    pub output_padding: [usize; 2],
}

/// One recorded case: (dtype, input [N, C, H, W], weight [C, K/g, R, S], stride, padding,
/// output_padding, groups) and its (forward, input gradient, weight gradient) workspaces.
type Recorded = (
    DType,
    [usize; 4],
    [usize; 4],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
    [usize; 3],
);

/// cuDNN's workspaces for PyTorch 2.11's transposed convolutions, as recorded on an H100.
const RECORDED: &[Recorded] = &[
    (
        DType::F32,
        [8, 64, 32, 32],
        [64, 32, 4, 4],
        [2, 2],
        [1, 1],
        [0, 0],
        1,
        [6422675, 0, 7078032],
    ),
    (
        DType::F32,
        [8, 64, 32, 32],
        [64, 16, 3, 3],
        [2, 2],
        [1, 1],
        [1, 1],
        1,
        [0, 0, 4931728],
    ),
    (
        DType::F32,
        [8, 32, 1, 256],
        [32, 16, 1, 4],
        [1, 2],
        [0, 1],
        [0, 0],
        1,
        [0, 532496, 0],
    ),
];

/// The workspaces of a transposed convolution of `x` by `w` producing `out` elements, and
/// whether they are estimated (Note [transposed convolutions]).
fn workspaces(x: &Tensor, w: &Tensor, o: &ConvTransposeOptions, out: usize) -> ([usize; 3], bool) {
    if x.backend().props().is_none() {
        return ([0; 3], false);
    }
    let four = |d: &[usize]| [d[0], d[1], d[2], d[3]];
    let (xd, wd) = (four(x.dims()), four(w.dims()));
    let key = (
        x.dtype(),
        xd,
        wd,
        o.conv.stride,
        o.conv.padding,
        o.output_padding,
        o.conv.groups,
    );
    if let Some(r) = RECORDED
        .iter()
        .find(|r| (r.0, r.1, r.2, r.3, r.4, r.5, r.6) == key)
    {
        return (r.7, false);
    }
    let numel = |r: &Recorded| {
        let o = transposed_size(&ConvTransposeOptions::default(), r.1, r.2);
        o.iter().product::<usize>() as f64
    };
    let nearest = RECORDED
        .iter()
        .filter(|r| r.0 == x.dtype() && [r.2[2], r.2[3]] == [wd[2], wd[3]] && r.3 == o.conv.stride)
        .min_by(|a, b| {
            let d = |r: &Recorded| (out as f64 / numel(r)).ln().abs();
            d(a).total_cmp(&d(b))
        });
    let scaled = nearest.map_or([0; 3], |r| {
        r.7.map(|b| (b as f64 * out as f64 / numel(r)).ceil() as usize)
    });
    super::conv_workspace::note_estimated(format!(
        "transposed {:?} input {:?} weight {:?} stride {:?} padding {:?} groups {}",
        x.dtype(),
        xd,
        wd,
        o.conv.stride,
        o.conv.padding,
        o.conv.groups
    ));
    (scaled, true)
}

/// The output's [N, K, Ho, Wo] of input `x` [N, C, H, W] and weight `w` [C, K/g, R, S]
/// (recorded cases are measured with output padding; the estimate only needs the scale).
fn transposed_size(o: &ConvTransposeOptions, x: [usize; 4], w: [usize; 4]) -> [usize; 4] {
    let c = &o.conv;
    let size = |a: usize| {
        ((x[2 + a] - 1) * c.stride[a] + c.dilation[a] * (w[2 + a] - 1) + o.output_padding[a] + 1)
            .saturating_sub(2 * c.padding[a])
    };
    [x[0], w[1] * c.groups.max(1), size(0), size(1)]
}

/// PyTorch's checks of a transposed convolution; the output's shape.
fn check(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvTransposeOptions,
) -> Result<[usize; 4]> {
    let err = |m: String| Err(TensorError::runtime(m));
    let c = &o.conv;
    if c.stride.contains(&0) || c.dilation.contains(&0) || c.groups == 0 {
        return err("non-positive stride, dilation or groups is not supported".into());
    }
    for a in 0..2 {
        if o.output_padding[a] >= c.stride[a] && o.output_padding[a] >= c.dilation[a] {
            return err(format!(
                "output padding must be smaller than either stride or dilation, but got output_padding_height: {} output_padding_width: {} stride_height: {} stride_width: {} dilation_height: {} dilation_width: {}",
                o.output_padding[0], o.output_padding[1], c.stride[0], c.stride[1], c.dilation[0], c.dilation[1]
            ));
        }
    }
    let (xd, wd) = (x.dims(), w.dims());
    if wd.len() != 4 || xd[1] != wd[0] || wd[0] % c.groups != 0 {
        return err(format!(
            "Given transposed=1, weight of size {:?}, expected input{:?} to have {} channels, but got {} channels instead",
            wd, xd, wd.first().copied().unwrap_or(0), xd[1]
        ));
    }
    let channels = wd[1] * c.groups;
    if let Some(b) = bias {
        if b.dims() != [channels] {
            return err(format!(
                "Given transposed=1, weight of size {:?}, expected bias to be 1-dimensional with {channels} elements, but got bias of size {:?} instead",
                wd, b.dims()
            ));
        }
    }
    for t in [Some(w), bias].into_iter().flatten() {
        if t.dtype() != x.dtype() || t.device() != x.device() {
            return err(format!(
                "Input type ({}) and weight type ({}) should be the same",
                x.type_name(),
                t.type_name()
            ));
        }
    }
    if !x.dtype().is_float() {
        return err(format!(
            "\"conv_transpose2d\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    let four = |d: &[usize]| [d[0], d[1], d[2], d[3]];
    let out = transposed_size(o, four(xd), four(wd));
    if out[2] == 0 || out[3] == 0 {
        return err(format!("Given input size per channel: ({} x {}). Calculated output size per channel: ({} x {}). Output size is too small", xd[2], xd[3], out[2], out[3]));
    }
    Ok(out)
}

impl Tensor {
    /// `F.conv_transpose2d(self, weight, bias, stride, padding, output_padding, groups,
    /// dilation)`; `self` [N, C, H, W] or unbatched [C, H, W], `weight` [C, K/groups, R, S].
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs("conv_transpose2d", &inputs)? {
            return cast[0].conv_transpose2d(&cast[1], cast.get(2), o);
        }
        match self.dim() {
            4 => self.conv_transpose2d_batched(weight, bias, o),
            3 => self.unsqueeze(0)?.conv_transpose2d_batched(weight, bias, o)?.squeeze(Some(0)),
            _ => Err(TensorError::runtime(format!(
                "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: {:?}",
                self.dims()
            ))),
        }
    }

    /// `F.conv_transpose1d`: a 2-D transposed convolution over a height of 1.
    pub fn conv_transpose1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions,
    ) -> Result<Tensor> {
        let batched = match self.dim() {
            3 => self.clone(),
            2 => self.unsqueeze(0)?,
            _ => {
                return Err(TensorError::runtime(format!(
                    "Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: {:?}",
                    self.dims()
                )))
            }
        };
        if weight.dim() != 3 {
            return Err(TensorError::runtime(format!(
                "weight should have at least three dimensions, got a weight of size {:?}",
                weight.dims()
            )));
        }
        let y = batched
            .unsqueeze(2)?
            .conv_transpose2d(&weight.unsqueeze(2)?, bias, o)?
            .squeeze(Some(2))?;
        match self.dim() {
            2 => y.squeeze(Some(0)),
            _ => Ok(y),
        }
    }

    fn conv_transpose2d_batched(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions,
    ) -> Result<Tensor> {
        let shape = check(self, weight, bias, o)?;
        let cl = is_channels_last(self) || is_channels_last(weight);
        let (ws, _) = workspaces(self, weight, o, shape.iter().product());
        let (x, w) = (in_format(self, cl)?, in_format(weight, cl)?);
        let y = empty_in(self, &shape, self.dtype(), cl)?;
        if y.numel() > 0 {
            let scratch = workspace(self, ws[0])?;
            if x.numel() > 0 {
                self.backend().conv2d_backward(
                    &conv(&y, &w, &o.conv),
                    x.operand(),
                    Some(y.operand()),
                    None,
                )?;
            } else {
                self.backend()
                    .fill(y.operand(), super::Scalar::Float(0.0))?;
            }
            drop(scratch);
            if let Some(b) = bias {
                let b = b.detach()?.reshape(&[1, shape[1] as isize, 1, 1])?;
                y.add_scaled_(&b, 1.0)?;
            }
        }
        drop((w, x));
        let inputs: Vec<&Tensor> = [Some(self), Some(weight), bias]
            .into_iter()
            .flatten()
            .collect();
        if needs_grad(&inputs) {
            let saved = TransposeSaved {
                x: SavedTensor::new(self)?,
                weight: SavedTensor::new(weight)?,
                options: *o,
                has_bias: bias.is_some(),
                out: shape.iter().product(),
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
}

/// What the transposed convolution's `ConvolutionBackward0` keeps.
struct TransposeSaved {
    x: SavedTensor,
    weight: SavedTensor,
    options: ConvTransposeOptions,
    has_bias: bool,
    out: usize,
}

impl TransposeSaved {
    /// Note [transposed convolutions]: the gradient made contiguous once, the input's gradient
    /// (a convolution of it), the weight's, the copy freed, then the bias's.
    fn backward(&self, grad: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let (input, weight) = (self.x.get()?, self.weight.get()?);
        let cl = is_channels_last(input) || is_channels_last(weight);
        let (ws, _) = workspaces(input, weight, &self.options, self.out);
        let g = in_format(grad, cl)?;
        let (x, w) = (in_format(input, cl)?, in_format(weight, cl)?);
        let c = conv(&g, &w, &self.options.conv);
        let dx = match mask[0] {
            true => {
                let d = empty_in(input, input.dims(), input.dtype(), cl)?;
                let scratch = workspace(input, ws[1])?;
                if d.numel() > 0 {
                    input.backend().conv2d(&c, None, d.operand())?;
                }
                drop(scratch);
                Some(d)
            }
            false => None,
        };
        let dw = match mask[1] {
            true => {
                let d = empty_in(weight, weight.dims(), weight.dtype(), cl)?;
                let scratch = workspace(weight, ws[2])?;
                match d.numel() > 0 && g.numel() > 0 {
                    true => weight.backend().conv2d_backward(
                        &c,
                        x.operand(),
                        None,
                        Some(d.operand()),
                    )?,
                    false => weight
                        .backend()
                        .fill(d.operand(), super::Scalar::Float(0.0))?,
                }
                drop(scratch);
                Some(d)
            }
            false => None,
        };
        drop((w, x, g));
        let mut out = vec![dx, dw];
        if self.has_bias {
            out.push(match mask[2] {
                true => Some(
                    grad.reduce_raw(crate::device::ReduceOp::Sum, &[0, 2, 3], grad.dtype())?
                        .result_as_shape(&[grad.dims()[1]]),
                ),
                false => None,
            });
        }
        Ok(out)
    }
}
