//! A script's arguments (`torchlet run FILE ARGS…`): `ARGS` as given, `arg(name, default)` for
//! `NAME=VALUE` ones, and `fit_value(x, default)` for values a shapes-only run cannot compute.
use rhai::{Dynamic, Engine, EvalAltResult, FLOAT, INT};

use torchlet_core::tensor::Tensor;

use super::convert::{dynamic_of_scalar, OrRaise};
use super::documented::Documented;
use super::errors::value_error;
use crate::runtime::state::{LanguageState, State};

/// The value of the last `NAME=VALUE` argument, if any.
fn lookup(state: &LanguageState, name: &str) -> Option<String> {
    state
        .args
        .borrow()
        .iter()
        .rev()
        .find_map(|s| s.strip_prefix(name)?.strip_prefix('=').map(str::to_owned))
}

/// `arg(name, default)`: the argument `name=VALUE` read as `default`'s type, else `default`.
fn arg(state: &LanguageState, name: &str, default: Dynamic) -> Result<Dynamic, Box<EvalAltResult>> {
    let Some(text) = lookup(state, name) else {
        return Ok(default);
    };
    let bad = |what: &str| value_error(format!("argument {name}={text}: expected {what}"));
    if default.is_int() {
        text.parse::<INT>()
            .map(Dynamic::from)
            .map_err(|_| bad("an integer"))
    } else if default.is_float() {
        text.parse::<FLOAT>()
            .map(Dynamic::from)
            .map_err(|_| bad("a number"))
    } else if default.is_bool() {
        text.parse::<bool>()
            .map(Dynamic::from)
            .map_err(|_| bad("true or false"))
    } else {
        Ok(Dynamic::from(text))
    }
}

/// `fit_value(x, default)`: `default` in a shapes-only run, else `x`'s value: a one-element
/// tensor's `item()`, another tensor's `tolist()`.
fn fit_value(x: Dynamic, default: Dynamic) -> Result<Dynamic, Box<EvalAltResult>> {
    if torchlet_core::device::shapes_only() {
        return Ok(default);
    }
    match x.clone().try_cast::<Tensor>() {
        Some(t) if t.numel() == 1 => Ok(dynamic_of_scalar(t.item().or_raise()?)),
        Some(t) => super::convert::to_list(&t),
        None => Ok(x),
    }
}

/// Register `arg` and `fit_value`.
pub(crate) fn register(engine: &mut Engine, state: &State) {
    let state = state.clone();
    engine
        .register_doc(
            "arg",
            &["arg(name, default) — the script argument name=VALUE (torchlet run FILE name=VALUE), read as default's type; default when absent"],
            move |name: &str, default: Dynamic| arg(&state, name, default),
        )
        .register_doc(
            "fit_value",
            &["fit_value(x, default) — x's value (item() of a one-element tensor, tolist() of another), or default under torchlet fit, which computes no values"],
            fit_value,
        );
}
