//! `conv_transpose1d`, `conv_transpose2d` and `conv_transpose3d` (1-D through a 4-D view, as
//! PyTorch's cuDNN path runs it): the output as a convolution's input gradient, cuDNN's
//! workspaces by recorded case, and `ConvolutionBackward0` with the gradient copied once for both
//! of its gradients.

use crate::autograd::{needs_grad, record, SavedTensor};

use super::conv::{batched_or_not, bias_dims, volume, workspace, ConvOptions, Volumes};
use super::conv_workspace::{workspaces_of, CaseNd, RecordedNd, Workspaces};
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
// only for the recorded cases (`tests/parity/py_conv_more.py` and, in 3-D,
// `tests/data/torch_conv3d.json`, on an H100); elsewhere the nearest
// recorded case with the same kernel and stride is scaled by the output's size, and the front
// ends say that it was estimated.

/// A transposed convolution's geometry over `N` spatial dims: a convolution's, and the rows and
/// columns added at the far end of the output (`output_padding`, less than the stride or the
/// dilation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvTransposeOptions<const N: usize = 2> {
    /// Stride, padding, dilation and groups of the convolution it transposes.
    pub conv: ConvOptions<N>,
    /// Extra output size on the far side of each spatial dim.
    pub output_padding: [usize; N],
}

impl<const N: usize> Default for ConvTransposeOptions<N> {
    fn default() -> Self {
        ConvTransposeOptions {
            conv: ConvOptions::default(),
            output_padding: [0; N],
        }
    }
}

/// cuDNN's workspaces for PyTorch 2.11's 2-D transposed convolutions, as recorded on an H100
/// (the 3-D ones are in `conv_workspace_table_3d`).
const TRANSPOSED_2D: &[RecordedNd] = &[
    RecordedNd {
        dtype: DType::F32,
        transposed: true,
        input: &[8, 64, 32, 32],
        weight: &[64, 32, 4, 4],
        stride: &[2, 2],
        padding: &[1, 1],
        extra: &[0, 0],
        groups: 1,
        workspaces: [6422675, 0, 7078032],
        out_numel: 8 * 32 * 64 * 64,
    },
    RecordedNd {
        dtype: DType::F32,
        transposed: true,
        input: &[8, 64, 32, 32],
        weight: &[64, 16, 3, 3],
        stride: &[2, 2],
        padding: &[1, 1],
        extra: &[1, 1],
        groups: 1,
        workspaces: [0, 0, 4931728],
        out_numel: 8 * 16 * 64 * 64,
    },
    RecordedNd {
        dtype: DType::F32,
        transposed: true,
        input: &[8, 32, 1, 256],
        weight: &[32, 16, 1, 4],
        stride: &[1, 2],
        padding: &[0, 1],
        extra: &[0, 0],
        groups: 1,
        workspaces: [0, 532496, 0],
        out_numel: 8 * 16 * 512,
    },
];

/// The workspaces of a transposed convolution of `x` by `w` producing `out` elements
/// (Note [transposed convolutions]); none on the CPU.
fn workspaces<const N: usize>(
    x: &Tensor,
    w: &Tensor,
    o: &ConvTransposeOptions<N>,
    out: usize,
) -> Workspaces {
    if x.backend().props().is_none() {
        return Workspaces::default();
    }
    let case = CaseNd {
        dtype: x.dtype(),
        transposed: true,
        input: x.dims(),
        weight: w.dims(),
        stride: &o.conv.stride,
        padding: &o.conv.padding,
        extra: &o.output_padding,
        groups: o.conv.groups,
        out_numel: out,
    };
    workspaces_of(&case, TRANSPOSED_2D)
}

/// The output's shape [N, K, …] of input `x` [N, C, …] and weight `w` [C, K/g, …].
fn transposed_size<const N: usize>(
    o: &ConvTransposeOptions<N>,
    x: &[usize],
    w: &[usize],
) -> Vec<usize> {
    let c = &o.conv;
    let size = |a: usize| {
        ((x[2 + a] - 1) * c.stride[a] + c.dilation[a] * (w[2 + a] - 1) + o.output_padding[a] + 1)
            .saturating_sub(2 * c.padding[a])
    };
    [x[0], w[1] * c.groups.max(1)]
        .into_iter()
        .chain((0..N).map(size))
        .collect()
}

/// The names PyTorch's messages give the spatial dims of an `N`-D convolution.
fn axis_names<const N: usize>() -> &'static [&'static str] {
    &["depth", "height", "width"][3 - N..]
}

