//! The macros that turn the op table (`ops/mod.rs`) into the op enums, host formulas, kernel names and CUDA functors.

/// Builds `UnaryOp` from rows `Variant {fields} => "kernel" { params, float, int, fast_f32, cuda }`.
macro_rules! unary_ops {
    ($(
        $(#[doc = $doc:literal])*
        $op:ident $({ $($field:ident : $fty:ty),* })? => $kernel:literal {
            $(params: ($p0:expr, $p1:expr),)?
            float: |$x:ident| $float:expr,
            $(int: |$xi:ident| $int:expr,)?
            $(fast_f32: $fast:ident,)?
            cuda: $cuda:literal,
        }
    )*) => {
        /// Elementwise functions of one tensor; each is one row of the table in `device/ops`.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum UnaryOp {
            $( $(#[doc = $doc])* $op $({ $(#[allow(missing_docs)] $field: $fty),* })?, )*
        }

        #[allow(unused_variables)]
        impl UnaryOp {
            /// Every op's kernel name and CUDA expression (of `x`, `p0`, `p1`, in type `X`).
            pub const CUDA: &'static [(&'static str, &'static str)] = &[$(($kernel, $cuda)),*];

            /// The kernel name (`unary_c_{name}_{dtype}`).
            pub fn kernel_name(self) -> &'static str {
                match self { $( UnaryOp::$op $({ $($field),* })? => $kernel, )* }
            }

            /// The two numbers the CUDA kernel receives as `p0`, `p1`.
            pub fn kernel_params(self) -> (f64, f64) {
                match self { $( UnaryOp::$op $({ $($field),* })? => unary_ops!(@params $(($p0, $p1))?), )* }
            }

            /// The op on one f64 (float destinations compute here, or in f32 where `fast_f32`).
            #[inline]
            pub fn eval_f64(self, x: f64) -> f64 {
                match self {
                    $( UnaryOp::$op $({ $($field),* })? => { let $x = x; $float } )*
                }
            }

            /// The op on one i64 (integer and bool destinations); without an `int` formula, through f64.
            #[inline]
            pub fn eval_i64(self, x: i64) -> i64 {
                match self {
                    $( UnaryOp::$op $({ $($field),* })? => unary_ops!(@int self, x $(, |$xi| $int)?), )*
                }
            }

            /// Hands `map` the op's f32 formula when it has one (PyTorch computes these in f32).
            pub fn with_f32<M: MapF32>(self, map: M) -> bool {
                match self {
                    $( UnaryOp::$op $({ $($field),* })? => unary_ops!(@f32 map, |$x| $float $(, $fast)?), )*
                }
            }
        }

    };
    (@params) => { (0.0, 0.0) };
    (@params ($p0:expr, $p1:expr)) => { ($p0, $p1) };
    (@int $s:ident, $v:ident) => { $s.eval_f64($v as f64) as i64 };
    (@int $s:ident, $v:ident, |$xi:ident| $int:expr) => {{ let $xi = $v; $int }};
    (@f32 $m:ident, |$x:ident| $float:expr) => { false };
    (@f32 $m:ident, |$x:ident| $float:expr, $fast:ident) => {{ $m.map(move |$x: f32| -> f32 { $float }); true }};
}

/// Builds `BinaryOp` from arithmetic rows (as `unary_ops`, of `a`, `b`) and comparison rows.
macro_rules! binary_ops {
    (
        arith { $(
            $(#[doc = $doc:literal])*
            $op:ident $({ $($field:ident : $fty:ty),* })? => $kernel:literal {
                $(params: ($p0:expr, $p1:expr),)?
                float: |$a:ident, $b:ident| $float:expr,
                $(int: |$ai:ident, $bi:ident| $int:expr,)?
                $(fast_f32: $fast:ident,)?
                cuda: $cuda:literal,
            }
        )* }
        compare { $(
            $(#[doc = $cdoc:literal])*
            $cop:ident => $ckernel:literal { holds: |$ca:ident, $cb:ident| $holds:expr, cuda: $ccuda:literal, }
        )* }
    ) => {
        /// Elementwise functions of two tensors (or a tensor and a scalar), computed `lhs op rhs`;
        /// each is one row of the table in `device/ops`.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum BinaryOp {
            $( $(#[doc = $doc])* $op $({ $(#[allow(missing_docs)] $field: $fty),* })?, )*
            $( $(#[doc = $cdoc])* $cop, )*
        }

        #[allow(unused_variables)]
        impl BinaryOp {
            /// Every op's kernel name, CUDA result type (`T` or `bool`) and expression (of `a`, `b`, `p0`, `p1`).
            pub const CUDA: &'static [(&'static str, &'static str, &'static str)] =
                &[$(($kernel, "T", $cuda),)* $(($ckernel, "bool", $ccuda),)*];

            /// The kernel name (`binary_c_{name}_{dtype}`).
            pub fn kernel_name(self) -> &'static str {
                match self {
                    $( BinaryOp::$op $({ $($field),* })? => $kernel, )*
                    $( BinaryOp::$cop => $ckernel, )*
                }
            }

            /// The two numbers the CUDA kernel receives as `p0`, `p1`.
            pub fn kernel_params(self) -> (f64, f64) {
                match self {
                    $( BinaryOp::$op $({ $($field),* })? => unary_ops!(@params $(($p0, $p1))?), )*
                    _ => (0.0, 0.0),
                }
            }

            /// Whether the op compares (`==`, `<` …) into a bool destination, computing in its
            /// operands' type rather than the destination's.
            pub fn is_comparison(self) -> bool {
                matches!(self, $( BinaryOp::$cop )|*)
            }

            /// Whether comparison `self` holds for `a`, `b` (false for an arithmetic op).
            #[inline]
            pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
                match self {
                    $( BinaryOp::$cop => { let ($ca, $cb) = (a, b); $holds } )*
                    _ => false,
                }
            }

            /// The op on two f64s (a comparison gives 0 or 1).
            #[inline]
            pub fn eval_f64(self, a: f64, b: f64) -> f64 {
                match self {
                    $( BinaryOp::$op $({ $($field),* })? => { let ($a, $b) = (a, b); $float } )*
                    cmp => cmp.holds(a, b) as u8 as f64,
                }
            }

            /// The op on two i64s; without an `int` formula, through f64.
            #[inline]
            pub fn eval_i64(self, a: i64, b: i64) -> i64 {
                match self {
                    $( BinaryOp::$op $({ $($field),* })? => binary_ops!(@int self, a, b $(, |$ai, $bi| $int)?), )*
                    cmp => cmp.holds(a, b) as i64,
                }
            }

            /// Hands `map` the op's f32 formula when it has one.
            pub fn with_f32<M: MapF32x2>(self, map: M) -> bool {
                match self {
                    $( BinaryOp::$op $({ $($field),* })? => binary_ops!(@f32 map, |$a, $b| $float $(, $fast)?), )*
                    _ => false,
                }
            }
        }
    };
    (@int $s:ident, $a:ident, $b:ident) => { $s.eval_f64($a as f64, $b as f64) as i64 };
    (@int $s:ident, $a:ident, $b:ident, |$ai:ident, $bi:ident| $int:expr) => {{ let ($ai, $bi) = ($a, $b); $int }};
    (@f32 $m:ident, |$a:ident, $b:ident| $float:expr) => { false };
    (@f32 $m:ident, |$a:ident, $b:ident| $float:expr, $fast:ident) => {{ $m.map(move |$a: f32, $b: f32| -> f32 { $float }); true }};
}
