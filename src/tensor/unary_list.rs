//! The list of elementwise methods of one tensor that the script offers: name, help text, an
//! optional string keyword, and the method. The script registers and documents them from here.

use super::{Result, Tensor};

/// One elementwise method as the script sees it.
pub struct UnaryMethod {
    /// The method's and the function's name (`t.relu()`, `relu(t)`).
    pub name: &'static str,
    /// One line of help: the call and what it computes.
    pub help: &'static str,
    /// A string keyword argument and its default (`approximate`, `"none"` for gelu).
    pub keyword: Option<(&'static str, &'static str)>,
    /// The method, given the keyword's value (the default when absent, "" when there is none).
    pub call: fn(&Tensor, &str) -> Result<Tensor>,
}

const fn plain(
    name: &'static str,
    help: &'static str,
    call: fn(&Tensor, &str) -> Result<Tensor>,
) -> UnaryMethod {
    UnaryMethod {
        name,
        help,
        keyword: None,
        call,
    }
}

/// Every elementwise method of one tensor, in help order.
pub static UNARY_METHODS: &[UnaryMethod] = &[
    plain("exp", "t.exp() — elementwise e^x", |t, _| t.exp()),
    plain("log", "t.log() — elementwise natural logarithm", |t, _| t.log()),
    plain("sqrt", "t.sqrt() — elementwise square root", |t, _| t.sqrt()),
    plain("abs", "t.abs() — elementwise absolute value", |t, _| t.abs()),
    plain("neg", "t.neg() — elementwise negation (same as -t)", |t, _| t.neg()),
    plain("relu", "t.relu() — elementwise max(x, 0)", |t, _| t.relu()),
    plain("sigmoid", "t.sigmoid() — elementwise 1 / (1 + e^-x)", |t, _| t.sigmoid()),
    plain("tanh", "t.tanh() — elementwise hyperbolic tangent", |t, _| t.tanh()),
    plain("sin", "t.sin() — elementwise sine", |t, _| t.sin()),
    plain("cos", "t.cos() — elementwise cosine", |t, _| t.cos()),
    UnaryMethod {
        name: "gelu",
        help: "t.gelu([#{approximate: \"tanh\"}]) — elementwise x·Φ(x), Φ the normal CDF (or its tanh approximation)",
        keyword: Some(("approximate", "none")),
        call: |t, approximate| t.gelu(approximate),
    },
    plain("silu", "t.silu() — elementwise x · sigmoid(x)", |t, _| t.silu()),
];
