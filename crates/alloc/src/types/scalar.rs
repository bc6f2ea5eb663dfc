//! `Scalar`: a Python number (float, int or bool) as ops and `item()` see it.

use std::fmt;

use super::dtype::{Category, DType};

/// A single number, as Python would hold it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A Python float.
    Float(f64),
    /// A Python int.
    Int(i64),
    /// A Python bool.
    Bool(bool),
}

impl Scalar {
    /// The value as f64.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Float(v) => v,
            Scalar::Int(v) => v as f64,
            Scalar::Bool(v) => v as i64 as f64,
        }
    }

    /// The value as i64 (floats truncate toward zero, as a cast does).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Float(v) => v as i64,
            Scalar::Int(v) => v,
            Scalar::Bool(v) => v as i64,
        }
    }

    /// The category a Python number of this kind takes part in type promotion with.
    pub fn category(self) -> Category {
        match self {
            Scalar::Float(_) => Category::Float,
            Scalar::Int(_) => Category::Int,
            Scalar::Bool(_) => Category::Bool,
        }
    }

    /// The dtype a tensor made from this number alone gets (`torch.tensor(3)` is int64).
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Float(_) => DType::F32,
            Scalar::Int(_) => DType::I64,
            Scalar::Bool(_) => DType::Bool,
        }
    }

    /// Read this value back as the given dtype would store it (rounding/truncating).
    pub fn cast(self, dtype: DType) -> Scalar {
        match dtype.category() {
            Category::Float => Scalar::Float(super::element::round_to(self.to_f64(), dtype)),
            Category::Bool => Scalar::Bool(self.to_f64() != 0.0),
            Category::Int => Scalar::Int(super::element::wrap_int(self, dtype)),
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Float(v) => {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e16 {
                    write!(f, "{v:.1}")
                } else {
                    write!(f, "{v}")
                }
            }
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::Bool(true) => write!(f, "True"),
            Scalar::Bool(false) => write!(f, "False"),
        }
    }
}
