//! Each reduction declared once: its `ReduceOp` variant, how it folds and finishes, its dtype
//! rule, its CUDA kernel family, how a whole reduction reads the input, its autograd backward, the
//! `Tensor` method it generates (`t.name(dim, keepdim)`, `dim` `None` for all elements) and the
//! script entry the language registers and documents it from.

use crate::device::reduction::{DTypeRule, Finish, Fold};

use super::reduce::Read;
use super::reduce_grad::Grad;
use super::{Result, Tensor};

/// One reduction method as the script sees it: `t.name()`, `t.name(dim)`, `t.name(dim, keepdim)`.
pub struct ReduceMethod {
    /// The method's and the function's name.
    pub name: &'static str,
    /// One line of help: the call and what it computes.
    pub help: &'static str,
    /// The method: over all elements with `dim` `None`, else along `dim`.
    pub call: fn(&Tensor, Option<isize>, bool) -> Result<Tensor>,
}

/// `ReduceOp`, its properties, the `Tensor` methods and `REDUCE_METHODS`, from one row per
/// reduction: `Variant => method { fold, finish, dtype, kernel, whole, [values_only,] [autocast,]
/// grad, help }`.
macro_rules! reduce_ops {
    ($(
        $(#[doc = $doc:literal])*
        $op:ident => $name:ident {
            fold: $fold:ident,
            finish: $finish:ident,
            dtype: $rule:ident,
            kernel: $kernel:literal,
            whole: $read:ident,
            $(values_only: $vo:literal,)?
            $(autocast: $cast:literal,)?
            grad: $grad:ident $(($whole_node:literal, $dim_node:literal))?,
            help: $help:literal,
        }
    )*) => {
        /// Reductions over some dimensions or over all elements; each is one row of the table
        /// in `tensor/reduce_list.rs`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ReduceOp {
            $( $(#[doc = $doc])* $op, )*
        }

        impl ReduceOp {
            /// Every reduction, in table order.
            pub const ALL: &'static [ReduceOp] = &[$(ReduceOp::$op),*];

            /// The method's name (`sum`), as errors and help spell it.
            pub fn name(self) -> &'static str {
                match self { $(ReduceOp::$op => stringify!($name),)* }
            }

            /// How the reduction combines two elements.
            pub fn fold(self) -> Fold {
                match self { $(ReduceOp::$op => Fold::$fold,)* }
            }

            /// What it writes from the folded state.
            pub fn finish(self) -> Finish {
                match self { $(ReduceOp::$op => Finish::$finish,)* }
            }

            /// Which dtype it writes for an input.
            pub fn dtype_rule(self) -> DTypeRule {
                match self { $(ReduceOp::$op => DTypeRule::$rule,)* }
            }

            /// The CUDA kernel family it runs (`reduce_*_{kernel}`); a mean runs the sum's, scaled.
            pub fn kernel(self) -> &'static str {
                match self { $(ReduceOp::$op => $kernel,)* }
            }

            /// How a reduction over all elements reads its input, as PyTorch prepares it.
            pub(crate) fn whole_read(self) -> Read {
                match self { $(ReduceOp::$op => Read::$read,)* }
            }

            /// Whether a selecting reduction yields values alone even along one dim (amax,
            /// amin), where max(dim) and min(dim) also yield the indices.
            pub fn values_only(self) -> bool {
                match self { $(ReduceOp::$op => reduce_ops!(@flag $($vo)?),)* }
            }

            /// The autocast op name whose policy may give a float32 result, if any.
            pub(crate) fn autocast(self) -> Option<&'static str> {
                match self { $(ReduceOp::$op => reduce_ops!(@opt $($cast)?),)* }
            }

            /// Its backward, and the node names over all elements and along a dim.
            pub(crate) fn grad(self) -> (Grad, &'static str, &'static str) {
                match self {
                    $(ReduceOp::$op => (Grad::$grad, reduce_ops!(@node $($whole_node)?), reduce_ops!(@node $($dim_node)?)),)*
                }
            }

            /// One line of help: the call and what it computes.
            pub fn help(self) -> &'static str {
                match self { $(ReduceOp::$op => $help,)* }
            }
        }

        impl Tensor {
            $(
                $(#[doc = $doc])*
                pub fn $name(&self, dim: Option<isize>, keepdim: bool) -> Result<Tensor> {
                    self.reduction(ReduceOp::$op, dim, keepdim)
                }
            )*
        }

        /// Every reduction method of one tensor.
        pub static REDUCE_METHODS: &[ReduceMethod] = &[
            $(ReduceMethod { name: stringify!($name), help: $help, call: Tensor::$name },)*
        ];
    };
    (@flag) => { false };
    (@flag $v:literal) => { $v };
    (@opt) => { None };
    (@opt $v:literal) => { Some($v) };
    (@node) => { "" };
    (@node $v:literal) => { $v };
}