/// PyTorch's checks of a transposed convolution (`op`); the output's shape.
fn check<const N: usize>(
    op: &str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvTransposeOptions<N>,
) -> Result<Vec<usize>> {
    let err = |m: String| Err(TensorError::runtime(m));
    let c = &o.conv;
    if c.stride.contains(&0) || c.dilation.contains(&0) || c.groups == 0 {
        return err("non-positive stride, dilation or groups is not supported".into());
    }
    if (0..N).any(|a| o.output_padding[a] >= c.stride[a] && o.output_padding[a] >= c.dilation[a]) {
        let names = axis_names::<N>();
        let list = |what: &str, v: &[usize]| {
            let parts: Vec<String> = names
                .iter()
                .zip(v)
                .map(|(n, v)| format!("{what}_{n}: {v}"))
                .collect();
            parts.join(" ")
        };
        return err(format!(
            "output padding must be smaller than either stride or dilation, but got {} {} {}",
            list("output_padding", &o.output_padding),
            list("stride", &c.stride),
            list("dilation", &c.dilation)
        ));
    }
    let (xd, wd) = (x.dims(), w.dims());
    if wd.len() != N + 2 || xd[1] != wd[0] || wd[0] % c.groups != 0 {
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
            "\"{op}\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    let out = transposed_size(o, xd, wd);
    if out[2..].contains(&0) {
        let by = |v: &[usize]| {
            let v: Vec<String> = v.iter().map(|d| d.to_string()).collect();
            v.join(" x ")
        };
        return err(format!("Given input size per channel: ({}). Calculated output size per channel: ({}). Output size is too small", by(&xd[2..]), by(&out[2..])));
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
        self.conv_transpose_nd("conv_transpose2d", weight, bias, o)
    }

    /// `F.conv_transpose3d(…)`: `self` [N, C, D, H, W] or unbatched [C, D, H, W], `weight`
    /// [C, K/groups, T, R, S].
    pub fn conv_transpose3d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions<3>,
    ) -> Result<Tensor> {
        self.conv_transpose_nd("conv_transpose3d", weight, bias, o)
    }

    /// A transposed convolution over `N` spatial dims, batched or not, under autocast.
    fn conv_transpose_nd<const N: usize>(
        &self,
        op: &'static str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions<N>,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs(op, &inputs)? {
            return cast[0].conv_transpose_nd(op, &cast[1], cast.get(2), o);
        }
        batched_or_not(self, N, op, |x| {
            x.conv_transpose_batched(op, weight, bias, o)
        })
    }

    /// `F.conv_transpose1d`: a 2-D transposed convolution over a height of 1.
    pub fn conv_transpose1d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions,
    ) -> Result<Tensor> {
        batched_or_not(self, 1, "conv_transpose1d", |x| {
            if weight.dim() != 3 {
                return Err(TensorError::runtime(format!(
                    "weight should have at least three dimensions, got a weight of size {:?}",
                    weight.dims()
                )));
            }
            x.unsqueeze(2)?
                .conv_transpose2d(&weight.unsqueeze(2)?, bias, o)?
                .squeeze(Some(2))
        })
    }

    fn conv_transpose_batched<const N: usize>(
        &self,
        op: &str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvTransposeOptions<N>,
    ) -> Result<Tensor> {
        let shape = check(op, self, weight, bias, o)?;
        let cl = is_channels_last(self) || is_channels_last(weight);
        let out = shape.iter().product();
        let ws = workspaces(self, weight, o, out);
        let (x, w) = (in_format(self, cl)?, in_format(weight, cl)?);
        let y = empty_in(self, &shape, self.dtype(), cl)?;
        if y.numel() > 0 {
            let scratch = workspace(self, ws.forward)?;
            if x.numel() > 0 {
                let v = Volumes::new(&y, &w, &o.conv);
                self.backend().conv_backward(
                    &v.conv(),
                    volume(&x).operand(),
                    Some(volume(&y).operand()),
                    None,
                )?;
            } else {
                self.backend()
                    .fill(y.operand(), super::Scalar::Float(0.0))?;
            }
            drop(scratch);
            if let Some(b) = bias {
                let mut dims = vec![1isize; N + 2];
                dims[1] = shape[1] as isize;
                let b = b.detach()?.reshape(&dims)?;
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
                out,
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
struct TransposeSaved<const N: usize> {
    x: SavedTensor,
    weight: SavedTensor,
    options: ConvTransposeOptions<N>,
    has_bias: bool,
    out: usize,
}

impl<const N: usize> TransposeSaved<N> {
    /// Note [transposed convolutions]: the gradient made contiguous once, the input's gradient
    /// (a convolution of it), the weight's, the copy freed, then the bias's.
    fn backward(&self, grad: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let (input, weight) = (self.x.get()?, self.weight.get()?);
        let cl = is_channels_last(input) || is_channels_last(weight);
        let ws = workspaces(input, weight, &self.options, self.out);
        let g = in_format(grad, cl)?;
        let (x, w) = (in_format(input, cl)?, in_format(weight, cl)?);
        let v = Volumes::new(&g, &w, &self.options.conv);
        let c = v.conv();
        let dx = match mask[0] {
            true => {
                let d = empty_in(input, input.dims(), input.dtype(), cl)?;
                let scratch = workspace(input, ws.input_grad)?;
                if d.numel() > 0 {
                    input.backend().conv(&c, None, volume(&d).operand())?;
                }
                drop(scratch);
                Some(d)
            }
            false => None,
        };
        let dw = match mask[1] {
            true => {
                let d = empty_in(weight, weight.dims(), weight.dtype(), cl)?;
                let scratch = workspace(weight, ws.weight_grad)?;
                match d.numel() > 0 && g.numel() > 0 {
                    true => weight.backend().conv_backward(
                        &c,
                        volume(&x).operand(),
                        None,
                        Some(volume(&d).operand()),
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
        drop((v, w, x, g));
        let mut out = vec![dx, dw];
        if self.has_bias {
            out.push(match mask[2] {
                true => Some(
                    grad.reduce_raw(crate::device::ReduceOp::Sum, &bias_dims(N), grad.dtype())?
                        .result_as_shape(&[grad.dims()[1]]),
                ),
                false => None,
            });
        }
        Ok(out)
    }
}
