//! Selection by a boolean mask: `nonzero`, `x[mask]` and `masked_select`, with the device memory
//! of PyTorch 2.11's CUDA paths (CUB's count and select scratch, backward's sorted index_put_).

use crate::autograd::{needs_grad, record, SavedTensor};
use crate::device::cub_scratch::{flagged_select_bytes, reduce_bytes};
use crate::device::Storage;

use super::index_put_sorted::{put_rows_accumulate, temp};

use super::{DType, Result, Tensor, TensorError};

// Note [selection by mask]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// What a mask selects is sized by its values. PyTorch's CUDA `nonzero` counts the true elements
// on the device (a 4-byte count, CUB's reduce scratch), copies the count to the host, makes the
// [count, ndim] int64 output and fills it with CUB's flagged select (its scratch), then frees
// the count. `x[mask]` expands the mask into those coordinates (`expandTensors`), indexes with
// their columns, and frees them; `masked_select` is the same `index`. IndexBackward0 saves the
// mask itself, so backward counts again and puts the gradient into zeros of `x`'s shape at the
// mask's coordinates (Note [sorted index_put_]). torchlet reads the mask
// to the host to count it (a shapes-only run has no values, and says so) and computes the values
// there: the device's memory sees PyTorch's allocations in PyTorch's order.

/// What counting a mask says in a shapes-only run.
const NO_COUNT: &str = "torchlet fit runs shapes only, so tensors have no values here, and what a \
mask selects (x[mask], nonzero, masked_select, torch.where(mask)) is sized by its values. Select a \
fixed number instead (topk, or multiply by the mask), or run the program with values \
(torchlet run --simulate-cuda)";

/// A mask's true elements, counted: their row-major positions, and the device's 4-byte count,
/// which PyTorch frees only once the coordinates are written.
struct Counted {
    positions: Vec<usize>,
    count_slot: Option<Storage>,
}

impl Tensor {
    fn cuda_like_selection(&self) -> bool {
        self.backend().props().is_some() && self.numel() > 0
    }

    /// Count the nonzero elements as PyTorch's CUDA `nonzero` does: its count and CUB's reduce
    /// scratch on the device, the values read on the host.
    fn count_nonzero_elements(&self) -> Result<Counted> {
        let cuda = self.cuda_like_selection();
        let count_slot = if cuda { temp(self, 4)? } else { None };
        if cuda {
            drop(temp(self, reduce_bytes(self.numel(), 4))?);
        }
        if !self.has_values() && self.device() != crate::device::Device::Meta {
            return Err(TensorError::runtime(NO_COUNT));
        }
        let bytes = self.host_bytes()?;
        let size = self.element_size();
        let positions = (0..self.numel())
            .filter(|&i| bytes[i * size..(i + 1) * size].iter().any(|&b| b != 0))
            .collect();
        Ok(Counted {
            positions,
            count_slot,
        })
    }

    /// `nonzero`'s output for `counted`, with the select's scratch, then the count freed.
    fn coordinates(&self, counted: Counted) -> Result<Tensor> {
        let dims = self.dims();
        let count = counted.positions.len();
        let out = self.empty_same(&[count, dims.len()], DType::I64)?;
        // The select runs when nothing is selected too (its scratch allocated all the same).
        if self.cuda_like_selection() && !dims.is_empty() {
            drop(temp(self, flagged_select_bytes(self.numel()))?);
        }
        drop(counted.count_slot);
        if out.has_values() && count > 0 && !dims.is_empty() {
            let mut bytes = Vec::with_capacity(count * dims.len() * 8);
            let mut coord = vec![0i64; dims.len()];
            for &p in &counted.positions {
                let mut rest = p;
                for (d, &n) in dims.iter().enumerate().rev() {
                    coord[d] = (rest % n) as i64;
                    rest /= n;
                }
                coord
                    .iter()
                    .for_each(|c| bytes.extend_from_slice(&c.to_ne_bytes()));
            }
            out.backend().write_bytes(out.storage_ptr(), &bytes)?;
        }
        Ok(out)
    }

    /// `torch.nonzero(self)`: the coordinates of the nonzero elements, `[count, ndim]` int64,
    /// row-major.
    pub fn nonzero(&self) -> Result<Tensor> {
        super::check_interrupt()?;
        let counted = self.count_nonzero_elements()?;
        self.coordinates(counted)
    }

