//! `rms_norm` as PyTorch's fused CUDA kernel runs it (`_fused_rms_norm`): the output and a float
//! `rstd` per row, saved for `FusedRmsNormBackward0`; the backend runs it as a layer norm
//! without the mean.

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::backend::LayerNormGrads;

use super::nn::{check_layer_norm, expect_contiguous, stat_dtype};
use super::{DType, Layout, Result, Tensor, TensorError};

impl Tensor {
    /// `F.rms_norm(self, shape, weight, eps)`: `x / sqrt(mean(x²) + eps) * weight` over the last
    /// `shape.len()` dims; `eps` defaults to the machine epsilon of the float type computed in.
    pub fn rms_norm(
        &self,
        shape: &[usize],
        weight: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let (m, n) = check_layer_norm(self, shape, weight, None)?;
        if let Some(w) = weight.filter(|w| w.dtype() != self.dtype()) {
            return Err(TensorError::runtime(format!(
                "torchlet: rms_norm of {} input with a {} weight is not supported yet; give both one dtype (e.g. module.to(dtype))",
                self.dtype().scalar_type_name(),
                w.dtype().scalar_type_name()
            )));
        }
        let eps = eps.unwrap_or(match self.dtype() {
            DType::F64 => f64::EPSILON,
            _ => f32::EPSILON as f64,
        });
        let x = expect_contiguous(self)?;
        let w = weight.map(expect_contiguous).transpose()?;
        let y = self.empty_same(self.dims(), self.dtype())?;
        let rstd = self.empty_same(&[m], stat_dtype(self.dtype()))?;
        if m > 0 {
            let rows = Layout::contiguous(&[m, n]);
            self.backend().layer_norm(
                x.operand_with(&rows),
                w.as_ref().map(|w| w.operand()),
                None,
                eps,
                y.operand_with(&rows),
                None,
                rstd.operand(),
            )?;
        }
        drop((w, x));
        let inputs: Vec<&Tensor> = [Some(self), weight].into_iter().flatten().collect();
        if needs_grad(&inputs) {
            let saved = RmsNormSaved {
                x: SavedTensor::new(self)?,
                weight: weight.map(SavedTensor::new).transpose()?,
                rstd: SavedTensor::new(&rstd)?,
                rows: (m, n),
            };
            record(
                &y,
                "FusedRmsNormBackward0",
                &inputs,
                true,
                Box::new(move |g, mask| saved.backward(g, mask)),
            );
        }
        drop(rstd);
        Ok(y)
    }
}

/// What rms norm's backward keeps: the input, the weight and the per-row `rstd`.
struct RmsNormSaved {
    x: SavedTensor,
    weight: Option<SavedTensor>,
    rstd: SavedTensor,
    rows: (usize, usize),
}

impl RmsNormSaved {
    /// `_fused_rms_norm_backward`: dX, then dgamma (no partial sums), from the contiguous dY.
    fn backward(&self, g: &Tensor, mask: &[bool]) -> Result<Vec<Option<Tensor>>> {
        let (m, n) = self.rows;
        let input = self.x.get()?;
        let weight = self.weight.as_ref().map(|w| w.get()).transpose()?;
        let dx = mask[0]
            .then(|| input.empty_same(input.dims(), input.dtype()))
            .transpose()?;
        // No rows: the weight's gradient is a sum of nothing, zeros (as layer norm's).
        let dw = (weight.is_some() && mask[mask.len() - 1])
            .then(|| match m {
                0 => Tensor::zeros(&[n], &input.like_options()),
                _ => input.empty_same(&[n], input.dtype()),
            })
            .transpose()?;
        if m > 0 && n > 0 {
            let x = expect_contiguous(input)?;
            let dy = expect_contiguous(g)?;
            let rows = Layout::contiguous(&[m, n]);
            input.backend().layer_norm_backward(
                dy.operand_with(&rows),
                x.operand_with(&rows),
                None,
                self.rstd.get()?.operand(),
                weight.map(|w| w.operand()),
                LayerNormGrads {
                    dx: dx.as_ref().map(|d| d.operand_with(&rows)),
                    dweight: dw.as_ref().map(|d| d.operand()),
                    dbias: None,
                    parts: 1,
                },
            )?;
        }
        let mut out = vec![dx];
        if weight.is_some() {
            out.push(dw);
        }
        Ok(out)
    }
}
