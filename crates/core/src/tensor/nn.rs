//! `layer_norm` (PyTorch's native_layer_norm and its backward, with the same buffers) and
//! `dropout` (the fused kernel's output and bool mask).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::LayerNormGrads;

use super::{DType, Layout, Result, Tensor, TensorError};

fn shape_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

/// PyTorch's `_check_layer_norm_inputs`: the rows (M) and row length (N).
pub(super) fn check_layer_norm(
    x: &Tensor,
    shape: &[usize],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<(usize, usize)> {
    if shape.is_empty() {
        return Err(TensorError::runtime(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []",
        ));
    }
    for (t, name) in [(weight, "weight"), (bias, "bias")] {
        if let Some(t) = t {
            if t.dims() != shape {
                return Err(TensorError::runtime(format!(
                    "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                    shape_str(t.dims()),
                    shape_str(shape)
                )));
            }
            x.check_same_device(t)?;
        }
    }
    let d = x.dims();
    if d.len() < shape.len() || &d[d.len() - shape.len()..] != shape {
        let tail: String = shape.iter().map(|s| format!(", {s}")).collect();
        return Err(TensorError::runtime(format!(
            "Given normalized_shape={}, expected input with shape [*{tail}], but got input of size{}",
            shape_str(shape),
            shape_str(d)
        )));
    }
    if !x.dtype().is_float() {
        return Err(TensorError::runtime(format!(
            "\"LayerNormKernelImpl\" not implemented for '{}'",
            x.dtype().scalar_type_name()
        )));
    }
    let n: usize = shape.iter().product();
    let m = d[..d.len() - shape.len()].iter().product();
    Ok((m, n))
}

/// The weight and bias among `cast` (input, then the weight and bias that were given).
fn layer_norm_params(
    cast: &[Tensor],
    weight: bool,
    bias: bool,
) -> (Option<&Tensor>, Option<&Tensor>) {
    let w = weight.then(|| &cast[1]);
    let b = bias.then(|| &cast[1 + weight as usize]);
    (w, b)
}

/// The dtype of layer norm's saved statistics (PyTorch's accumulate type on CUDA).
pub(super) fn stat_dtype(t: DType) -> DType {
    if t == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// `t` itself when contiguous, else a contiguous copy (PyTorch's `expect_contiguous`).
pub(super) fn expect_contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        t.contiguous_copy()
    }
}

impl Tensor {
    pub(crate) fn check_same_device(&self, other: &Tensor) -> Result<()> {
        if self.device() != other.device() {
            return Err(super::math::device_mismatch(self.device(), other.device()));
        }
        Ok(())
    }

    /// `F.layer_norm(self, shape, weight, bias, eps)` over the trailing dims `shape`.
    pub fn layer_norm(
        &self,
        shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let mut inputs = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        if let Some((cast, _off)) = super::autocast::cast_inputs("layer_norm", &inputs)? {
            let (w, b) = layer_norm_params(&cast, weight.is_some(), bias.is_some());
            return cast[0].layer_norm(shape, w, b, eps);
        }
        let (m, n) = check_layer_norm(self, shape, weight, bias)?;
        let x = expect_contiguous(self)?;
        let w = weight.map(expect_contiguous).transpose()?;
        let b = bias.map(expect_contiguous).transpose()?;
        let y = self.empty_same(self.dims(), self.dtype())?;
        let mean = self.empty_same(&[m], stat_dtype(self.dtype()))?;
        let rstd = self.empty_same(&[m], stat_dtype(self.dtype()))?;
        if m > 0 {
            let rows = Layout::contiguous(&[m, n]);
            self.backend().layer_norm(
                x.operand_with(&rows),
                w.as_ref().map(|w| w.operand()),
                b.as_ref().map(|b| b.operand()),
                eps,
                y.operand_with(&rows),
                Some(mean.operand()),
                rstd.operand(),
            )?;
        }
        drop((b, w, x));
        let inputs: Vec<&Tensor> = [Some(self), weight, bias].into_iter().flatten().collect();
        if needs_grad(&inputs) {
            let saved = LayerNormSaved {
                x: SavedTensor::new(self)?,
                weight: weight.map(SavedTensor::new).transpose()?,
                mean: SavedTensor::new(&mean)?,
                rstd: SavedTensor::new(&rstd)?,
                has_bias: bias.is_some(),
                rows: (m, n),
            };
            record(
                &y,
                "NativeLayerNormBackward0",
                &inputs,
                true,
                Box::new(move |g, mask| saved.backward(g, mask)),
            );
        }
        // PyTorch drops the rest of native_layer_norm's (Y, mean, rstd) in that order.
        drop(mean);
        drop(rstd);
        Ok(y)
    }
}

/// What layer norm's backward keeps: the input, the weight, and the per-row statistics.
struct LayerNormSaved {
    x: SavedTensor,
    weight: Option<SavedTensor>,
    mean: SavedTensor,
    rstd: SavedTensor,
    has_bias: bool,
    rows: (usize, usize),
}

