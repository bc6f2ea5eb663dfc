//! `interpolate` in nearest and bilinear modes over [N, C, H, W]: the output in the input's
//! memory format, the per-axis ratio PyTorch's kernels index with, and a backward that takes
//! one buffer, the input's gradient.

use crate::autograd::{needs_grad, record};
use crate::device::backend::Upsample;
pub use crate::device::backend::UpsampleMode;

use super::memory_format::{empty_in, is_channels_last};
use super::{Result, Tensor, TensorError};

impl Tensor {
    /// Resize the last two dims to `size`. `scales` are the `scale_factor`s the caller gave
    /// (PyTorch indexes with their inverse when given, else with input / output sizes).
    pub fn upsample2d(
        &self,
        size: [usize; 2],
        scales: Option<[f64; 2]>,
        mode: UpsampleMode,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        if self.dim() != 4 {
            return Err(TensorError::runtime(format!(
                "torchlet: 2-D interpolation needs a 4-D input [N, C, H, W], got {}-D",
                self.dim()
            )));
        }
        let d = self.dims();
        if d[2] == 0 || d[3] == 0 || size[0] == 0 || size[1] == 0 {
            return Err(TensorError::runtime(format!(
                "Input and output sizes should be greater than 0, but got input (H: {}, W: {}) output (H: {}, W: {})",
                d[2], d[3], size[0], size[1]
            )));
        }
        if !self.dtype().is_float() {
            return Err(TensorError::runtime(format!(
                "\"{}\" not implemented for '{}'",
                kernel_name(mode),
                self.dtype().scalar_type_name()
            )));
        }
        let ratio = [0, 1].map(|a| ratio(d[2 + a], size[a], scales.map(|s| s[a]), mode));
        let shape = [d[0], d[1], size[0], size[1]];
        let out = empty_in(self, &shape, self.dtype(), is_channels_last(self))?;
        let u = Upsample {
            x: self.operand(),
            mode,
            ratio,
        };
        if out.numel() > 0 {
            self.backend().upsample2d(&u, out.operand())?;
        }
        if needs_grad(&[self]) {
            let input = self.shape();
            let node = match mode {
                UpsampleMode::Nearest => "UpsampleNearest2DBackward0",
                UpsampleMode::Bilinear { .. } => "UpsampleBilinear2DBackward0",
            };
            record(
                &out,
                node,
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(upsample_backward(g, &input, mode, ratio)?)])),
            );
        }
        Ok(out)
    }
}

/// The name PyTorch's dtype dispatch gives in its error.
fn kernel_name(mode: UpsampleMode) -> &'static str {
    match mode {
        UpsampleMode::Nearest => "upsample_nearest2d_out_frame",
        UpsampleMode::Bilinear { .. } => "upsample_bilinear2d_out_frame",
    }
}

/// The ratio output positions are scaled by along one axis (`area_pixel_compute_scale`).
fn ratio(input: usize, output: usize, scale: Option<f64>, mode: UpsampleMode) -> f32 {
    match (mode, scale) {
        (
            UpsampleMode::Bilinear {
                align_corners: true,
            },
            _,
        ) if output > 1 => (input - 1) as f32 / (output - 1) as f32,
        (
            UpsampleMode::Bilinear {
                align_corners: true,
            },
            _,
        ) => 0.0,
        (_, Some(s)) if s > 0.0 => (1.0 / s) as f32,
        _ => input as f32 / output as f32,
    }
}

/// The input's gradient: allocated first, in the gradient's memory format; a gradient that is
/// not dense is made contiguous after it (the kernels' `grad_output.contiguous()`).
fn upsample_backward(
    g: &Tensor,
    input: &[usize],
    mode: UpsampleMode,
    ratio: [f32; 2],
) -> Result<Tensor> {
    let cl = is_channels_last(g);
    let dx = empty_in(g, input, g.dtype(), cl)?;
    let dout = if g.is_contiguous() || cl {
        g.clone()
    } else {
        g.contiguous_copy()?
    };
    let u = Upsample {
        x: dx.operand(),
        mode,
        ratio,
    };
    if dx.numel() > 0 {
        g.backend()
            .upsample2d_backward(&u, dout.operand(), dx.operand())?;
    }
    Ok(dx)
}
