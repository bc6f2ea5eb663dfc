//! Views that share storage: reshape/view, transpose, permute, (un)squeeze, select, narrow, expand.

use crate::autograd::{needs_grad, record};

use super::layout::{contiguous_strides, wrap_dim};
use super::{Layout, Result, Tensor, TensorError};

/// Resolve a shape with at most one -1 against `numel`.
pub(crate) fn infer_shape(shape: &[isize], numel: usize) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return Err(TensorError::runtime("only one dimension can be inferred"));
            }
            infer = Some(i);
        } else if d < 0 {
            return Err(TensorError::runtime(format!("invalid shape dimension {d}")));
        } else {
            // A product past int64 cannot equal any tensor's size: the shape is invalid.
            known = known.saturating_mul(d as usize);
        }
    }
    let invalid = || {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        TensorError::runtime(format!(
            "shape '[{}]' is invalid for input of size {numel}",
            dims.join(", ")
        ))
    };
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(invalid());
            }
            out[i] = numel / known;
        }
        None if known != numel => return Err(invalid()),
        None => {}
    }
    Ok(out)
}

/// Strides that let `new` view memory laid out as (`old`, `strides`), if any (PyTorch's computeStride).
fn view_strides(old: &[usize], strides: &[usize], new: &[usize]) -> Option<Vec<usize>> {
    if old.is_empty() || old.iter().product::<usize>() == 0 {
        return Some(contiguous_strides(new));
    }
    let mut out = vec![0usize; new.len()];
    let mut view_d = new.len() as isize - 1;
    let mut chunk_base = *strides.last().unwrap();
    let mut tensor_numel = 1;
    let mut view_numel = 1;
    for td in (0..old.len()).rev() {
        tensor_numel *= old[td];
        if td == 0 || (old[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base) {
            while view_d >= 0 && (view_numel < tensor_numel || new[view_d as usize] == 1) {
                out[view_d as usize] = view_numel * chunk_base;
                view_numel *= new[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if td > 0 {
                chunk_base = strides[td - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(out)
}

fn dims_str(shape: &[usize]) -> String {
    let v: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl Tensor {
    /// A view with `layout`, recorded as `name` with backward `f` when the input requires grad.
    fn make_view(
        &self,
        layout: Layout,
        name: &'static str,
        f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
    ) -> Result<Tensor> {
        super::check_interrupt()?;
        let out = self.view_as_layout(layout);
        if needs_grad(&[self]) {
            record(
                &out,
                name,
                &[self],
                false,
                Box::new(move |g, _| Ok(vec![Some(f(g)?)])),
            );
        }
        Ok(out)
    }

    pub(crate) fn view_shape(&self, shape: &[usize], name: &'static str) -> Result<Option<Tensor>> {
        let l = self.layout();
        let Some(strides) = view_strides(&l.shape, &l.strides, shape) else {
            return Ok(None);
        };
        let layout = Layout {
            shape: shape.to_vec(),
            strides,
            offset: l.offset,
        };
        let input_shape = self.shape();
        self.make_view(layout, name, move |g| g.reshape_usize(&input_shape))
            .map(Some)
    }

    pub(crate) fn reshape_usize(&self, shape: &[usize]) -> Result<Tensor> {
        let s: Vec<isize> = shape.iter().map(|&d| d as isize).collect();
        self.reshape(&s)
    }

    /// A view with a new shape (one dim may be -1); errors when the strides do not allow one.
    pub fn view(&self, shape: &[isize]) -> Result<Tensor> {
        let shape = infer_shape(shape, self.numel())?;
        self.view_shape(&shape, "ViewBackward0")?.ok_or_else(|| {
            TensorError::runtime(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            )
        })
    }

    /// The tensor with a new shape: a view when possible, else a copy.
    pub fn reshape(&self, shape: &[isize]) -> Result<Tensor> {
        let shape = infer_shape(shape, self.numel())?;
        if let Some(v) = self.view_shape(&shape, "ViewBackward0")? {
            return Ok(v);
        }
        let copy = self.clone_tensor()?;
        Ok(copy
            .view_shape(&shape, "UnsafeViewBackward0")?
            .expect("a contiguous copy can be viewed"))
    }

    /// All dims flattened into one.
    pub fn flatten(&self) -> Result<Tensor> {
        if self.dim() == 1 {
            return Ok(self.clone());
        }
        self.reshape(&[-1])
    }

    /// Swap two dims (a view).
    pub fn transpose(&self, d0: isize, d1: isize) -> Result<Tensor> {
        let n = self.dim();
        let (a, b) = (wrap_dim(d0, n)?, wrap_dim(d1, n)?);
        let mut l = self.layout().clone();
        if n > 0 {
            l.shape.swap(a, b);
            l.strides.swap(a, b);
        }
        self.make_view(l, "TransposeBackward0", move |g| {
            g.transpose(a as isize, b as isize)
        })
    }

    /// Transpose of a tensor of at most 2 dims.
    pub fn t(&self) -> Result<Tensor> {
        let n = self.dim();
        if n > 2 {
            return Err(TensorError::runtime(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {n}D"
            )));
        }
        let mut l = self.layout().clone();
        l.shape.reverse();
        l.strides.reverse();
        self.make_view(l, "TBackward0", |g| g.t())
    }

    /// Reorder dims (a view).
    pub fn permute(&self, dims: &[isize]) -> Result<Tensor> {
        let n = self.dim();
        if dims.len() != n {
            return Err(TensorError::runtime(format!(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}",
                dims.len()
            )));
        }
        let perm: Vec<usize> = dims
            .iter()
            .map(|&d| wrap_dim(d, n))
            .collect::<Result<_>>()?;
        let mut seen = vec![false; n];
        for &p in &perm {
            if std::mem::replace(&mut seen[p], true) {
                return Err(TensorError::runtime(
                    "permute(): duplicate dims are not allowed.",
                ));
            }
        }
        let src = self.layout();
        let l = Layout {
            shape: perm.iter().map(|&p| src.shape[p]).collect(),
            strides: perm.iter().map(|&p| src.strides[p]).collect(),
            offset: src.offset,
        };
        let mut inverse = vec![0isize; n];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i as isize;
        }
        self.make_view(l, "PermuteBackward0", move |g| g.permute(&inverse))
    }

    /// Insert a size-1 dim at `dim`.
    pub fn unsqueeze(&self, dim: isize) -> Result<Tensor> {
        let d = wrap_dim(dim, self.dim() + 1)?;
        let mut l = self.layout().clone();
        let stride = if d < l.ndim() {
            l.strides[d] * l.shape[d]
        } else {
            1
        };
        l.shape.insert(d, 1);
        l.strides.insert(d, stride);
        self.make_view(l, "UnsqueezeBackward0", move |g| {
            g.squeeze(Some(d as isize))
        })
    }

    /// Remove size-1 dims: all of them, or only `dim` if it has size 1.
    pub fn squeeze(&self, dim: Option<isize>) -> Result<Tensor> {
        let mut l = self.layout().clone();
        let name = match dim {
            None => {
                let keep: Vec<usize> = (0..l.ndim()).filter(|&i| l.shape[i] != 1).collect();
                l.shape = keep.iter().map(|&i| self.dims()[i]).collect();
                l.strides = keep.iter().map(|&i| self.layout().strides[i]).collect();
                "SqueezeBackward0"
            }
            Some(d) => {
                if self.dim() > 0 {
                    let d = wrap_dim(d, self.dim())?;
                    if l.shape[d] == 1 {
                        l.shape.remove(d);
                        l.strides.remove(d);
                    }
                } else {
                    wrap_dim(d, 0)?;
                }
                "SqueezeBackward1"
            }
        };
        let input_shape = self.shape();
        self.make_view(l, name, move |g| g.reshape_usize(&input_shape))
    }

    /// `t[i]`: the `i`-th slice along dim 0 (a view).
    pub fn index(&self, i: isize) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::index(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
            ));
        }
        let n = self.dims()[0] as isize;
        if i < -n || i >= n {
            return Err(TensorError::index(format!(
                "index {i} is out of bounds for dimension 0 with size {n}"
            )));
        }
        let i = if i < 0 { i + n } else { i } as usize;
        let src = self.layout();
        let l = Layout {
            shape: src.shape[1..].to_vec(),
            strides: src.strides[1..].to_vec(),
            offset: src.offset + i * src.strides[0],
        };
        let input_shape = self.shape();
        self.make_view(l, "SelectBackward0", move |g| {
            let full = Tensor::zeros(&input_shape, &g.like_options())?;
            full.index(i as isize)?.copy_from(g)?;
            Ok(full)
        })
    }

    /// `t.select(dim, i)`: the `i`-th slice along `dim`, which goes away (a view).
    pub fn select(&self, dim: isize, i: isize) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::index(
                "select() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let n = self.dims()[d] as isize;
        if i < -n || i >= n {
            return Err(TensorError::index(format!(
                "select(): index {i} out of range for tensor of size {:?} at dimension {d}",
                self.dims()
            )));
        }
        let i = if i < 0 { i + n } else { i } as usize;
        let src = self.layout();
        let mut l = src.clone();
        l.offset += i * src.strides[d];
        l.shape.remove(d);
        l.strides.remove(d);
        let input_shape = self.shape();
        self.make_view(l, "SelectBackward0", move |g| {
            let full = Tensor::zeros(&input_shape, &g.like_options())?;
            full.select(d as isize, i as isize)?.copy_from(g)?;
            Ok(full)
        })
    }

    /// `len` elements of `dim` from `start` (a view).
    pub fn narrow(&self, dim: isize, start: isize, len: usize) -> Result<Tensor> {
        if self.dim() == 0 {
            return Err(TensorError::runtime(
                "narrow() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.dims()[d] as isize;
        if start < -size || start > size {
            return Err(TensorError::index(format!(
                "start out of range (expected to be in range of [{}, {size}], but got {start})",
                -size
            )));
        }
        let start = if start < 0 { start + size } else { start } as usize;
        if start + len > size as usize {
            return Err(TensorError::runtime(format!(
                "start ({start}) + length ({len}) exceeds dimension size ({size})."
            )));
        }
        let mut l = self.layout().clone();
        l.offset += start * l.strides[d];
        l.shape[d] = len;
        let input_shape = self.shape();
        self.make_view(l, "SliceBackward0", move |g| {
            let full = Tensor::zeros(&input_shape, &g.like_options())?;
            full.narrow(d as isize, start as isize, len)?.copy_from(g)?;
            Ok(full)
        })
    }

    /// Every `step`-th element of `dim`, `len` of them from `start` (a view; `x[:, start::step]`).
    /// Step 1 is [`Tensor::narrow`].
    pub fn slice_step(&self, dim: isize, start: usize, len: usize, step: usize) -> Result<Tensor> {
        if step == 1 {
            return self.narrow(dim, start as isize, len);
        }
        if step == 0 {
            return Err(TensorError::value("slice step cannot be zero"));
        }
        let d = wrap_dim(dim, self.dim())?;
        let size = self.dims()[d];
        if len > 0 && start + (len - 1) * step >= size {
            return Err(TensorError::index(format!(
                "slice of {len} elements from {start} by {step} exceeds dimension size ({size})"
            )));
        }
        let mut l = self.layout().clone();
        l.offset += start.min(size) * l.strides[d];
        l.shape[d] = len;
        l.strides[d] *= step;
        let input_shape = self.shape();
        self.make_view(l, "SliceBackward0", move |g| {
            // PyTorch's slice_backward: zeros of the input's shape, the gradient copied into the slice.
            let full = Tensor::zeros(&input_shape, &g.like_options())?;
            full.slice_step(d as isize, start, len, step)?
                .copy_from(g)?;
            Ok(full)
        })
    }

    /// Broadcast to `shape` without copying (stride-0 dims).
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        if shape.len() < self.dim() {
            return Err(TensorError::runtime(format!(
                "expand(torch.FloatTensor{{{}}}, size=[{}]): the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                dims_str(self.dims()).trim_matches(|c| c == '[' || c == ']'),
                dims_str(shape).trim_matches(|c| c == '[' || c == ']'),
                shape.len(),
                self.dim()
            )));
        }
        let extra = shape.len() - self.dim();
        for (i, &d) in self.dims().iter().enumerate() {
            if d != 1 && d != shape[i + extra] {
                return Err(TensorError::runtime(format!(
                    "The expanded size of the tensor ({}) must match the existing size ({d}) at non-singleton dimension {}.  Target sizes: {}.  Tensor sizes: {}",
                    shape[i + extra],
                    i + extra,
                    dims_str(shape),
                    dims_str(self.dims())
                )));
            }
        }
        super::layout::numel_of_view(shape)?;
        if shape == self.dims() {
            return Ok(self.clone());
        }
        let l = self.layout().broadcast_to(shape);
        let input_shape = self.shape();
        self.make_view(l, "ExpandBackward0", move |g| g.sum_to_size(&input_shape))
    }

    pub(crate) fn like_options(&self) -> super::TensorOptions {
        super::TensorOptions {
            dtype: self.dtype(),
            device: self.device(),
            requires_grad: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_strides_follow_pytorch() {
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[6]), Some(vec![1]));
        assert_eq!(view_strides(&[2, 3], &[1, 2], &[6]), None);
        assert_eq!(
            view_strides(&[2, 3, 4], &[12, 4, 1], &[6, 4]),
            Some(vec![4, 1])
        );
        assert_eq!(
            view_strides(&[4, 3], &[1, 4], &[4, 3, 1]),
            Some(vec![1, 4, 4])
        );
    }

    #[test]
    fn infer_shape_errors() {
        assert_eq!(infer_shape(&[-1, 4], 12).unwrap(), vec![3, 4]);
        assert_eq!(
            infer_shape(&[3, 5], 12).unwrap_err().to_string(),
            "shape '[3, 5]' is invalid for input of size 12"
        );
        assert!(infer_shape(&[-1, -1], 12).is_err());
    }
}

impl Tensor {
    /// A view of this tensor's storage with `size`, `stride` and `offset` (in elements), without
    /// a graph: how `torch.load` rebuilds a saved tensor over its storage. Refused where the
    /// view would reach past the storage, or where `self` needs a gradient.
    pub fn storage_view(&self, size: &[usize], stride: &[usize], offset: usize) -> Result<Tensor> {
        if self.requires_grad() {
            return Err(TensorError::runtime(
                "storage_view of a tensor that requires grad: detach it first",
            ));
        }
        if size.len() != stride.len() {
            return Err(TensorError::runtime(format!(
                "mismatch in length of strides ({}) and shape ({})",
                stride.len(),
                size.len()
            )));
        }
        let last = size
            .iter()
            .zip(stride)
            .map(|(&n, &s)| n.saturating_sub(1) * s)
            .sum::<usize>();
        let elements = self.storage_nbytes() / self.element_size().max(1);
        if size.iter().all(|&n| n > 0) && offset + last >= elements {
            return Err(TensorError::runtime(format!(
                "setStorage: sizes {size:?}, strides {stride:?}, storage offset {offset} reach past a \
                 storage of {elements} elements"
            )));
        }
        Ok(self.view_as_layout(Layout {
            shape: size.to_vec(),
            strides: stride.to_vec(),
            offset,
        }))
    }
}
