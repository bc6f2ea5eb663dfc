//! Each binary elementwise op, declared once: its `Tensor` methods (two tensors, a tensor and a
//! number, a number and a tensor: the op-table `BinaryOp` each runs and its autograd node) and the
//! entry the script registers its operator and method from. Forms that save inputs for backward
//! (`mul`, `div`, `pow`) or compute another way (`s / t` as `t.reciprocal() * s`) are written in
//! `math.rs`, and their rows only name them.

use crate::autograd::{needs_grad, record};
use crate::device::BinaryOp;

use super::{Result, Scalar, Tensor};

/// What kind of op a row is, which says which numbers it takes and how the script orders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryKind {
    /// `+ - * / **`: ints and floats.
    Arithmetic,
    /// `== !=`: ints, floats and bools, into a bool tensor.
    Equality,
    /// `< <= > >=`: as equality, and Python refuses to order a tensor and anything else.
    Ordering,
}

/// `self op other` for two tensors.
pub type TensorsFn = fn(&Tensor, &Tensor) -> Result<Tensor>;
/// `self op s`, or `s op self`, for a tensor and a number.
pub type NumberFn = fn(&Tensor, Scalar) -> Result<Tensor>;

/// One binary op as the script sees it.
pub struct BinaryMethod {
    /// The method's name (`a.add(b)`).
    pub name: &'static str,
    /// The operator that spells it (`a + b`).
    pub operator: &'static str,
    /// Which numbers it takes and how it orders.
    pub kind: BinaryKind,
    /// One line of help: the call and what it computes.
    pub help: &'static str,
    /// Two tensors, broadcast.
    pub tensors: TensorsFn,
    /// A tensor and a number (`t op n`, `t.name(n)`).
    pub number: NumberFn,
    /// A number and a tensor (`n op t`), where the language has it.
    pub number_first: Option<NumberFn>,
}

/// The two-tensor method of a row: written in `math.rs` (`[]`), a comparison, or a sum-like op
/// whose gradients are `g` reshaped (`"Node" => |g| grad_self, grad_other`).
macro_rules! tensors_form {
    ($name:ident $op:ident $help:literal []) => {};
    ($name:ident $op:ident $help:literal [compare]) => {
        #[doc = $help]
        pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
            self.compare(other, BinaryOp::$op)
        }
    };
    ($name:ident $op:ident $help:literal [$node:literal => |$g:ident| $ga:expr, $gb:expr]) => {
        #[doc = $help]
        pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
            let out = self.binary_raw(other, BinaryOp::$op)?;
            if needs_grad(&[self, other]) {
                record(
                    &out,
                    $node,
                    &[self, other],
                    false,
                    Box::new(move |$g, m| {
                        // As PyTorch's generated backward functions: the last input's gradient
                        // first; the engine sums a broadcast one down (Note [validate_outputs]).
                        let gb = if m[1] {
                            Some(Tensor::clone(&$gb))
                        } else {
                            None
                        };
                        let ga = if m[0] {
                            Some(Tensor::clone(&$ga))
                        } else {
                            None
                        };
                        Ok(vec![ga, gb])
                    }),
                );
            }
            Ok(out)
        }
    };
}

/// A tensor-and-number method of a row (`first`: the number on the left): written in `math.rs`
/// (`[]`), a comparison, or recorded with gradient `"Node" => |g, s| grad`.
macro_rules! number_form {
    ($name:ident $op:ident $first:literal []) => {};
    ($name:ident $op:ident $first:literal [compare]) => {
        #[doc = concat!("`", stringify!($name), "` with a number, into a bool tensor.")]
        pub fn $name(&self, s: Scalar) -> Result<Tensor> {
            self.compare_scalar(s, BinaryOp::$op, $first)
        }
    };
    ($name:ident $op:ident $first:literal [$node:literal => |$g:ident, $s:ident| $grad:expr]) => {
        #[doc = concat!("`", stringify!($name), "`: ", stringify!($op), " with a number.")]
        pub fn $name(&self, $s: Scalar) -> Result<Tensor> {
            self.scalar_op(BinaryOp::$op, $s, $first, $node, move |$g| $grad)
        }
    };
}

