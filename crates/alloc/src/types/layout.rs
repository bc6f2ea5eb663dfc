//! `Layout`: shape, element strides and offset of a strided view, plus broadcasting rules.

use super::error::{Result, TensorError};

/// Where a tensor's elements lie in its storage: shape, strides (in elements) and offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Size of each dimension.
    pub shape: Vec<usize>,
    /// Elements to step per index of each dimension (0 for broadcast dimensions).
    pub strides: Vec<usize>,
    /// Elements from the storage's start to element `[0, 0, ...]`.
    pub offset: usize,
}

/// The largest element count, stride or byte count a tensor may have: PyTorch keeps them in int64.
const LIMIT: usize = i64::MAX as usize;

/// `a * b`, or `None` past int64 (PyTorch's `c10::mul_overflows`).
fn mul_within_limit(a: usize, b: usize) -> Option<usize> {
    a.checked_mul(b).filter(|&n| n <= LIMIT)
}

/// Check a new shape as PyTorch does before it makes a tensor of it: its element count, its
/// contiguous strides and its bytes at `element_size` all fit in int64. The errors are PyTorch's.
pub fn check_shape(shape: &[usize], element_size: usize) -> Result<()> {
    let overflowed = || {
        TensorError::runtime(format!(
            "Storage size calculation overflowed with sizes={}",
            dims_list(shape)
        ))
    };
    let numel = checked_numel(shape).ok_or_else(overflowed)?;
    mul_within_limit(numel, element_size).ok_or_else(overflowed)?;
    let mut stride = 1usize;
    for &d in shape.iter().skip(1).rev() {
        stride = mul_within_limit(stride, d.max(1))
            .ok_or_else(|| TensorError::runtime("Stride calculation overflowed"))?;
    }
    Ok(())
}

/// The element count of `shape`, or `None` when it does not fit in int64.
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| mul_within_limit(n, d))
}

/// The element count of a view's shape, or PyTorch's error when it does not fit in int64.
pub fn numel_of_view(shape: &[usize]) -> Result<usize> {
    checked_numel(shape)
        .ok_or_else(|| TensorError::runtime("numel: integer multiplication overflow"))
}

fn dims_list(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// Row-major strides of a shape (as PyTorch's, a size-0 dimension steps like a size-1 one).
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1);
    }
    strides
}

impl Layout {
    /// A contiguous row-major layout at offset 0.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Whether the elements lie densely in row-major order (size-1 dimensions' strides ignored).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] == 1 {
                continue;
            }
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i];
        }
        true
    }

    /// The same view broadcast (stride 0) to `shape`, which must be broadcast-compatible.
    pub fn broadcast_to(&self, shape: &[usize]) -> Layout {
        let extra = shape.len() - self.shape.len();
        let mut strides = vec![0; shape.len()];
        for i in 0..self.shape.len() {
            if self.shape[i] == shape[i + extra] {
                strides[i + extra] = self.strides[i];
            }
        }
        Layout {
            shape: shape.to_vec(),
            strides,
            offset: self.offset,
        }
    }

    /// Storage offset (in elements) of the `i`-th element in row-major order.
    pub fn index_of(&self, mut i: usize) -> usize {
        let mut off = self.offset;
        for d in (0..self.shape.len()).rev() {
            let n = self.shape[d];
            off += (i % n) * self.strides[d];
            i /= n;
        }
        off
    }

    /// Highest storage element index the view touches, plus one (0 when empty).
    pub fn extent(&self) -> usize {
        if self.numel() == 0 {
            return 0;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(n, s)| (n - 1) * s)
                .sum::<usize>()
            + 1
    }
}

/// The broadcast shape of two shapes, or PyTorch's size-mismatch error.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(TensorError::runtime(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )));
        };
    }
    Ok(out)
}

/// Turn a possibly negative dimension into an index, with PyTorch's IndexError.
pub fn wrap_dim(dim: isize, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as isize;
    if dim < -n || dim >= n {
        return Err(TensorError::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// Iterates storage offsets of a layout in row-major order without division per element.
pub struct OffsetIter<'a> {
    layout: &'a Layout,
    index: Vec<usize>,
    offset: usize,
    remaining: usize,
}

impl<'a> OffsetIter<'a> {
    /// Start at element 0 of `layout`.
    pub fn new(layout: &'a Layout) -> OffsetIter<'a> {
        OffsetIter {
            layout,
            index: vec![0; layout.ndim()],
            offset: layout.offset,
            remaining: layout.numel(),
        }
    }
}

impl<'a> OffsetIter<'a> {
    /// Start at element `start` (row-major) of `layout`.
    pub fn starting_at(layout: &'a Layout, start: usize) -> OffsetIter<'a> {
        let mut index = vec![0; layout.ndim()];
        let mut rest = start;
        let mut offset = layout.offset;
        for d in (0..layout.ndim()).rev() {
            let n = layout.shape[d].max(1);
            index[d] = rest % n;
            rest /= n;
            offset += index[d] * layout.strides[d];
        }
        OffsetIter {
            layout,
            index,
            offset,
            remaining: layout.numel().saturating_sub(start),
        }
    }
}

impl Iterator for OffsetIter<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let current = self.offset;
        let l = self.layout;
        for d in (0..self.index.len()).rev() {
            self.index[d] += 1;
            self.offset += l.strides[d];
            if self.index[d] < l.shape[d] {
                break;
            }
            self.offset -= l.strides[d] * l.shape[d];
            self.index[d] = 0;
        }
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_error_matches_pytorch() {
        let e = broadcast_shapes(&[2, 3], &[2, 4]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
        );
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap(), vec![3, 4]);
    }

    #[test]
    fn offsets_follow_strides() {
        let l = Layout {
            shape: vec![2, 3],
            strides: vec![1, 2],
            offset: 1,
        };
        let v: Vec<usize> = OffsetIter::new(&l).collect();
        assert_eq!(v, vec![1, 3, 5, 2, 4, 6]);
        assert_eq!((0..6).map(|i| l.index_of(i)).collect::<Vec<_>>(), v);
        assert!(!l.is_contiguous());
        assert!(Layout::contiguous(&[2, 1, 3]).is_contiguous());
    }
}
