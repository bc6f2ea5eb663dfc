//! Creating tensors: zeros/ones/empty/full, random, ranges, eye, from values, `*_like`.

use crate::device::cpu::reserve_host;
use crate::device::Distribution;

use super::element::{store_f64, store_scalar};
use super::{DType, Result, Scalar, Tensor, TensorError, TensorOptions};

impl Tensor {
    fn finish(self, opts: &TensorOptions) -> Result<Tensor> {
        if opts.requires_grad {
            self.set_requires_grad(true)?;
        }
        Ok(self)
    }

    /// Uninitialised memory of the given shape.
    pub fn empty(shape: &[usize], opts: &TensorOptions) -> Result<Tensor> {
        Tensor::empty_on(shape, opts.dtype, opts.device)?.finish(opts)
    }

    /// Every element `value`.
    pub fn full(shape: &[usize], value: Scalar, opts: &TensorOptions) -> Result<Tensor> {
        let t = Tensor::empty_on(shape, opts.dtype, opts.device)?;
        if t.numel() > 0 {
            t.backend().fill(t.operand(), value)?;
        }
        t.finish(opts)
    }

    /// All zeros.
    pub fn zeros(shape: &[usize], opts: &TensorOptions) -> Result<Tensor> {
        Self::full(shape, Scalar::Int(0), opts)
    }

    /// All ones.
    pub fn ones(shape: &[usize], opts: &TensorOptions) -> Result<Tensor> {
        Self::full(shape, Scalar::Int(1), opts)
    }

    fn random(shape: &[usize], opts: &TensorOptions, dist: Distribution) -> Result<Tensor> {
        if !opts.dtype.is_float() {
            let kernel = match dist {
                Distribution::Uniform => "check_uniform_bounds",
                Distribution::Normal => "normal_kernel_cpu",
            };
            return Err(TensorError::runtime(format!(
                "\"{kernel}\" not implemented for '{}'",
                opts.dtype.scalar_type_name()
            )));
        }
        let t = Tensor::empty_on(shape, opts.dtype, opts.device)?;
        if t.numel() > 0 {
            let seed = super::random::next_seed(opts.device);
            t.backend().random(t.operand(), dist, seed)?;
        }
        t.finish(opts)
    }

    /// Uniform on [0, 1).
    pub fn rand(shape: &[usize], opts: &TensorOptions) -> Result<Tensor> {
        Self::random(shape, opts, Distribution::Uniform)
    }

    /// Standard normal.
    pub fn randn(shape: &[usize], opts: &TensorOptions) -> Result<Tensor> {
        Self::random(shape, opts, Distribution::Normal)
    }