/// A row's `number op tensor` entry: none, the method it names (made by `number_form!` when it
/// has a node), or a comparison with the number first.
macro_rules! first_entry {
    ($op:ident []) => {
        None
    };
    ($op:ident [compare]) => {
        Some(|t: &Tensor, s: Scalar| t.compare_scalar(s, BinaryOp::$op, true))
    };
    ($op:ident [$method:ident $($form:tt)*]) => {
        Some(Tensor::$method as NumberFn)
    };
}

/// The `[method "Node" => …]` of a `first` entry that is made here; nothing for the others.
macro_rules! first_form {
    ($op:ident []) => {};
    ($op:ident [compare]) => {};
    ($op:ident [$method:ident]) => {};
    ($op:ident [$method:ident $($form:tt)+]) => {
        number_form!($method $op true [$($form)+]);
    };
}

/// The methods and `BINARY_METHODS`, from one row per op:
/// `fn name(Op) "operator" Kind, tensors [form], number method [form], first [entry], "help";`
macro_rules! binary_methods {
    (
        $(
            fn $name:ident($op:ident) $operator:literal $kind:ident,
            tensors [$($tensors:tt)*],
            number $number:ident [$($number_form:tt)*],
            first [$($first:tt)*],
            $help:literal;
        )*
    ) => {
        impl Tensor {
            $(
                tensors_form!($name $op $help [$($tensors)*]);
                number_form!($number $op false [$($number_form)*]);
                first_form!($op [$($first)*]);
            )*
        }

        /// Every binary elementwise op, with its operator.
        pub static BINARY_METHODS: &[BinaryMethod] = &[
            $(BinaryMethod {
                name: stringify!($name),
                operator: $operator,
                kind: BinaryKind::$kind,
                help: $help,
                tensors: Tensor::$name,
                number: Tensor::$number,
                number_first: first_entry!($op [$($first)*]),
            },)*
        ];
    };
}

binary_methods! {
    fn add(Add) "+" Arithmetic,
        tensors ["AddBackward0" => |g| g, g],
        number add_scalar ["AddBackward0" => |g, _s| Ok(g.clone())],
        first [add_scalar],
        "a.add(b) — a + b";
    fn sub(Sub) "-" Arithmetic,
        tensors ["SubBackward0" => |g| g, g.neg()?],
        number sub_scalar ["SubBackward0" => |g, _s| Ok(g.clone())],
        first [rsub_scalar "RsubBackward1" => |g, _s| g.neg()],
        "a.sub(b) — a - b";
    fn mul(Mul) "*" Arithmetic,
        tensors [],
        number mul_scalar ["MulBackward0" => |g, s| g.mul_scalar(s)],
        first [mul_scalar],
        "a.mul(b) — a * b";
    fn div(Div) "/" Arithmetic,
        tensors [],
        number div_scalar ["DivBackward0" => |g, s| g.div_scalar(s)],
        first [rdiv_scalar],
        "a.div(b) — a / b";
    fn pow(Pow) "**" Arithmetic,
        tensors [],
        number pow_number [],
        first [rpow_scalar],
        "t.pow(exponent) — elementwise power by a number or a tensor (also t ** exponent)";
    fn gt(Gt) ">" Ordering,
        tensors [compare], number gt_scalar [compare], first [compare],
        "a.gt(b) — a > b elementwise, a bool tensor (b a tensor or a number)";
    fn lt(Lt) "<" Ordering,
        tensors [compare], number lt_scalar [compare], first [compare],
        "a.lt(b) — a < b elementwise, a bool tensor";
    fn ge(Ge) ">=" Ordering,
        tensors [compare], number ge_scalar [compare], first [compare],
        "a.ge(b) — a >= b elementwise, a bool tensor";
    fn le(Le) "<=" Ordering,
        tensors [compare], number le_scalar [compare], first [compare],
        "a.le(b) — a <= b elementwise, a bool tensor";
    fn eq(Eq) "==" Equality,
        tensors [compare], number eq_scalar [compare], first [compare],
        "a.eq(b) — a == b elementwise, a bool tensor";
    fn ne(Ne) "!=" Equality,
        tensors [compare], number ne_scalar [compare], first [compare],
        "a.ne(b) — a != b elementwise, a bool tensor";
}
