//! Indexing a tensor by ranges and by several indices: `t[1..3]`, `t[1..=3]`, `t[[.., 0]]`, `t.select(d, i)`.
//!
//! Rhai parses one expression between brackets, so PyTorch's `t[:, 0]` is written with an array
//! of indices, `t[[.., 0]]`: an int selects (its dimension goes), a range narrows (`..` keeps the
//! whole dimension), `()` (Python's `None`) inserts a dimension of size 1. Every result is a view,
//! as in PyTorch, so indexing never allocates.
use super::documented::Documented;
use rhai::{Array, Dynamic, Engine, INT};

use super::convert::{OrRaise, Res};
use super::errors::{raise, type_error};
use torchlet_core::tensor::Tensor;

/// What Rhai's `a..b` evaluates to.
type ExclusiveRange = std::ops::Range<INT>;
/// What Rhai's `a..=b` evaluates to.
type InclusiveRange = std::ops::RangeInclusive<INT>;

/// Register the range and array indexers and `select`.
pub(crate) fn register(engine: &mut Engine) {
    engine
        .register_indexer_get(|t: &mut Tensor, r: ExclusiveRange| slice(t, 0, r.start, r.end))
        .register_indexer_get(|t: &mut Tensor, r: InclusiveRange| {
            slice(t, 0, *r.start(), r.end().saturating_add(1))
        })
        .register_indexer_get(|t: &mut Tensor, _: ()| t.unsqueeze(0).or_raise())
        .register_indexer_get(|t: &mut Tensor, indices: Array| index_all(t, &indices))
        .register_doc("select", &["t.select(dim, i) — the i-th slice along dim, which goes away (a view; t[[.., i]] for dim 1)"], |t: &mut Tensor, dim: INT, i: INT| {
            t.select(dim as isize, i as isize).or_raise()
        });
}

/// Elements `start..end` of `dim`, clamped to the dimension as Python clamps a slice.
fn slice(t: &Tensor, dim: usize, start: INT, end: INT) -> Res<Tensor> {
    if t.dim() == 0 {
        return Err(raise(
            "IndexError",
            "slice() cannot be applied to a 0-dim tensor.",
        ));
    }
    let n = t.dims()[dim] as INT;
    let clamp = |v: INT| if v < 0 { v + n } else { v }.clamp(0, n);
    let (from, to) = (clamp(start), clamp(end));
    let len = (to - from).max(0) as usize;
    t.narrow(dim as isize, from as isize, len).or_raise()
}

/// `t[[i, a..b, .., ()]]`: each index applies to the next dimension, left to right.
fn index_all(t: &Tensor, indices: &Array) -> Res<Tensor> {
    let mut out = t.clone();
    let mut dim = 0usize;
    for index in indices {
        if index.is_unit() {
            out = out.unsqueeze(dim as isize).or_raise()?;
            dim += 1;
            continue;
        }
        if dim >= out.dim() {
            return Err(raise(
                "IndexError",
                format!("too many indices for tensor of dimension {}", t.dim()),
            ));
        }
        out = match range_of(index) {
            Some((start, end)) => {
                dim += 1;
                slice(&out, dim - 1, start, end)?
            }
            None => {
                let i = index.as_int().map_err(|_| {
                    type_error(format!(
                        "an index is an int, a range (a..b, a..=b, ..) or () for a new dimension, not {}",
                        kind_of(index)
                    ))
                })?;
                out.select(dim as isize, i as isize).or_raise()?
            }
        };
    }
    Ok(out)
}

/// A range index as `start..end` (end exclusive).
fn range_of(index: &Dynamic) -> Option<(INT, INT)> {
    if let Some(r) = index.read_lock::<ExclusiveRange>() {
        return Some((r.start, r.end));
    }
    let r = index.read_lock::<InclusiveRange>()?;
    Some((*r.start(), r.end().saturating_add(1)))
}

/// A value's kind in the language's words, for messages.
fn kind_of(value: &Dynamic) -> &'static str {
    if value.is_float() {
        "a float"
    } else if value.is_string() {
        "a string"
    } else if value.is_bool() {
        "a bool"
    } else if value.is_array() {
        "an array (one level of indices only)"
    } else if value.is_map() {
        "a map"
    } else if value.is::<Tensor>() {
        "a tensor (index tensors are not supported)"
    } else {
        "this value"
    }
}
