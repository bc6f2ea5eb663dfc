//! `conv1d`, `conv2d` and `conv3d` (a 1-D convolution through a 4-D view, as PyTorch's cuDNN
//! path runs it): PyTorch's checks and messages, the output in the input's memory format, cuDNN's
//! workspaces on CUDA devices (`conv_workspace`), and `ConvolutionBackward0` with the gradients in
//! PyTorch's order. The backends see every convolution over (depth, height, width).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::Conv;

use super::conv_workspace::{workspaces, workspaces_nd, ConvCase, Workspaces};
use super::memory_format::{empty_in, in_format, is_channels_last};
use super::{DType, Result, Tensor, TensorError};

/// The geometry of a convolution over `N` spatial dims ((height, width) for 2-D, (depth, height,
/// width) for 3-D), each per axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvOptions<const N: usize = 2> {
    /// Step of the window.
    pub stride: [usize; N],
    /// Implicit zeros on each side.
    pub padding: [usize; N],
    /// Spacing of the window's taps.
    pub dilation: [usize; N],
    /// Channel groups.
    pub groups: usize,
}

impl<const N: usize> Default for ConvOptions<N> {
    fn default() -> Self {
        ConvOptions {
            stride: [1; N],
            padding: [0; N],
            dilation: [1; N],
            groups: 1,
        }
    }
}

/// Per-axis values over (depth, height, width): a 2-D geometry's `v` after a depth of `fill`.
pub(super) fn over_volume<const N: usize>(v: [usize; N], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - N..].copy_from_slice(&v);
    out
}

/// `t` [N, C, H, W] seen as [N, C, 1, H, W] (a 5-D tensor is itself): what the backends take.
pub(super) fn volume(t: &Tensor) -> Tensor {
    if t.dim() != 4 {
        return t.clone();
    }
    let mut layout = t.layout().clone();
    layout.shape.insert(2, 1);
    layout
        .strides
        .insert(2, layout.strides[2] * layout.shape[3]);
    t.view_as_layout(layout)
}

/// A convolution's input and weight seen over (depth, height, width), with its geometry.
pub(super) struct Volumes {
    x: Tensor,
    w: Tensor,
    stride: [usize; 3],
    padding: [usize; 3],
    dilation: [usize; 3],
    groups: usize,
}

impl Volumes {
    /// The convolution of `x` by `w` (4-D or 5-D alike) under `o`.
    pub(super) fn new<const N: usize>(x: &Tensor, w: &Tensor, o: &ConvOptions<N>) -> Volumes {
        Volumes {
            x: volume(x),
            w: volume(w),
            stride: over_volume(o.stride, 1),
            padding: over_volume(o.padding, 0),
            dilation: over_volume(o.dilation, 1),
            groups: o.groups,
        }
    }

    /// The backend's view of it.
    pub(super) fn conv(&self) -> Conv<'_> {
        Conv {
            x: self.x.operand(),
            w: self.w.operand(),
            stride: self.stride,
            padding: self.padding,
            dilation: self.dilation,
            groups: self.groups,
        }
    }
}

fn shape_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// Sizes as PyTorch's messages print them: `(3 x 3)`.
fn by(v: &[usize]) -> String {
    let v: Vec<String> = v.iter().map(|d| d.to_string()).collect();
    format!("({})", v.join(" x "))
}