impl LayerNormSaved {
    /// PyTorch's `layer_norm_backward_cuda`: dX, dgamma, dbeta, then the contiguous dY, and
    /// for very many short rows partial sums per row block, reduced by `sum(0)`.
    fn backward(&self, g: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let (m, n) = self.rows;
        let input = self.x.get()?;
        let x = expect_contiguous(input)?;
        let weight = self.weight.as_ref().map(|w| w.get()).transpose()?;
        let want_w = weight.is_some() && mask[1];
        let want_b = self.has_bias && mask[mask.len() - 1];
        let dx = if mask[0] {
            Some(input.empty_same(input.dims(), input.dtype())?)
        } else {
            None
        };
        let grad_of = |want: bool| -> Result<Option<Tensor>> {
            match want {
                false => Ok(None),
                true if m == 0 => Ok(Some(Tensor::zeros(&[n], &input.like_options())?)),
                true => Ok(Some(input.empty_same(&[n], input.dtype())?)),
            }
        };
        let mut dw = grad_of(want_w)?;
        let mut db = grad_of(want_b)?;
        if m > 0 && n > 0 {
            let dy = expect_contiguous(g)?;
            let parts = partial_blocks(input, m, n);
            let (pw, pb) = match parts {
                Some(p) => (
                    dw.as_ref()
                        .map(|_| input.empty_same(&[p, n], input.dtype()))
                        .transpose()?,
                    db.as_ref()
                        .map(|_| input.empty_same(&[p, n], input.dtype()))
                        .transpose()?,
                ),
                None => (None, None),
            };
            let rows = Layout::contiguous(&[m, n]);
            let (tw, tb) = (pw.as_ref().or(dw.as_ref()), pb.as_ref().or(db.as_ref()));
            input.backend().layer_norm_backward(
                dy.operand_with(&rows),
                x.operand_with(&rows),
                Some(self.mean.get()?.operand()),
                self.rstd.get()?.operand(),
                weight.map(|w| w.operand()),
                LayerNormGrads {
                    dx: dx.as_ref().map(|d| d.operand_with(&rows)),
                    dweight: tw.map(|t| t.operand()),
                    dbias: tb.map(|t| t.operand()),
                    parts: parts.unwrap_or(1),
                },
            )?;
            // `*dgamma = dgamma_blocks.sum(0)` replaces the gradient made above.
            if let Some(p) = &pw {
                dw = Some(sum_rows(p)?);
            }
            if let Some(p) = &pb {
                db = Some(sum_rows(p)?);
            }
            drop((pb, pw, dy));
        }
        drop(x);
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

/// `p.sum(0)` of a [parts, n] buffer, as the [n] gradient.
fn sum_rows(p: &Tensor) -> Result<Tensor> {
    let n = p.dims()[1];
    Ok(p.reduce_raw(crate::device::ReduceOp::Sum, &[0], p.dtype())?
        .result_as_shape(&[n]))
}

/// A float as Python prints it (`2.0`, `1.5`).
fn python_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Row blocks of PyTorch's gamma/beta backward when rows vastly outnumber the row length
/// (M > 64Ki and N / 32 < SMs / 2 on a CUDA device): how many partial sums it allocates.
fn partial_blocks(t: &Tensor, m: usize, n: usize) -> Option<usize> {
    let sms = t.backend().props()?.sm_count;
    if !(m > 64 * 1024 && n / 32 < sms / 2) {
        return None;
    }
    let blocks_x = n.div_ceil(32).max(1);
    Some((32 * 1024 / blocks_x).min(m.div_ceil(32)))
}

impl Tensor {
    /// `F.dropout(self, p, training)`: in training, PyTorch's fused kernel on a GPU (a bool mask
    /// kept for backward, then the output); otherwise the input itself.
    pub fn dropout(&self, p: f64, training: bool) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(TensorError::value(format!(
                "dropout probability has to be between 0 and 1, but got {}",
                python_float(p)
            )));
        }
        super::check_interrupt()?;
        if !training || p == 0.0 || self.numel() == 0 {
            return Ok(self.clone());
        }
        if p == 1.0 {
            let zero = Tensor::zeros(&[], &self.like_options())?;
            return self.mul(&zero);
        }
        if !self.dtype().is_float() {
            return Err(TensorError::runtime(format!(
                "\"fused_dropout\" not implemented for '{}'",
                self.dtype().scalar_type_name()
            )));
        }
        let mask = self.empty_same(self.dims(), DType::Bool)?;
        let out = self.empty_same(self.dims(), self.dtype())?;
        let seed = super::random::next_seed(self.device());
        self.backend()
            .dropout(self.operand(), p, seed, mask.operand(), out.operand())?;
        if needs_grad(&[self]) {
            let keep = SavedTensor::new(&mask)?;
            let scale = 1.0 / (1.0 - p);
            record(
                &out,
                "NativeDropoutBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let dst = g.empty_same(g.dims(), g.dtype())?;
                    g.backend().dropout_backward(
                        g.operand(),
                        keep.get()?.operand(),
                        scale,
                        dst.operand(),
                    )?;
                    Ok(vec![Some(dst)])
                }),
            );
        }
        drop(mask);
        Ok(out)
    }
}
