//! `x[idx]`: rows picked by an int64 index on the leading dim, as PyTorch's `index` picks them,
//! with IndexBackward0, whose backward adds the gradient up with a sorted `index_put_`.

use crate::autograd::{needs_grad, record, SavedTensor};

use super::index_put_sorted::put_rows_accumulate;
use super::{Result, Tensor, TensorError};

impl Tensor {
    /// `self[index]` for an int64 `index` of any shape: the rows of dim 0 at its values (negative
    /// ones counting from the end), shaped `index.shape + self.shape[1:]`, in a new tensor.
    pub fn index_rows(&self, index: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_index(index, "index", false)?;
        if self.dim() == 0 {
            return Err(TensorError::index(
                "too many indices for tensor of dimension 0 (got 1)",
            ));
        }
        let rows = self.row_positions(index)?;
        let mut shape = index.shape();
        shape.extend_from_slice(&self.dims()[1..]);
        let out = self.empty_same(&shape, self.dtype())?;
        if out.has_values() && out.numel() > 0 {
            let slice = self.numel() / self.dims()[0].max(1) * self.element_size();
            let src = self.host_bytes()?;
            let mut bytes = Vec::with_capacity(out.nbytes());
            for &r in &rows {
                bytes.extend_from_slice(&src[r * slice..(r + 1) * slice]);
            }
            out.backend().write_bytes(out.storage_ptr(), &bytes)?;
        }
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(index)?;
            let input = self.shape();
            record(
                &out,
                "IndexBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    let index = saved.get()?;
                    let size = input[0];
                    let rows = if index.has_values() {
                        wrap_rows(&index.index_values()?, size)?
                    } else {
                        vec![0; index.numel()]
                    };
                    let result = Tensor::zeros(&input, &g.like_options())?;
                    put_rows_accumulate(&result, g, &rows, 1, None)?;
                    Ok(vec![Some(result)])
                }),
            );
        }
        Ok(out)
    }

    /// The rows `index` picks, wrapped and checked; one placeholder per index in a shapes-only run.
    fn row_positions(&self, index: &Tensor) -> Result<Vec<usize>> {
        if !index.has_values() {
            return Ok(vec![0; index.numel()]);
        }
        wrap_rows(&index.index_values()?, self.dims()[0])
    }
}

/// Index values as rows of a dim of `size`, with PyTorch's message for one out of range.
fn wrap_rows(values: &[i64], size: usize) -> Result<Vec<usize>> {
    let n = size as i64;
    values
        .iter()
        .map(|&k| {
            if k < -n || k >= n {
                return Err(TensorError::index(format!(
                    "index {k} is out of bounds for dimension 0 with size {size}"
                )));
            }
            Ok(if k < 0 { k + n } else { k } as usize)
        })
        .collect()
}