/// PyTorch's `check_shape_forward` and type checks for `op`; the output's spatial sizes.
fn check<const N: usize>(
    op: &str,
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    o: &ConvOptions<N>,
) -> Result<[usize; N]> {
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
    if wd.len() < 3 {
        return err(format!(
            "weight should have at least three dimensions, got a weight of size {}",
            shape_str(wd)
        ));
    }
    if wd.len() != N + 2 {
        return err(format!("Expected {}-dimensional input for {}-dimensional weight {}, but got {}-dimensional input of size {} instead", wd.len(), wd.len(), shape_str(wd), xd.len(), shape_str(xd)));
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
            "\"{op}\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        ));
    }
    let padded: [usize; N] = std::array::from_fn(|a| xd[2 + a] + 2 * o.padding[a]);
    let span: [usize; N] = std::array::from_fn(|a| o.dilation[a] * (wd[2 + a] - 1) + 1);
    if (0..N).any(|a| padded[a] < span[a]) {
        return err(format!("Calculated padded input size per channel: {}. Kernel size: {}. Kernel size can't be greater than actual input size", by(&padded), by(&span)));
    }
    Ok(std::array::from_fn(|a| {
        (padded[a] - span[a]) / o.stride[a] + 1
    }))
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
        self.conv_nd("conv2d", weight, bias, o)
    }

    /// `F.conv3d(self, weight, bias, stride, padding, dilation, groups)`; `self` [N, C, D, H, W]
    /// or unbatched [C, D, H, W].
    pub fn conv3d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvOptions<3>,
    ) -> Result<Tensor> {
        self.conv_nd("conv3d", weight, bias, o)
    }

    /// A convolution over `N` spatial dims, batched or not, under autocast's casts for `op`.
    fn conv_nd<const N: usize>(
        &self,
        op: &'static str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvOptions<N>,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs(op, &inputs)? {
            return cast[0].conv_nd(op, &cast[1], cast.get(2), o);
        }
        batched_or_not(self, N, op, |x| x.conv_batched(op, weight, bias, o))
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
        let o = ConvOptions {
            stride: [1, stride],
            padding: [0, padding],
            dilation: [1, dilation],
            groups,
        };
        batched_or_not(self, 1, "conv1d", |x| {
            if weight.dim() != 3 {
                return Err(TensorError::runtime(format!(
                    "weight should have at least three dimensions, got a weight of size {}",
                    shape_str(weight.dims())
                )));
            }
            x.unsqueeze(2)?
                .conv2d(&weight.unsqueeze(2)?, bias, &o)?
                .squeeze(Some(2))
        })
    }

    fn conv_batched<const N: usize>(
        &self,
        op: &str,
        weight: &Tensor,
        bias: Option<&Tensor>,
        o: &ConvOptions<N>,
    ) -> Result<Tensor> {
        let spatial = check(op, self, weight, bias, o)?;
        let cl = is_channels_last(self) || is_channels_last(weight);
        let ws = conv_workspaces(self, weight, o, cl);
        let x = in_format(self, cl)?;
        let w = in_format(weight, cl)?;
        let mut shape = vec![self.dims()[0], weight.dims()[0]];
        shape.extend(spatial);
        let y = empty_in(self, &shape, self.dtype(), cl)?;
        if y.numel() > 0 {
            let scratch = workspace(self, ws.forward)?;
            let v = Volumes::new(&x, &w, o);
            self.backend()
                .conv(&v.conv(), bias.map(|b| b.operand()), volume(&y).operand())?;
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
}

/// `f` of `x` with a batch dim: `x` itself when it has `n` spatial dims and a batch, else `x`
/// with a batch of one, the result without it; any other rank is PyTorch's error for `op`.
pub(super) fn batched_or_not(
    x: &Tensor,
    n: usize,
    op: &str,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    match x.dim() {
        d if d == n + 2 => f(x),
        d if d == n + 1 => f(&x.unsqueeze(0)?)?.squeeze(Some(0)),
        _ => Err(TensorError::runtime(format!(
            "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {}",
            n + 1,
            n + 2,
            shape_str(x.dims())
        ))),
    }
}

/// cuDNN's workspaces for a convolution of `x` by `w` on a CUDA device; none on the CPU.
fn conv_workspaces<const N: usize>(
    x: &Tensor,
    w: &Tensor,
    o: &ConvOptions<N>,
    channels_last: bool,
) -> Workspaces {
    if x.backend().props().is_none() {
        return Workspaces::default();
    }
    if N != 2 {
        return workspaces_nd(x.dtype(), x.dims(), w.dims(), o);
    }
    let four = |d: &[usize]| [d[0], d[1], d[2], d[3]];
    let two = |v: [usize; N]| [v[0], v[1]];
    workspaces(&ConvCase {
        dtype: x.dtype(),
        input: four(x.dims()),
        weight: four(w.dims()),
        stride: two(o.stride),
        padding: two(o.padding),
        dilation: two(o.dilation),
        groups: o.groups,
        channels_last,
    })
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

/// What `ConvolutionBackward0` keeps, fields in the order PyTorch's node releases them.
struct ConvSaved<const N: usize> {
    x: SavedTensor,
    weight: SavedTensor,
    options: ConvOptions<N>,
    has_bias: bool,
}

impl<const N: usize> ConvSaved<N> {
    /// PyTorch's `convolution_backward`: the input's and the weight's gradients (in the order and
    /// with the workspaces of the backend's kernels), then the bias's, `grad.sum([0, 2, 3])`
    /// (and dim 4 in 3-D).
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
        let ws = conv_workspaces(input, weight, &self.options, cl);
        let permuted = super::convert::is_dense(grad) && !grad.is_contiguous();
        let upfront = if ws.weight_grad_first || !permuted || cl {
            grad.clone()
        } else {
            in_format(grad, false)?
        };
        let g = &upfront;
        let (x, w) = (in_format(input, cl)?, in_format(weight, cl)?);
        let shared = ws.weight_grad_first.then(|| in_format(g, cl)).transpose()?;
        let v = Volumes::new(&x, &w, &self.options);
        let c = v.conv();
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
                    let (dout, d5) = (volume(&dout), volume(&d));
                    let (dx, dw) = if input_grad {
                        (Some(d5.operand()), None)
                    } else {
                        (None, Some(d5.operand()))
                    };
                    t.backend().conv_backward(&c, dout.operand(), dx, dw)?;
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
        drop((shared, v, w, x, upfront));
        let mut out = vec![dx, dw];
        if self.has_bias {
            let db = match mask[2] {
                true => Some(
                    grad.reduce_raw(crate::device::ReduceOp::Sum, &bias_dims(N), grad.dtype())?
                        .result_as_shape(&[grad.dims()[1]]),
                ),
                false => None,
            };
            out.push(db);
        }
        Ok(out)
    }
}

/// The dims a bias's gradient sums over: the batch and every spatial dim of `n`.
pub(super) fn bias_dims(n: usize) -> Vec<usize> {
    std::iter::once(0).chain(2..n + 2).collect()
}
