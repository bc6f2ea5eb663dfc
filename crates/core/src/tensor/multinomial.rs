//! `torch.multinomial`: PyTorch's sampling without replacement (or of one sample a row) by the
//! exponential trick, with its checks' tensors, on the device; with replacement through running
//! sums, drawn on the host with PyTorch's device memory.

use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::device::cub_scratch::scan_bytes;
use crate::device::{BinaryOp, ReduceOp, Storage, UnaryOp};
use torchlet_alloc::types::element::store_scalar;

use super::convert::empty_like_dense;
use super::reduce::Read;
use super::{DType, Result, Scalar, Tensor, TensorError};

/// The most categories PyTorch samples from (floats count indices exactly up to 2^24).
const MAX_CATEGORIES: usize = 1 << 24;

impl Tensor {
    /// `torch.multinomial(self, num_samples, replacement)`: for each row of probabilities (1-D:
    /// one row), `num_samples` int64 category indices.
    pub fn multinomial(&self, num_samples: usize, replacement: bool) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_multinomial(num_samples, replacement)?;
        let shape = match self.dims() {
            [_] => vec![num_samples],
            dims => vec![dims[0], num_samples],
        };
        let result = self.empty_same(&shape, DType::I64)?;
        if result.numel() == 0 {
            return Ok(result);
        }
        if replacement && num_samples > 1 {
            self.draw_with_replacement(num_samples, &result)?;
            return Ok(result);
        }
        let (is_valid, zero_rows) = self.multinomial_checks()?;
        // s = argmax(p / q) with q ~ Exp(1): q = -log(u), u ~ U[0, 1), in one tensor.
        let q = empty_like_dense(self, self.dtype())?;
        q.uniform_(0.0, 1.0)?;
        let b = q.backend().clone();
        b.unary(UnaryOp::Log, q.operand(), q.operand())?;
        b.unary(UnaryOp::Neg, q.operand(), q.operand())?;
        b.binary(BinaryOp::Div, self.operand(), q.operand(), q.operand())?;
        let last = self.dim() - 1;
        if num_samples == 1 {
            q.reduce_into(ReduceOp::ArgMax, &[last], &result, None, Read::AsIs)?;
        } else {
            let values = self.empty_same(&shape, self.dtype())?;
            q.topk_into(num_samples, last, true, true, &values, &result)?;
        }
        drop(q);
        drop((zero_rows, is_valid));
        Ok(result)
    }

    /// Sampling with replacement (MultinomialKernel.cu's general path): the distribution copied,
    /// a renormalised copy and its running sums (CUB's scan scratch for a single row), each draw
    /// the first category whose running sum passes a uniform number; drawn on the host.
    fn draw_with_replacement(&self, num_samples: usize, result: &Tensor) -> Result<()> {
        let b = self.backend().clone();
        let (rows, categories) = match self.dims() {
            [c] => (1, *c),
            dims => (dims[0], dims[1]),
        };
        let bytes = self.numel() * self.element_size();
        let original = Storage::new(b.clone(), bytes)?;
        let normalised = Storage::new(b.clone(), bytes)?;
        let prefix = Storage::new(b.clone(), bytes)?;
        if rows == 1 && b.props().is_some() {
            drop(Storage::new(
                b.clone(),
                scan_bytes(categories, self.element_size()),
            )?);
        }
        if self.has_values() {
            let p = self.to_vec_f64()?;
            let mut rng = StdRng::seed_from_u64(super::random::next_seed(self.device()));
            let mut drawn = Vec::with_capacity(rows * num_samples);
            for row in p.chunks(categories) {
                let mut running = Vec::with_capacity(categories);
                let mut total = 0.0;
                for &v in row {
                    total += v;
                    running.push(total);
                }
                for _ in 0..num_samples {
                    let u: f64 = rng.random::<f64>() * total;
                    let k = running.partition_point(|&c| c <= u).min(categories - 1);
                    drawn.push(Scalar::Int(k as i64));
                }
            }
            let mut out = vec![0u8; result.nbytes()];
            for (i, v) in drawn.into_iter().enumerate() {
                // SAFETY: `out` holds the result's int64 elements.
                unsafe { store_scalar(out.as_mut_ptr(), DType::I64, i, v) };
            }
            b.write_bytes(result.storage_ptr(), &out)?;
        }
        drop((prefix, normalised, original));
        Ok(())
    }

    /// PyTorch's argument checks.
    fn check_multinomial(&self, num_samples: usize, replacement: bool) -> Result<()> {
        if !matches!(self.dim(), 1 | 2) {
            return Err(TensorError::runtime("prob_dist must be 1 or 2 dim"));
        }
        if !self.dtype().is_float() {
            return Err(TensorError::runtime(format!(
                "multinomial only supports floating-point dtypes for input, got: {}",
                self.dtype().scalar_type_name()
            )));
        }
        if num_samples == 0 {
            return Err(TensorError::runtime("cannot sample n_sample <= 0 samples"));
        }
        let categories = self.dims()[self.dim() - 1];
        if !replacement && num_samples > categories {
            return Err(TensorError::runtime(
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
            ));
        }
        if categories > MAX_CATEGORIES {
            return Err(TensorError::runtime(
                "number of categories cannot exceed 2^24",
            ));
        }
        Ok(())
    }

    /// The sanity checks' tensors, as PyTorch keeps them to the end of the call: whether every
    /// probability is finite and non-negative, and whether any row sums to zero (checked here
    /// where the tensor has values; PyTorch asserts on the device).
    fn multinomial_checks(&self) -> Result<(Tensor, Tensor)> {
        let max = self.max(None, false)?;
        let finite = max.compare_scalar(Scalar::Float(f64::INFINITY), BinaryOp::Lt, false)?;
        let min = self.min(None, false)?;
        let positive = min.compare_scalar(Scalar::Float(0.0), BinaryOp::Ge, false)?;
        let is_valid = finite.bool_logic(&positive, false)?;
        drop((positive, min, finite, max));
        if is_valid.has_values() && !is_valid.truth()? {
            return Err(TensorError::runtime(
                "probability tensor contains either `inf`, `nan` or element < 0",
            ));
        }
        let zero_rows = if self.dim() == 1 {
            let sum = self.sum(None, false)?;
            let zero = sum.compare_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?;
            drop(sum);
            zero
        } else {
            let sums = self.sum(Some(1), false)?;
            let zero = sums.compare_scalar(Scalar::Float(0.0), BinaryOp::Eq, false)?;
            let any = zero.max(None, false)?;
            drop((zero, sums));
            any
        };
        // `_assert_async(~zero_rows)`: the negation, freed once queued.
        let nonzero = zero_rows.compare_scalar(Scalar::Bool(false), BinaryOp::Eq, false)?;
        let bad = nonzero.has_values() && !nonzero.truth()?;
        drop(nonzero);
        if bad {
            return Err(TensorError::runtime(
                "invalid multinomial distribution (sum of probabilities <= 0)",
            ));
        }
        Ok((is_valid, zero_rows))
    }
}
