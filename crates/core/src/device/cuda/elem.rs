//! What each `DType` means to the kernels: its kernel-name suffix, module slot and CUDA C types.

use torchlet_alloc::types::DType;

/// The CUDA kernels' view of a dtype: one compiled module per dtype.
pub trait CudaDType {
    /// The suffix of kernel names for this type, e.g. `unary_c_exp_f32`.
    fn suffix(self) -> &'static str;
    /// The slot of this type's module (its place in `DType::ALL`).
    fn slot(self) -> usize;
    /// What `sum` writes for this input type (integers and bool sum into int64, as PyTorch).
    fn sum_type(self) -> DType;
    /// The C definitions that instantiate the kernel sources for this type.
    fn module_header(self) -> String;
}

impl CudaDType for DType {
    fn suffix(self) -> &'static str {
        self.names().kernel_suffix
    }

    fn slot(self) -> usize {
        DType::ALL.iter().position(|&e| e == self).unwrap_or(0)
    }

    fn sum_type(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::I64
        }
    }

    fn module_header(self) -> String {
        // (storage, compute, accumulator, sum output, is_fp)
        let (t, c, a, s, fp) = match self {
            DType::F32 => ("float", "float", "float", "float", 1),
            DType::F64 => ("double", "double", "double", "double", 1),
            DType::F16 => ("f16", "float", "float", "f16", 1),
            DType::BF16 => ("bf16", "float", "float", "bf16", 1),
            DType::I64 => ("i64", "i64", "i64", "i64", 0),
            DType::I32 => ("int", "int", "i64", "i64", 0),
            DType::U8 => ("u8", "int", "i64", "i64", 0),
            DType::Bool => ("bool", "int", "i64", "i64", 0),
        };
        format!(
            "#define DTS {}\n#define IS_FP {fp}\n#define DECLARE_TYPES typedef {t} T; typedef {c} C; typedef {a} A; typedef {s} SUM_T;\n",
            self.suffix()
        )
    }
}
