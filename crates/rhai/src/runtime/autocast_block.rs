//! The `autocast(#{dtype, enabled, device_type, cache_enabled}) { … }` block: Python's `with torch.autocast(…)`.
//!
//! A block like `no_grad { … }` (its variables stay visible after it), with an optional options
//! expression before the braces: a map, or a device-type string as `torch.autocast("cuda")` takes.
//! The state lives in `tensor::autocast`; the guard made here restores it when the block ends,
//! also when it fails, and leaving the outermost block frees the cached weight casts.
use rhai::{Dynamic, Engine, EvalAltResult, EvalContext, Expression, ImmutableString, Map};

use crate::surface::convert::{dtype_of, OrRaise};
use crate::surface::errors::type_error;
use torchlet_core::tensor::autocast::{self, AutocastGuard, DeviceType};

/// The keyword that opens the block.
pub(crate) const KEYWORD: &str = "autocast";

/// Register the `autocast` block.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_custom_syntax_with_state_raw(KEYWORD, parse, true, eval);
}

/// `autocast` [EXPR] `{` … `}`, refusing a continuation right after the block, as grad-mode
/// blocks do.
fn parse(
    symbols: &[ImmutableString],
    look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    let next = match symbols.len() {
        1 if look_ahead == "{" => Some("$block$"),
        1 => Some("$expr$"),
        2 if symbols[1] == "$expr$" => Some("$block$"),
        _ => None,
    };
    if next.is_none() && super::syntax::CONTINUATIONS.contains(&look_ahead) {
        return Err(rhai::LexError::ImproperSymbol(
            look_ahead.to_string(),
            format!(
                "'{look_ahead}' right after an autocast {{ … }} block: end the block with ';' to start a new statement"
            ),
        )
        .into_err(rhai::Position::NONE));
    }
    Ok(next.map(Into::into))
}

fn eval(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let (options, block) = match inputs {
        [block] => (Dynamic::UNIT, block),
        [options, block] => (context.eval_expression_tree(options)?, block),
        _ => return Err(type_error("autocast takes options and a block")),
    };
    let at = inputs[0].position();
    let _guard = enter(&options).map_err(|mut e| {
        e.set_position(at);
        e
    })?;
    super::syntax::eval_in_callers_scope(context, block)
}

/// Enter autocast as `options` say (unit: CUDA autocast in its current dtype).
fn enter(options: &Dynamic) -> Result<AutocastGuard, Box<EvalAltResult>> {
    let map = if options.is_unit() {
        Map::new()
    } else if let Some(name) = options.read_lock::<ImmutableString>() {
        Map::from([("device_type".into(), Dynamic::from(name.clone()))])
    } else if let Some(map) = options.read_lock::<Map>() {
        map.clone()
    } else {
        return Err(type_error(format!(
            "autocast takes a map like #{{dtype: \"bfloat16\"}} (or a device type such as \"cuda\"), not {}",
            options.type_name()
        )));
    };
    let device_type = match map.get("device_type") {
        Some(v) => DeviceType::parse(&text(v, "device_type")?).or_raise()?,
        None => DeviceType::Cuda,
    };
    // As `torch.autocast`: without a dtype, the device type's current one (float16 for CUDA and
    // bfloat16 for the CPU at first; a nested block inherits its outer block's).
    let mut dtype = autocast::autocast_dtype(device_type);
    let (mut enabled, mut cache_enabled) = (true, true);
    for (key, value) in &map {
        match key.as_str() {
            "device_type" => {}
            "dtype" => dtype = dtype_of(value)?,
            "enabled" => enabled = flag(value, "enabled")?,
            "cache_enabled" => cache_enabled = flag(value, "cache_enabled")?,
            other => {
                return Err(type_error(format!(
                    "autocast got an unexpected keyword argument '{other}'; allowed: dtype, enabled, device_type, cache_enabled"
                )))
            }
        }
    }
    autocast::autocast(device_type, dtype, enabled, cache_enabled).or_raise()
}

fn text(value: &Dynamic, key: &str) -> Result<String, Box<EvalAltResult>> {
    value
        .read_lock::<ImmutableString>()
        .map(|s| s.to_string())
        .ok_or_else(|| {
            type_error(format!(
                "{key} must be a string like \"cuda\", not {}",
                value.type_name()
            ))
        })
}

fn flag(value: &Dynamic, key: &str) -> Result<bool, Box<EvalAltResult>> {
    value
        .as_bool()
        .map_err(|t| type_error(format!("{key} must be a bool, not {t}")))
}
