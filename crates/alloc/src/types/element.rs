//! Reading and writing single elements of any dtype at a raw address, and dtype rounding rules.

use half::{bf16, f16};

use super::dtype::DType;
use super::scalar::Scalar;

/// Round an f64 to the nearest value the float dtype can hold (identity for f64).
pub fn round_to(v: f64, dtype: DType) -> f64 {
    match dtype {
        DType::F32 => v as f32 as f64,
        DType::F16 => f16::from_f64(v).to_f64(),
        DType::BF16 => bf16::from_f64(v).to_f64(),
        _ => v,
    }
}

/// Convert a number to an integer dtype the way a C cast does (wrapping for u8/i32).
pub fn wrap_int(s: Scalar, dtype: DType) -> i64 {
    let v = s.to_i64();
    match dtype {
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        _ => v,
    }
}

/// Load element `index` (in elements) of dtype `dtype` at `base` as f64.
///
/// # Safety
/// `base + index * size` must be a readable element of that dtype.
#[inline]
pub unsafe fn load_f64(base: *const u8, dtype: DType, index: usize) -> f64 {
    match dtype {
        DType::F32 => *(base as *const f32).add(index) as f64,
        DType::F64 => *(base as *const f64).add(index),
        DType::F16 => (*(base as *const f16).add(index)).to_f64(),
        DType::BF16 => (*(base as *const bf16).add(index)).to_f64(),
        DType::I64 => *(base as *const i64).add(index) as f64,
        DType::I32 => *(base as *const i32).add(index) as f64,
        DType::U8 => *base.add(index) as f64,
        DType::Bool => (*base.add(index) != 0) as u8 as f64,
    }
}

/// Load element `index` as i64 (floats truncate).
///
/// # Safety
/// As for `load_f64`.
#[inline]
pub unsafe fn load_i64(base: *const u8, dtype: DType, index: usize) -> i64 {
    match dtype {
        DType::I64 => *(base as *const i64).add(index),
        DType::I32 => *(base as *const i32).add(index) as i64,
        DType::U8 => *base.add(index) as i64,
        DType::Bool => (*base.add(index) != 0) as i64,
        _ => load_f64(base, dtype, index) as i64,
    }
}

/// Store an f64 into element `index`, converting to the dtype.
///
/// # Safety
/// `base + index * size` must be a writable element of that dtype.
#[inline]
pub unsafe fn store_f64(base: *mut u8, dtype: DType, index: usize, v: f64) {
    match dtype {
        DType::F32 => *(base as *mut f32).add(index) = v as f32,
        DType::F64 => *(base as *mut f64).add(index) = v,
        DType::F16 => *(base as *mut f16).add(index) = f16::from_f64(v),
        DType::BF16 => *(base as *mut bf16).add(index) = bf16::from_f64(v),
        DType::I64 => *(base as *mut i64).add(index) = v as i64,
        DType::I32 => *(base as *mut i32).add(index) = v as i64 as i32,
        DType::U8 => *base.add(index) = v as i64 as u8,
        DType::Bool => *base.add(index) = (v != 0.0) as u8,
    }
}

/// Store an i64 into element `index`, converting to the dtype.
///
/// # Safety
/// As for `store_f64`.
#[inline]
pub unsafe fn store_i64(base: *mut u8, dtype: DType, index: usize, v: i64) {
    match dtype {
        DType::I64 => *(base as *mut i64).add(index) = v,
        DType::I32 => *(base as *mut i32).add(index) = v as i32,
        DType::U8 => *base.add(index) = v as u8,
        DType::Bool => *base.add(index) = (v != 0) as u8,
        _ => store_f64(base, dtype, index, v as f64),
    }
}

/// Load element `index` as the `Scalar` kind matching its dtype.
///
/// # Safety
/// As for `load_f64`.
pub unsafe fn load_scalar(base: *const u8, dtype: DType, index: usize) -> Scalar {
    match dtype.category() {
        super::dtype::Category::Float => Scalar::Float(load_f64(base, dtype, index)),
        super::dtype::Category::Int => Scalar::Int(load_i64(base, dtype, index)),
        super::dtype::Category::Bool => Scalar::Bool(load_i64(base, dtype, index) != 0),
    }
}

/// Store a `Scalar` into element `index`, converting to the dtype.
///
/// # Safety
/// As for `store_f64`.
pub unsafe fn store_scalar(base: *mut u8, dtype: DType, index: usize, v: Scalar) {
    if dtype.is_float() {
        store_f64(base, dtype, index, v.to_f64())
    } else if let Scalar::Float(f) = v {
        store_f64(base, dtype, index, f)
    } else {
        store_i64(base, dtype, index, v.to_i64())
    }
}