reduce_ops! {
    /// Sum of all elements, or along `dim`. Integers and bool sum to int64 (through an int64
    /// copy); under autocast a float16 or bfloat16 input sums into float32, read as it is.
    Sum => sum {
        fold: Sum, finish: Value, dtype: IntsToI64, kernel: "sum", whole: AsIs, autocast: "sum",
        grad: Spread("SumBackward0", "SumBackward1"),
        help: "t.sum([dim[, keepdim]]) — sum of all elements, or along dim",
    }
    /// Arithmetic mean of all elements, or along `dim` (float dtypes only).
    Mean => mean {
        fold: Sum, finish: Mean, dtype: FloatOnly, kernel: "sum", whole: AsIs,
        grad: SpreadMean("MeanBackward0", "MeanBackward1"),
        help: "t.mean([dim[, keepdim]]) — mean of all elements, or along dim",
    }
    /// Largest element (NaN propagates), or largest along `dim` (values only; the indices
    /// PyTorch computes with them are kept for backward).
    Max => max {
        fold: Max, finish: Value, dtype: Same, kernel: "max", whole: Contiguous,
        grad: Extreme("MaxBackward1", "MaxBackward0"),
        help: "t.max([dim[, keepdim]]) — largest element, or along dim",
    }
    /// Smallest element (NaN propagates), or smallest along `dim` (values only).
    Min => min {
        fold: Min, finish: Value, dtype: Same, kernel: "min", whole: Contiguous,
        grad: Extreme("MinBackward1", "MinBackward0"),
        help: "t.min([dim[, keepdim]]) — smallest element, or along dim",
    }
    /// Largest value over all elements, or along `dim` (several dims through
    /// `reduction_over`), without indices; its gradient is shared among the equal maxima.
    Amax => amax {
        fold: Max, finish: Value, dtype: Same, kernel: "max", whole: AsIs, values_only: true,
        grad: Count("AmaxBackward0", "AmaxBackward0"),
        help: "t.amax([dim[, keepdim]]) — largest value over dims (no indices)",
    }
    /// Smallest value over all elements, or along `dim`, without indices.
    Amin => amin {
        fold: Min, finish: Value, dtype: Same, kernel: "min", whole: AsIs, values_only: true,
        grad: Count("AminBackward0", "AminBackward0"),
        help: "t.amin([dim[, keepdim]]) — smallest value over dims (no indices)",
    }
    /// Product of all elements, or along `dim`; integers and bool multiply to int64.
    Prod => prod {
        fold: Prod, finish: Value, dtype: IntsToI64, kernel: "prod", whole: AsIs,
        grad: Product("ProdBackward0", "ProdBackward1"),
        help: "t.prod([dim[, keepdim]]) — product of all elements, or along dim",
    }
    /// Index of the first largest element (NaN counts as largest) of the flattened tensor, or
    /// along `dim`; int64.
    ArgMax => argmax {
        fold: Max, finish: Index, dtype: Index, kernel: "argmax", whole: Flat,
        grad: None,
        help: "t.argmax([dim[, keepdim]]) — index of the largest element",
    }
    /// Index of the first smallest element (NaN counts as smallest) of the flattened tensor, or
    /// along `dim`; int64.
    ArgMin => argmin {
        fold: Min, finish: Index, dtype: Index, kernel: "argmin", whole: Flat,
        grad: None,
        help: "t.argmin([dim[, keepdim]]) — index of the smallest element",
    }
}
