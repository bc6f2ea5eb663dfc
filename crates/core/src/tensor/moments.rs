//! Variance and standard deviation (`var`, `std`, `var_mean`, `std_mean`) over any dims with any
//! correction: the values computed on the host (Note [host sorting]), the device memory PyTorch's
//! Welford reduction takes (its outputs and staging); and their backward, as PyTorch composes it.

use crate::autograd::{needs_grad, record_multi, SavedTensor};
use crate::device::reduce_plan::KernelTraits;
use crate::device::BinaryOp;
use torchlet_alloc::types::element::{load_f64, store_f64};

use super::layout::wrap_dim;
use super::reduce::Staged;
use super::{DType, Result, Scalar, Tensor, TensorError};

/// What a variance reduction computes: over which dims (all when empty), with which correction
/// (1 is Bessel's), whether the reduced dims stay, and whether it is the standard deviation.
#[derive(Clone, Debug)]
pub struct Moments {
    /// The reduced dims, as given (negative counts from the end); empty: every dim.
    pub dims: Vec<isize>,
    /// Subtracted from the element count in the divisor (`unbiased=True` is 1).
    pub correction: f64,
    /// Whether the reduced dims stay, of size 1.
    pub keepdim: bool,
    /// The square root of the variance (`std`) rather than the variance.
    pub take_sqrt: bool,
}

impl Moments {
    fn node(&self, with_mean: bool) -> &'static str {
        match (self.take_sqrt, with_mean) {
            (true, false) => "StdBackward0",
            (false, false) => "VarBackward0",
            (true, true) => "StdMeanBackward0",
            (false, true) => "VarMeanBackward0",
        }
    }
}

impl Tensor {
    /// `var`/`std` (`with_mean`: `var_mean`/`std_mean`, which also return the mean).
    pub fn moments(&self, m: &Moments, with_mean: bool) -> Result<(Tensor, Option<Tensor>)> {
        super::check_interrupt()?;
        if !self.dtype().is_float() {
            return Err(TensorError::runtime(
                "std and var only support floating point and complex dtypes",
            ));
        }
        let dims = self.moment_dims(&m.dims)?;
        let mut kept = self.shape();
        for &d in &dims {
            kept[d] = 1;
        }
        let shape: Vec<usize> = if m.keepdim {
            kept.clone()
        } else {
            (0..self.dim())
                .filter(|d| !dims.contains(d))
                .map(|d| self.dims()[d])
                .collect()
        };
        let out = self.empty_same(&shape, self.dtype())?;
        let mean = if with_mean {
            Some(self.empty_same(&shape, self.dtype())?)
        } else {
            None
        };
        // WelfordOps' kernel: vt0 = 2, a (mean, m2, n, nf) accumulator of 16 bytes (32 for
        // float64), and the staging the plan takes when it splits outputs across blocks.
        let traits = KernelTraits {
            input_size: self.element_size(),
            acc_size: if self.dtype() == DType::F64 { 32 } else { 16 },
            vt0: 2,
            input_vec_size: 2,
            max_threads: 512,
        };
        drop(Staged::new(self, &dims, &traits)?);
        if self.has_values() {
            write_moments(self, &dims, m, &out, mean.as_ref())?;
        }
        if needs_grad(&[self]) {
            record_moments(self, m.clone(), &dims, &out, mean.as_ref())?;
        }
        Ok((out, mean))
    }

    /// The dims a variance reduces, ascending: every dim for none.
    fn moment_dims(&self, dims: &[isize]) -> Result<Vec<usize>> {
        if dims.is_empty() {
            return Ok((0..self.dim()).collect());
        }
        let mut wrapped = dims
            .iter()
            .map(|&d| wrap_dim(d, self.dim().max(1)))
            .collect::<Result<Vec<_>>>()?;
        wrapped.sort_unstable();
        wrapped.dedup();
        Ok(wrapped)
    }
}

/// Each output's mean and variance in f64 (two passes), written into `out` (and `mean`).
fn write_moments(
    x: &Tensor,
    dims: &[usize],
    m: &Moments,
    out: &Tensor,
    mean: Option<&Tensor>,
) -> Result<()> {
    let bytes = x.host_bytes()?;
    let dtype = x.dtype();
    let shape = x.dims();
    let strides = super::Layout::contiguous(shape).strides;
    let kept: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let outputs: usize = kept.iter().map(|&d| shape[d]).product();
    let count: usize = dims.iter().map(|&d| shape[d]).product();
    let mut var_bytes = vec![0u8; out.nbytes()];
    let mut mean_bytes = vec![0u8; out.nbytes()];
    let mut members = Vec::with_capacity(count);
    for o in 0..outputs {
        // The base offset of output `o` over the kept dims, then every reduced element.
        let mut rest = o;
        let mut base = 0;
        for &d in kept.iter().rev() {
            base += (rest % shape[d]) * strides[d];
            rest /= shape[d];
        }
        members.clear();
        for r in 0..count {
            let mut rest = r;
            let mut at = base;
            for &d in dims.iter().rev() {
                at += (rest % shape[d]) * strides[d];
                rest /= shape[d];
            }
            // SAFETY: `at` is an element of `x`, whose row-major bytes `bytes` holds.
            members.push(unsafe { load_f64(bytes.as_ptr(), dtype, at) });
        }
        let mu = members.iter().sum::<f64>() / count as f64;
        let m2: f64 = members.iter().map(|v| (v - mu) * (v - mu)).sum();
        let var = m2 / (count as f64 - m.correction).max(0.0);
        let value = if m.take_sqrt { var.sqrt() } else { var };
        // SAFETY: `o` is an element of the outputs, which the buffers hold.
        unsafe {
            store_f64(var_bytes.as_mut_ptr(), dtype, o, value);
            store_f64(mean_bytes.as_mut_ptr(), dtype, o, mu);
        }
    }
    if !var_bytes.is_empty() {
        out.backend().write_bytes(out.storage_ptr(), &var_bytes)?;
        if let Some(mean) = mean {
            mean.backend()
                .write_bytes(mean.storage_ptr(), &mean_bytes)?;
        }
    }
    Ok(())
}

