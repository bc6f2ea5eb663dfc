//! The elementwise kernels' functor structs and instantiations, written from the op table.
//!
//! `kernels/elementwise.cu` holds the templates and four marker lines; this fills them with one
//! `UOP`/`BOP` functor and one `INST_UNARY`/`INST_BINARY` line per row of `device::ops`, so a
//! kernel exists exactly for the ops the backend can name.

use crate::device::ops::{BinaryOp, UnaryOp};

/// Where the unary functors go.
pub const UNARY_FUNCTORS: &str = "// @UNARY_FUNCTORS@";
/// Where the unary kernels are instantiated.
pub const UNARY_INSTANCES: &str = "// @UNARY_INSTANCES@";
/// Where the binary functors go.
pub const BINARY_FUNCTORS: &str = "// @BINARY_FUNCTORS@";
/// Where the binary kernels are instantiated.
pub const BINARY_INSTANCES: &str = "// @BINARY_INSTANCES@";

/// `template` with its four markers replaced by the table's functors and instantiations.
pub fn fill(template: &str) -> String {
    let unary_names = || UnaryOp::CUDA.iter().map(|(name, _)| *name);
    let binary_names = || BinaryOp::CUDA.iter().map(|(name, _, _)| *name);
    let uop: String = UnaryOp::CUDA
        .iter()
        .map(|(name, expr)| format!("UOP({name}, {expr})\n"))
        .collect();
    let bop: String = BinaryOp::CUDA
        .iter()
        .map(|(name, out, expr)| format!("BOP({name}, {out}, {expr})\n"))
        .collect();
    let inst = |mac: &str, names: &mut dyn Iterator<Item = &'static str>| -> String {
        names.map(|n| format!("{mac}({n})\n")).collect()
    };
    template
        .replace(UNARY_FUNCTORS, &uop)
        .replace(UNARY_INSTANCES, &inst("INST_UNARY", &mut unary_names()))
        .replace(BINARY_FUNCTORS, &bop)
        .replace(BINARY_INSTANCES, &inst("INST_BINARY", &mut binary_names()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> String {
        fill(include_str!("kernels/elementwise.cu"))
    }

    /// How often `needle` occurs in `text`.
    fn count(text: &str, needle: &str) -> usize {
        text.matches(needle).count()
    }

    #[test]
    fn every_op_has_one_functor_and_one_instance() {
        let src = source();
        for (name, _) in UnaryOp::CUDA {
            assert_eq!(count(&src, &format!("UOP({name}, ")), 1, "UOP {name}");
            assert_eq!(
                count(&src, &format!("INST_UNARY({name})")),
                1,
                "INST_UNARY {name}"
            );
        }
        for (name, _, _) in BinaryOp::CUDA {
            assert_eq!(count(&src, &format!("BOP({name}, ")), 1, "BOP {name}");
            assert_eq!(
                count(&src, &format!("INST_BINARY({name})")),
                1,
                "INST_BINARY {name}"
            );
        }
        // Nothing but the table's rows: no functor the backend cannot name.
        assert_eq!(count(&src, "\nUOP("), UnaryOp::CUDA.len());
        assert_eq!(count(&src, "\nBOP("), BinaryOp::CUDA.len());
    }

    #[test]
    fn kernel_names_match_the_enum_and_markers_are_filled() {
        let src = source();
        for marker in [
            UNARY_FUNCTORS,
            UNARY_INSTANCES,
            BINARY_FUNCTORS,
            BINARY_INSTANCES,
        ] {
            assert!(!src.contains(marker), "{marker} left in the source");
            assert_eq!(count(include_str!("kernels/elementwise.cu"), marker), 1);
        }
        let gelu = UnaryOp::Gelu { tanh: true };
        assert_eq!(
            (gelu.kernel_name(), gelu.kernel_params()),
            ("gelu", (1.0, 0.0))
        );
        assert!(UnaryOp::CUDA
            .iter()
            .any(|(n, _)| *n == UnaryOp::Silu.kernel_name()));
        let bw = BinaryOp::GeluBackward { tanh: false };
        assert!(BinaryOp::CUDA
            .iter()
            .any(|(n, _, _)| *n == bw.kernel_name()));
        // The helpers the backward functors call are defined before the functors.
        let defs = src.find("gelu_erf_d(X x)").expect("gelu_erf_d defined");
        assert!(defs < src.find("BOP(gelu_bw").unwrap());
        assert!(src.contains("MATH1(erf, erff, erf)"));
    }

    #[test]
    fn comparisons_write_bool_and_arithmetic_writes_t() {
        for (name, out, _) in BinaryOp::CUDA {
            let expect = if ["eq", "ne", "lt", "le", "gt", "ge"].contains(name) {
                "bool"
            } else {
                "T"
            };
            assert_eq!(*out, expect, "{name}");
        }
    }
}
