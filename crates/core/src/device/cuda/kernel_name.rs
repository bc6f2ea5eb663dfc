//! Kernel names in parts, so that launching a kernel makes no string.

use std::fmt;

use super::elem::CudaDType;
use torchlet_alloc::types::DType;

/// A kernel's name: `stem`, then `_op` when there is an op, then the row kernels' vectors a
/// thread (and `v` for 16-byte vectors), then `_suffix` for each dtype. The last dtype is the
/// module the kernel lives in.
///
/// `KernelName::of("unary_c", F32).op("exp")` is `unary_c_exp_f32`,
/// `KernelName::of("cast_c", F16).and(F32)` is `cast_c_f16_f32` (in the f32 module), and
/// `KernelName::of("softmax_rows", F32).rows(8, true)` is `softmax_rows8v_f32`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct KernelName {
    stem: &'static str,
    op: &'static str,
    per_thread: u32,
    vector: bool,
    first: DType,
    second: Option<DType>,
}

impl KernelName {
    /// The kernel `stem` of `elem`'s module.
    pub const fn of(stem: &'static str, elem: DType) -> Self {
        Self {
            stem,
            op: "",
            per_thread: 0,
            vector: false,
            first: elem,
            second: None,
        }
    }

    /// The same kernel for the op `op` (`unary_c` → `unary_c_exp`).
    pub const fn op(self, op: &'static str) -> Self {
        Self { op, ..self }
    }

    /// A second dtype after the first; the kernel is in this one's module (casts: to, then from).
    pub const fn and(self, module: DType) -> Self {
        Self {
            second: Some(module),
            ..self
        }
    }

    /// The row kernel holding `per_thread` vectors a thread, 16-byte ones when `vector`.
    pub const fn rows(self, per_thread: u32, vector: bool) -> Self {
        Self {
            per_thread,
            vector,
            ..self
        }
    }

    /// The dtype whose module holds the kernel.
    pub fn module(&self) -> DType {
        self.second.unwrap_or(self.first)
    }
}

impl fmt::Display for KernelName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.stem)?;
        if !self.op.is_empty() {
            write!(f, "_{}", self.op)?;
        }
        if self.per_thread > 0 {
            write!(
                f,
                "{}{}",
                self.per_thread,
                if self.vector { "v" } else { "" }
            )?;
        }
        write!(f, "_{}", self.first.suffix())?;
        if let Some(second) = self.second {
            write!(f, "_{}", second.suffix())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_kernels_names() {
        let exp = KernelName::of("unary_c", DType::F32).op("exp");
        assert_eq!(exp.to_string(), "unary_c_exp_f32");
        let cast = KernelName::of("cast_c", DType::F16).and(DType::F32);
        assert_eq!(cast.to_string(), "cast_c_f16_f32");
        assert_eq!(cast.module(), DType::F32);
        let rows = KernelName::of("softmax_rows", DType::BF16).rows(8, true);
        assert_eq!(rows.to_string(), "softmax_rows8v_bf16");
        let scalar_rows = KernelName::of("layer_norm_rows", DType::F16).rows(2, false);
        assert_eq!(scalar_rows.to_string(), "layer_norm_rows2_f16");
        assert_eq!(
            KernelName::of("fill_c", DType::I64).to_string(),
            "fill_c_i64"
        );
    }
}