    /// `start, start+step, ...` up to (excluding) `end`.
    pub fn arange(start: f64, end: f64, step: f64, opts: &TensorOptions) -> Result<Tensor> {
        if step == 0.0 {
            return Err(TensorError::runtime("step must be nonzero"));
        }
        if !(start.is_finite() && end.is_finite()) {
            return Err(TensorError::runtime(format!(
                "unsupported range: {start} -> {end}"
            )));
        }
        if (end - start) * step < 0.0 {
            return Err(TensorError::runtime(
                "upper bound and larger bound inconsistent with step sign",
            ));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        let t = Tensor::empty_on(&[n], opts.dtype, opts.device)?;
        if n > 0 {
            t.backend().arange(t.operand(), start, step)?;
        }
        t.finish(opts)
    }

    /// `steps` values evenly spaced from `start` to `end` inclusive.
    pub fn linspace(start: f64, end: f64, steps: usize, opts: &TensorOptions) -> Result<Tensor> {
        let step = if steps > 1 {
            (end - start) / (steps - 1) as f64
        } else {
            0.0
        };
        // Both halves are computed from their own end, as PyTorch does, so `end` is exact.
        let half = steps / 2;
        let value = |i: usize| {
            if steps == 1 {
                start // PyTorch's single step is `start`, not `end`
            } else if i < half {
                start + step * i as f64
            } else {
                end - step * (steps - 1 - i) as f64
            }
        };
        // The tensor first, so a size the device cannot hold is the allocator's error; only then
        // the values, in host memory, which may still be short of room for them.
        let t = Tensor::empty_on(&[steps], opts.dtype, opts.device)?;
        let size = opts.dtype.size();
        let mut bytes = reserve_host::<u8>(steps.saturating_mul(size)).ok_or_else(|| {
            TensorError::runtime(format!(
                "linspace: the {steps} values do not fit in host memory on their way to {}",
                opts.device
            ))
        })?;
        bytes.resize(steps * size, 0);
        for i in 0..steps {
            // SAFETY: `bytes` holds `steps` elements of `opts.dtype`.
            unsafe { store_f64(bytes.as_mut_ptr(), opts.dtype, i, value(i)) };
        }
        if steps > 0 {
            t.backend().write_bytes(t.storage_ptr(), &bytes)?;
        }
        t.finish(opts)
    }

    /// The identity matrix, `n` × `m` (`m` defaults to `n`).
    ///
    /// Zeros with the diagonal set to one in place, as PyTorch's `eye_out`: building the n × m
    /// values in host memory first overflowed or exhausted it for sizes the allocator would have
    /// refused with a clear error (`eye(1 << 20)` asked the host for 8 TiB and aborted).
    pub fn eye(n: usize, m: Option<usize>, opts: &TensorOptions) -> Result<Tensor> {
        let m = m.unwrap_or(n);
        let t = Tensor::empty_on(&[n, m], opts.dtype, opts.device)?;
        if t.numel() > 0 {
            t.backend().fill(t.operand(), Scalar::Int(0))?;
            let mut diagonal = t.layout().clone();
            diagonal.shape = vec![n.min(m)];
            diagonal.strides = vec![m + 1];
            t.backend()
                .fill(t.view_as_layout(diagonal).operand(), Scalar::Int(1))?;
        }
        t.finish(opts)
    }

    /// A tensor whose elements are `bytes` (host, native layout of `dtype`).
    pub(crate) fn from_bytes(
        bytes: &[u8],
        shape: &[usize],
        dtype: DType,
        device: crate::device::Device,
    ) -> Result<Tensor> {
        let t = Tensor::empty_on(shape, dtype, device)?;
        if !bytes.is_empty() {
            t.backend().write_bytes(t.inner.storage.ptr(), bytes)?;
        }
        Ok(t)
    }

    /// A tensor of `values` (row-major) with `shape`, as `tensor([...])` makes.
    pub fn from_values(
        values: Vec<Scalar>,
        shape: Vec<usize>,
        opts: &TensorOptions,
    ) -> Result<Tensor> {
        let numel = super::layout::checked_numel(&shape).unwrap_or(usize::MAX);
        if numel != values.len() {
            return Err(TensorError::value(format!(
                "expected {numel} values for shape {shape:?}, got {}",
                values.len()
            )));
        }
        let size = opts.dtype.size();
        let mut bytes = vec![0u8; values.len() * size];
        for (i, v) in values.iter().enumerate() {
            // SAFETY: `bytes` holds `values.len()` elements of `opts.dtype`.
            unsafe { store_scalar(bytes.as_mut_ptr(), opts.dtype, i, *v) };
        }
        Self::from_bytes(&bytes, &shape, opts.dtype, opts.device)?.finish(opts)
    }

    /// Options for a new tensor of this one's dtype and device, not requiring grad.
    pub(crate) fn like_opts(&self) -> TensorOptions {
        TensorOptions {
            dtype: self.dtype(),
            device: self.device(),
            requires_grad: false,
        }
    }

    /// Zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Self::zeros(self.dims(), &self.like_opts())
    }
    /// Ones with this tensor's shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        Self::ones(self.dims(), &self.like_opts())
    }
    /// Uninitialised, with this tensor's shape, dtype and device.
    pub fn empty_like(&self) -> Result<Tensor> {
        Self::empty(self.dims(), &self.like_opts())
    }
    /// Standard normal, with this tensor's shape, dtype and device.
    pub fn randn_like(&self) -> Result<Tensor> {
        Self::randn(self.dims(), &self.like_opts())
    }
    /// Uniform on [0, 1), with this tensor's shape, dtype and device.
    pub fn rand_like(&self) -> Result<Tensor> {
        Self::rand(self.dims(), &self.like_opts())
    }
}
