//! Every name a dtype goes by, one row a dtype: PyTorch's, C++'s, the legacy tensor type's, the kernels'.

use super::dtype::DType;

/// The names of one dtype, as each place that prints or parses it spells it.
#[derive(Debug)]
pub struct DTypeNames {
    /// The dtype this row names.
    pub dtype: DType,
    /// PyTorch's name after `torch.`: "float32".
    pub torch: &'static str,
    /// The other names PyTorch accepts for it: "float", "half", "long".
    pub aliases: &'static [&'static str],
    /// The C++ `ScalarType` PyTorch's kernel errors print: "Float", "Long".
    pub scalar_type: &'static str,
    /// The C++ type PyTorch's matmul dtype error prints: "float", "c10::Half", "long int".
    pub c_type: &'static str,
    /// The legacy tensor type, without `torch.` or `torch.cuda.`: "FloatTensor".
    pub legacy_tensor: &'static str,
    /// The suffix of the CUDA kernels' names: "f32" in `unary_c_exp_f32`.
    pub kernel_suffix: &'static str,
}

/// Shorthand for a row, so the table reads as one line a dtype.
const fn row(
    dtype: DType,
    torch: &'static str,
    aliases: &'static [&'static str],
    scalar_type: &'static str,
    c_type: &'static str,
    legacy_tensor: &'static str,
    kernel_suffix: &'static str,
) -> DTypeNames {
    DTypeNames {
        dtype,
        torch,
        aliases,
        scalar_type,
        c_type,
        legacy_tensor,
        kernel_suffix,
    }
}

/// One row a dtype, in `DType::ALL` order, so that `dtype as usize` is its row.
#[rustfmt::skip]
const TABLE: [DTypeNames; 8] = [
    row(DType::F32, "float32", &["float"], "Float", "float", "FloatTensor", "f32"),
    row(DType::F64, "float64", &["double"], "Double", "double", "DoubleTensor", "f64"),
    row(DType::F16, "float16", &["half"], "Half", "c10::Half", "HalfTensor", "f16"),
    row(DType::BF16, "bfloat16", &[], "BFloat16", "c10::BFloat16", "BFloat16Tensor", "bf16"),
    row(DType::I64, "int64", &["long"], "Long", "long int", "LongTensor", "i64"),
    row(DType::I32, "int32", &["int"], "Int", "int", "IntTensor", "i32"),
    row(DType::U8, "uint8", &[], "Byte", "unsigned char", "ByteTensor", "u8"),
    row(DType::Bool, "bool", &[], "Bool", "bool", "BoolTensor", "bool"),
];

impl DType {
    /// Every name this dtype goes by.
    pub fn names(self) -> &'static DTypeNames {
        &TABLE[self as usize]
    }

    /// The dtype whose name or alias is `name` (already stripped of `torch.`).
    pub(crate) fn by_name(name: &str) -> Option<DType> {
        TABLE
            .iter()
            .find(|r| r.torch == name || r.aliases.contains(&name))
            .map(|r| r.dtype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_all() {
        for (i, d) in DType::ALL.into_iter().enumerate() {
            assert_eq!(TABLE[i].dtype, d);
            assert_eq!(d.names().dtype, d);
        }
    }
}
