//! Element types (`DType`), their names, sizes and PyTorch's type promotion.

use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float (the default).
    F32,
    /// 64-bit float.
    F64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// 64-bit signed integer.
    I64,
    /// 32-bit signed integer.
    I32,
    /// 8-bit unsigned integer.
    U8,
    /// Boolean (one byte).
    Bool,
}

/// The broad kind of a dtype, used by type promotion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// Signed and unsigned integers.
    Int,
    /// Floating point.
    Float,
}

impl DType {
    /// Every dtype, in a stable order.
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::I32,
        DType::U8,
        DType::Bool,
    ];

    /// The name PyTorch uses after `torch.`: "float32", "int64", ...
    pub fn name(self) -> &'static str {
        self.names().torch
    }

    /// Parse a dtype name, accepting PyTorch's aliases ("float", "half", "long", "torch.float32", ...).
    pub fn parse(name: &str) -> Option<DType> {
        let name = name.trim();
        DType::by_name(name.strip_prefix("torch.").unwrap_or(name))
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// Bool, integer or float.
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::I64 | DType::I32 | DType::U8 => Category::Int,
            _ => Category::Float,
        }
    }

    /// Whether the dtype is a floating-point type.
    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    /// The result dtype of a binary op between two tensors of equal dimension rank class
    /// (PyTorch's `promote_types`).
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a, b) {
            (Bool, x) | (x, Bool) => x,
            (F16, BF16) | (BF16, F16) => F32,
            (F64, _) | (_, F64) => F64,
            (F32, _) | (_, F32) => F32,
            (F16, _) | (_, F16) => F16,
            (BF16, _) | (_, BF16) => BF16,
            (I64, _) | (_, I64) => I64,
            (I32, _) | (_, I32) => I32,
            _ => U8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "torch.{}", self.name())
    }
}

impl DType {
    /// The C++ scalar type name PyTorch's kernel errors use: "Float", "Long", ...
    pub fn scalar_type_name(self) -> &'static str {
        self.names().scalar_type
    }

    /// Whether a value of `self` may be written into `to` by an in-place op (PyTorch's `canCast`).
    pub fn can_cast_to(self, to: DType) -> bool {
        use Category::*;
        !matches!(
            (self.category(), to.category()),
            (Float, Int) | (Float, Bool) | (Int, Bool)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_pytorch() {
        use DType::*;
        assert_eq!(DType::promote(F16, BF16), F32);
        assert_eq!(DType::promote(I64, F16), F16);
        assert_eq!(DType::promote(U8, I32), I32);
        assert_eq!(DType::promote(Bool, U8), U8);
        assert_eq!(DType::promote(F32, F64), F64);
        assert_eq!(DType::promote(I32, F32), F32);
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
        assert_eq!(DType::parse("torch.half"), Some(DType::F16));
        assert_eq!(DType::parse("float8"), None);
    }
}
