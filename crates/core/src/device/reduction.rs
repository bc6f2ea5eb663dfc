//! The vocabulary of a reduction's row (`tensor/reduce_list.rs`): how it folds elements, what it
//! yields, which dtype it writes, and what its kernels derive from those (accumulator, partials).
//!
//! Backends and collectives read these properties instead of matching on `ReduceOp`, so a new row
//! reaches every device without touching them.

use torchlet_alloc::types::{DType, Result, TensorError};

use super::ReduceOp;

/// How two values combine: the fold of a reduction and of an `all_reduce`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fold {
    /// `a + b` (integers wrap, as int64 arithmetic does on a GPU).
    Sum,
    /// `a * b` (integers wrap).
    Prod,
    /// The larger; NaN wins and stays.
    Max,
    /// The smaller; NaN wins and stays.
    Min,
}

impl Fold {
    /// Parse "sum", "prod" (or "product"), "max", "min", in any case: torch.distributed.ReduceOp's
    /// names, as `all_reduce` takes them.
    pub fn parse(name: &str) -> Option<Fold> {
        match name.to_ascii_lowercase().as_str() {
            "sum" => Some(Fold::Sum),
            "prod" | "product" => Some(Fold::Prod),
            "max" => Some(Fold::Max),
            "min" => Some(Fold::Min),
            _ => None,
        }
    }

    /// Whether the fold keeps one of its operands (max, min) rather than computing a new value;
    /// a selecting fold can report where its value came from.
    pub fn selects(self) -> bool {
        matches!(self, Fold::Max | Fold::Min)
    }

    /// The value a float fold starts from: its identity.
    pub fn start_f64(self) -> f64 {
        match self {
            Fold::Sum => 0.0,
            Fold::Prod => 1.0,
            Fold::Max => f64::NEG_INFINITY,
            Fold::Min => f64::INFINITY,
        }
    }

    /// The value an integer fold starts from: its identity.
    pub fn start_i64(self) -> i64 {
        match self {
            Fold::Sum => 0,
            Fold::Prod => 1,
            Fold::Max => i64::MIN,
            Fold::Min => i64::MAX,
        }
    }

    /// Whether a selecting fold takes `v` over the value `best` it holds: strictly better, or
    /// NaN over a number (so the first of equal values, and the first NaN, stay).
    #[inline]
    pub fn prefers_f64(self, v: f64, best: f64) -> bool {
        !best.is_nan()
            && (v.is_nan()
                || match self {
                    Fold::Max => v > best,
                    _ => v < best,
                })
    }

    /// As [`Fold::prefers_f64`], for integers.
    #[inline]
    pub fn prefers_i64(self, v: i64, best: i64) -> bool {
        match self {
            Fold::Max => v > best,
            _ => v < best,
        }
    }

    /// `a` folded with `b`, in f64.
    #[inline]
    pub fn f64(self, a: f64, b: f64) -> f64 {
        match self {
            Fold::Sum => a + b,
            Fold::Prod => a * b,
            _ if a.is_nan() || b.is_nan() => f64::NAN,
            Fold::Max => a.max(b),
            Fold::Min => a.min(b),
        }
    }

    /// `a` folded with `b`, in i64.
    #[inline]
    pub fn i64(self, a: i64, b: i64) -> i64 {
        match self {
            Fold::Sum => a.wrapping_add(b),
            Fold::Prod => a.wrapping_mul(b),
            Fold::Max => a.max(b),
            Fold::Min => a.min(b),
        }
    }
}

/// What a reduction writes from its folded state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// The folded value itself.
    Value,
    /// The folded value divided by the number of elements (a mean).
    Mean,
    /// The position (along the reduction) of the value a selecting fold kept, as int64.
    Index,
}

/// Which dtype a reduction of an input writes (PyTorch's rule for the op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DTypeRule {
    /// The input's dtype.
    Same,
    /// Floats keep theirs; integers and bool go to int64 (`sum`, `prod`).
    IntsToI64,
    /// Float inputs only, into their dtype (`mean`).
    FloatOnly,
    /// Always int64 (`argmax`, `argmin`).
    Index,
}

/// How a reduction's partial result sits in staging memory between the blocks of one output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partial {
    /// The accumulator of a computing fold (float for 16- and 32-bit floats, else 8 bytes).
    Acc,
    /// A selected value alone, in the input's own dtype.
    Elem,
    /// A selected (value, int64 index) pair, 16 bytes for every dtype.
    Pair,
}

impl ReduceOp {
    /// The dtype this reduction of an input of `dtype` writes, or the error PyTorch raises.
    pub fn out_dtype(self, dtype: DType) -> Result<DType> {
        match self.dtype_rule() {
            DTypeRule::Same => Ok(dtype),
            DTypeRule::IntsToI64 if dtype.is_float() => Ok(dtype),
            DTypeRule::IntsToI64 | DTypeRule::Index => Ok(DType::I64),
            DTypeRule::FloatOnly if dtype.is_float() => Ok(dtype),
            DTypeRule::FloatOnly => Err(TensorError::runtime(format!(
                "{}(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                self.name(),
                dtype.scalar_type_name()
            ))),
        }
    }

    /// Whether an input of `dtype` is read through an int64 copy: PyTorch's integer and bool
    /// sums (and products) convert the input to their int64 output first.
    pub fn reads_int64_copy(self, dtype: DType) -> bool {
        self.dtype_rule() == DTypeRule::IntsToI64 && !dtype.is_float() && dtype != DType::I64
    }

    /// The value of a reduction over no elements, or `None` when PyTorch refuses one (the
    /// selecting reductions have no identity to return).
    pub fn empty_value(self) -> Option<f64> {
        let fold = self.fold();
        if fold.selects() {
            return None;
        }
        Some(match self.finish() {
            // 0 / 0, as PyTorch's mean of nothing.
            Finish::Mean => f64::NAN,
            _ => fold.start_f64(),
        })
    }

    /// Whether the reduction along one dim also yields the index of each value (PyTorch's
    /// `max(dim)`/`min(dim)` compute values and indices in one pass).
    pub fn indexes_along_dim(self) -> bool {
        self.fold().selects() && self.finish() == Finish::Value && !self.values_only()
    }

    /// How a partial sits in staging memory; `indices`: values with their indices.
    pub fn partial(self, indices: bool) -> Partial {
        match (self.fold().selects(), self.finish(), indices) {
            (false, _, _) => Partial::Acc,
            (true, Finish::Index, _) | (true, _, true) => Partial::Pair,
            (true, _, false) => Partial::Elem,
        }
    }

    /// The dtype the kernel writes for input `elem` before any cast to the destination:
    /// a computing fold's sum type, a selected element, or an index.
    pub fn kernel_out(self, elem: DType) -> DType {
        match (self.finish(), self.fold().selects()) {
            (Finish::Index, _) => DType::I64,
            (_, true) => elem,
            (_, false) if elem.is_float() => elem,
            (_, false) => DType::I64,
        }
    }
}