    /// `self[mask]`: the elements (or trailing slices) where the bool `mask` holds, `mask`
    /// covering `self`'s leading dims, as PyTorch's `index` with a mask.
    pub fn index_by_mask(&self, mask: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        self.check_selection_mask(mask)?;
        let out = self.select_by_mask(mask.clone())?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(mask)?;
            let input = self.shape();
            record(
                &out,
                "IndexBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    Ok(vec![Some(index_by_mask_backward(g, saved.get()?, &input)?)])
                }),
            );
        }
        Ok(out)
    }

    /// `torch.masked_select(self, mask)`: the elements where `mask` holds, both broadcast to one
    /// shape, 1-D. Like `nonzero`, it makes a broadcast mask contiguous first (a copy, freed once
    /// the coordinates are made); MaskedSelectBackward0 scatters the gradient into zeros.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        super::check_interrupt()?;
        if mask.dtype() != DType::Bool {
            return Err(TensorError::runtime(format!(
                "masked_select: expected BoolTensor for mask, got {}",
                mask.dtype().scalar_type_name()
            )));
        }
        let shape = super::broadcast_shapes(self.dims(), mask.dims())?;
        let x = self.detach()?.expand(&shape)?;
        let m = mask.expand(&shape)?;
        x.check_selection_mask(&m)?;
        let m = if m.is_contiguous() {
            m
        } else {
            m.contiguous()?
        };
        let out = x.select_by_mask(m)?;
        if needs_grad(&[self]) {
            let saved = SavedTensor::new(mask)?;
            let input = self.shape();
            record(
                &out,
                "MaskedSelectBackward0",
                &[self],
                true,
                Box::new(move |g, _| {
                    Ok(vec![Some(masked_select_backward(
                        g,
                        saved.get()?,
                        &input,
                        &shape,
                    )?)])
                }),
            );
        }
        Ok(out)
    }

    /// PyTorch's checks of a mask indexing `self`, with its messages.
    fn check_selection_mask(&self, mask: &Tensor) -> Result<()> {
        if mask.dtype() != DType::Bool {
            return Err(TensorError::index(format!(
                "torchlet: a mask must be bool, got {}; compare to make one (x > 0)",
                mask.dtype().name()
            )));
        }
        if mask.device() != self.device() {
            return Err(TensorError::runtime(format!(
                "torchlet: the mask is on {} and the tensor on {}; move the mask with .to(x.device)",
                mask.device(),
                self.device()
            )));
        }
        if mask.dim() > self.dim() {
            return Err(TensorError::index(format!(
                "too many indices for tensor of dimension {} (got {})",
                self.dim(),
                mask.dim()
            )));
        }
        for (d, (&m, &s)) in mask.dims().iter().zip(self.dims()).enumerate() {
            if m != s {
                return Err(TensorError::index(format!(
                    "The shape of the mask {:?} at index {d} does not match the shape of the indexed tensor {:?} at index {d}",
                    mask.dims(),
                    self.dims()
                )));
            }
        }
        Ok(())
    }

    /// The selection's output, with `index`'s memory: the coordinates made, `mask` let go (a
    /// contiguous copy `nonzero` made goes here), the output, the coordinates freed.
    fn select_by_mask(&self, mask: Tensor) -> Result<Tensor> {
        let counted = mask.count_nonzero_elements()?;
        let positions = counted.positions.clone();
        let coords = mask.coordinates(counted)?;
        let mask_dims = mask.dim();
        drop(mask);
        let slice: usize = self.dims()[mask_dims..].iter().product();
        let mut shape = vec![positions.len()];
        shape.extend_from_slice(&self.dims()[mask_dims..]);
        let out = self.empty_same(&shape, self.dtype())?;
        drop(coords);
        if out.has_values() && out.numel() > 0 {
            let size = self.element_size();
            let src = self.host_bytes()?;
            let mut bytes = Vec::with_capacity(out.nbytes());
            for &p in &positions {
                bytes.extend_from_slice(&src[p * slice * size..(p + 1) * slice * size]);
            }
            out.backend().write_bytes(out.storage_ptr(), &bytes)?;
        }
        Ok(out)
    }
}

/// `masked_select_backward`: zeros of the broadcast `shape`, the gradient scattered in at the
/// mask (in place), summed back to the input's shape.
fn masked_select_backward(
    g: &Tensor,
    mask: &Tensor,
    input: &[usize],
    shape: &[usize],
) -> Result<Tensor> {
    let result = Tensor::zeros(shape, &g.like_options())?;
    result.masked_scatter_(mask, g)?;
    result.sum_to_size(input)
}

/// IndexBackward0 of `x[mask]`: zeros of `x`'s shape, then `index_put_(accumulate=True)` of the
/// gradient at the mask, with its CUDA path's temporaries (Note [sorted index_put_]).
fn index_by_mask_backward(g: &Tensor, mask: &Tensor, input: &[usize]) -> Result<Tensor> {
    let result = Tensor::zeros(input, &g.like_options())?;
    let counted = mask.count_nonzero_elements()?;
    let positions = counted.positions.clone();
    let coords = mask.coordinates(counted)?;
    put_rows_accumulate(&result, g, &positions, mask.dim(), Some(coords))?;
    Ok(result)
}