/// The node of var/std (and their `_mean` forms): PyTorch's `var_backward`, `std_backward` and
/// `mean_backward`, with their temporaries in its order.
fn record_moments(
    x: &Tensor,
    m: Moments,
    dims: &[usize],
    out: &Tensor,
    mean: Option<&Tensor>,
) -> Result<()> {
    let saved_x = SavedTensor::new(x)?;
    let saved_out = SavedTensor::new(out)?;
    let dims = dims.to_vec();
    let whole = m.dims.is_empty();
    let count: usize = dims.iter().map(|&d| x.dims()[d]).product();
    let input = x.shape();
    let mut outs = vec![out.clone()];
    outs.extend(mean.cloned());
    let with_mean = mean.is_some();
    record_multi(
        &outs,
        m.node(with_mean),
        &[x],
        true,
        Box::new(move |grads, _| {
            let x = saved_x.get()?;
            let mut gself = match &grads[0] {
                Some(g) if m.take_sqrt => {
                    // std_backward: (grad / (result * 2)).masked_fill_(result == 0, 0).
                    let result = saved_out.get()?;
                    let twice = result.mul_scalar(Scalar::Int(2))?;
                    let grad_var = g.div(&twice)?;
                    let zero = result.compare_scalar(Scalar::Int(0), BinaryOp::Eq, false)?;
                    grad_var.masked_fill_(&zero, Scalar::Int(0))?;
                    drop((zero, twice));
                    Some(var_backward(&grad_var, x, &dims, whole, &m, count, &input)?)
                }
                Some(g) => Some(var_backward(g, x, &dims, whole, &m, count, &input)?),
                None => None,
            };
            if let Some(Some(gmean)) = grads.get(1) {
                // mean_backward: the gradient spread over the reduced elements, divided.
                let spread = unreduce(gmean, &dims, m.keepdim, &input)?;
                let aux = spread.div_scalar(Scalar::Int(count as i64))?;
                gself = Some(match gself {
                    Some(g) => g.add(&aux)?,
                    None => aux,
                });
            }
            Ok(vec![gself])
        }),
    );
    Ok(())
}

/// `g` of a reduction's output broadcast back to the input's shape, as a view.
fn unreduce(g: &Tensor, dims: &[usize], keepdim: bool, input: &[usize]) -> Result<Tensor> {
    let mut kept = input.to_vec();
    for &d in dims {
        kept[d] = 1;
    }
    let g = if keepdim || g.dims() == kept.as_slice() {
        g.clone()
    } else {
        g.reshape_usize(&kept)?
    };
    g.expand(input)
}

/// PyTorch's `var_backward`: `(2 / dof) * grad * (self - self.mean(dims, keepdim=True))`, its
/// right-hand side first (the mean, the difference), then the scaled gradient and the product.
fn var_backward(
    grad: &Tensor,
    x: &Tensor,
    dims: &[usize],
    whole: bool,
    m: &Moments,
    count: usize,
    input: &[usize],
) -> Result<Tensor> {
    let dof = count as f64 - m.correction;
    let mean = if whole {
        x.mean(None, false)?
    } else {
        let ds: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
        x.reduction_over(super::ReduceOp::Mean, &ds, true)?
    };
    let centered = x.sub(&mean)?;
    let g = if whole || m.keepdim {
        grad.clone()
    } else {
        unreduce_view(grad, dims, input)?
    };
    let scaled = g.mul_scalar(Scalar::Float(2.0 / dof))?;
    let out = scaled.mul(&centered)?;
    drop((scaled, centered, mean));
    Ok(out)
}

/// `grad` with the reduced dims put back as size 1 (`unsqueeze_multiple`), a view.
fn unreduce_view(grad: &Tensor, dims: &[usize], input: &[usize]) -> Result<Tensor> {
    let mut kept = input.to_vec();
    for &d in dims {
        kept[d] = 1;
    }
    grad.reshape_usize(&kept)
}
