//! The element types the kernels are instantiated for, and what each maps to in CUDA C.

/// A kernel element type: one compiled module per type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Elem {
    /// float
    F32,
    /// double
    F64,
    /// IEEE half
    F16,
    /// bfloat16
    BF16,
    /// long long
    I64,
    /// int
    I32,
    /// unsigned char
    U8,
    /// bool (one byte)
    Bool,
}

impl Elem {
    /// Every element type, in module-slot order.
    pub const ALL: [Elem; 8] = [
        Elem::F32,
        Elem::F64,
        Elem::F16,
        Elem::BF16,
        Elem::I64,
        Elem::I32,
        Elem::U8,
        Elem::Bool,
    ];

    /// The suffix of kernel names for this type, e.g. `unary_c_exp_f32`.
    pub fn suffix(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::F64 => "f64",
            Elem::F16 => "f16",
            Elem::BF16 => "bf16",
            Elem::I64 => "i64",
            Elem::I32 => "i32",
            Elem::U8 => "u8",
            Elem::Bool => "bool",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::F64 | Elem::I64 => 8,
            Elem::F32 | Elem::I32 => 4,
            Elem::F16 | Elem::BF16 => 2,
            Elem::U8 | Elem::Bool => 1,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64 | Elem::F16 | Elem::BF16)
    }

    /// The slot of this type's module.
    pub fn slot(self) -> usize {
        Elem::ALL.iter().position(|&e| e == self).unwrap_or(0)
    }

    /// What `sum` writes for this input type (integers and bool sum into int64, as PyTorch).
    pub fn sum_type(self) -> Elem {
        if self.is_float() {
            self
        } else {
            Elem::I64
        }
    }

    /// The C definitions that instantiate the kernel sources for this type.
    pub fn module_header(self) -> String {
        // (storage, compute, accumulator, sum output, is_fp)
        let (t, c, a, s, fp) = match self {
            Elem::F32 => ("float", "float", "float", "float", 1),
            Elem::F64 => ("double", "double", "double", "double", 1),
            Elem::F16 => ("f16", "float", "float", "f16", 1),
            Elem::BF16 => ("bf16", "float", "float", "bf16", 1),
            Elem::I64 => ("i64", "i64", "i64", "i64", 0),
            Elem::I32 => ("int", "int", "i64", "i64", 0),
            Elem::U8 => ("u8", "int", "i64", "i64", 0),
            Elem::Bool => ("bool", "int", "i64", "i64", 0),
        };
        format!(
            "#define DTS {}\n#define IS_FP {fp}\n#define DECLARE_TYPES typedef {t} T; typedef {c} C; typedef {a} A; typedef {s} SUM_T;\n",
            self.suffix()
        )
    }
}
