//! Python's truth value (`bool(x)`): what `if`, `while`, `&&`, `||` and `!` make of any value.
//!
//! Rhai accepts only `true` and `false` as conditions. The lifetime rewrite wraps each condition
//! in `__truth(…)` (see [`crate::runtime::lifetimes`]), so `if loss > 0.5 { … }` works on a
//! one-element tensor as it does in PyTorch, and a bool passes through one cheap call.
use super::documented::Documented;
use rhai::{Dynamic, Engine, FLOAT, INT};

use super::convert::{OrRaise, Res};
use torchlet_core::tensor::Tensor;

/// Name of the function the rewrite wraps conditions in.
pub const TRUTH: &str = "__truth";

/// Register `__truth`, `bool(x)` and `!` on tensors.
pub(crate) fn register(engine: &mut Engine) {
    for (name, doc) in [(TRUTH, None), ("bool", Some("bool(x) — Python's truth value: a one-element tensor is true when nonzero; () and empty are false"))] {
        match doc {
            Some(doc) => engine.register_doc(name, &[doc], |b: bool| b),
            None => engine.register_fn(name, |b: bool| b),
        }
            .register_fn(name, |t: Tensor| t.truth().or_raise())
            .register_fn(name, |i: INT| i != 0)
            .register_fn(name, |f: FLOAT| f != 0.0)
            .register_fn(name, |value: Dynamic| truth(&value));
    }
    // `!t` is Python's `not t`: the negated truth of a one-element tensor.
    engine.register_fn("!", |t: Tensor| t.truth().map(|b| !b).or_raise());
}

/// Python's truth of any other value: `()` (None) and empty strings, arrays and maps are false.
fn truth(value: &Dynamic) -> Res<bool> {
    if value.is_unit() {
        return Ok(false);
    }
    if let Some(s) = value.read_lock::<rhai::ImmutableString>() {
        return Ok(!s.is_empty());
    }
    if let Some(a) = value.read_lock::<rhai::Array>() {
        return Ok(!a.is_empty());
    }
    if let Some(m) = value.read_lock::<rhai::Map>() {
        return Ok(!m.is_empty());
    }
    Ok(true)
}
