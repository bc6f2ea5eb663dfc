//! `del` as Python has it: `del x, y` unbinds names, `del ts[0]` and `del d["a"]` remove an
//! item, `del x.grad` and `del d.a` remove an attribute.
//!
//! Unbinding a name leaves a tombstone in its scope slot (see [`super::syntax`] for why), and
//! every removed value is dropped at once, an array's items last to first as CPython frees them.
use rhai::{Dynamic, EvalAltResult, EvalContext, Expr, Expression, ImmutableString};

use super::lifetimes::drop_like_python;
use super::syntax::{is_deleted, Deleted};
use crate::surface::errors::{not_defined, raise};

/// Register `del TARGET (, TARGET)*`.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine.register_custom_syntax_with_state_raw("del", parse, false, eval);
}

/// `del` TARGET (`,` TARGET)*, each target an expression (a name, an item or an attribute).
fn parse(
    symbols: &[ImmutableString],
    look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    let last = symbols.last().map(|s| s.as_str()).unwrap_or(",");
    Ok(match last {
        _ if symbols.len() == 1 => Some("$expr$".into()),
        "," => Some("$expr$".into()),
        _ if look_ahead == "," => Some(",".into()),
        _ => None,
    })
}

type EvalResult<T> = Result<T, Box<EvalAltResult>>;

fn eval(context: &mut EvalContext, inputs: &[Expression], _state: &Dynamic) -> EvalResult<Dynamic> {
    for input in inputs {
        let pos = input.position();
        delete(context, input).map_err(|mut e| {
            e.set_position(pos);
            e
        })?;
    }
    Ok(Dynamic::UNIT)
}

/// Delete one target, Python's way.
fn delete(context: &mut EvalContext, target: &Expr) -> EvalResult<()> {
    match target {
        Expr::Variable(v, ..) if v.2.is_empty() => unbind(context, &v.1),
        Expr::Index(x, ..) => {
            let name = container_name(&x.lhs)?;
            let key = context.eval_expression_tree(&Expression::from(&x.rhs))?;
            let slot = slot(context, &name)?;
            drop_like_python(delete_item(slot, key)?);
            Ok(())
        }
        Expr::Dot(x, ..) => {
            let name = container_name(&x.lhs)?;
            let Expr::Property(p, _) = &x.rhs else {
                return Err(syntax_error());
            };
            let slot = slot(context, &name)?;
            drop_like_python(delete_attribute(slot, &p.2)?);
            Ok(())
        }
        _ => Err(syntax_error()),
    }
}

fn syntax_error() -> Box<EvalAltResult> {
    raise(
        "SyntaxError",
        "cannot delete this expression: `del` takes names (`del x`), items (`del ts[0]`, \
         `del d[\"a\"]`) and attributes (`del x.grad`)",
    )
}

/// The variable a `del NAME[…]` or `del NAME.attr` works on (one level, as the common cases are).
fn container_name(expr: &Expr) -> EvalResult<ImmutableString> {
    match expr {
        Expr::Variable(v, ..) if v.2.is_empty() => Ok(v.1.clone()),
        _ => Err(raise(
            "SyntaxError",
            "`del` of an item or attribute works on a variable: write `del ts[0]` or \
             `del x.grad`; for deeper targets bind the container to a name first",
        )),
    }
}

/// The live, writable slot of `name`, or Python's error.
fn slot<'a>(context: &'a mut EvalContext, name: &str) -> EvalResult<&'a mut Dynamic> {
    let scope = context.scope_mut();
    match scope.get(name) {
        None => return Err(raise("NameError", not_defined(name))),
        Some(value) if is_deleted(value) => return Err(raise("NameError", not_defined(name))),
        Some(_) => {}
    }
    scope
        .get_mut(name)
        .ok_or_else(|| raise("TypeError", format!("cannot delete from constant '{name}'")))
}

/// Take a name's value, leaving a tombstone, and drop the value.
fn unbind(context: &mut EvalContext, name: &str) -> EvalResult<()> {
    let scope = context.scope_mut();
    match scope.get(name) {
        Some(value) if !is_deleted(value) => {}
        _ => return Err(raise("NameError", not_defined(name))),
    }
    let Some(slot) = scope.get_mut(name) else {
        return Err(raise(
            "TypeError",
            format!("cannot delete constant '{name}'"),
        ));
    };
    // Dropping the old value here is what frees the tensor at once.
    drop_like_python(std::mem::replace(slot, Dynamic::from(Deleted)));
    Ok(())
}

/// `del container[key]`: the removed value.
fn delete_item(container: &mut Dynamic, key: Dynamic) -> EvalResult<Dynamic> {
    let type_name = python_type_name(container);
    if let Some(mut items) = container.write_lock::<rhai::Array>() {
        let Some(index) = key.as_int().ok() else {
            return Err(raise(
                "TypeError",
                format!(
                    "list indices must be integers, not {}",
                    python_type_name(&key)
                ),
            ));
        };
        let len = items.len() as i64;
        let at = if index < 0 { index + len } else { index };
        if !(0..len).contains(&at) {
            return Err(raise("IndexError", "list assignment index out of range"));
        }
        return Ok(items.remove(at as usize));
    }
    if let Some(mut map) = container.write_lock::<rhai::Map>() {
        let name = key.to_string();
        return map
            .remove(name.as_str())
            .ok_or_else(|| raise("KeyError", format!("'{name}'")));
    }
    Err(raise(
        "TypeError",
        format!("'{type_name}' object doesn't support item deletion"),
    ))
}

/// `del container.attr`: the removed value (`del x.grad` sets the gradient to None).
fn delete_attribute(container: &mut Dynamic, attr: &str) -> EvalResult<Dynamic> {
    if let Some(tensor) = container.read_lock::<torchlet_core::tensor::Tensor>() {
        if attr != "grad" {
            return Err(raise(
                "AttributeError",
                format!("attribute '{attr}' of 'Tensor' objects is not deletable"),
            ));
        }
        let old = tensor.grad();
        tensor
            .set_grad(None)
            .map_err(|e| raise("RuntimeError", e.to_string()))?;
        return Ok(old.map(Dynamic::from).unwrap_or(Dynamic::UNIT));
    }
    if let Some(mut map) = container.write_lock::<rhai::Map>() {
        return map.remove(attr).ok_or_else(|| {
            raise(
                "AttributeError",
                format!("object has no attribute '{attr}'"),
            )
        });
    }
    let type_name = python_type_name(container);
    Err(raise(
        "AttributeError",
        format!("'{type_name}' object has no attribute '{attr}'"),
    ))
}

/// The name Python would give a value's type in an error.
fn python_type_name(value: &Dynamic) -> &'static str {
    if value.is_array() {
        "list"
    } else if value.is_map() {
        "dict"
    } else if value.is::<torchlet_core::tensor::Tensor>() {
        "Tensor"
    } else if value.is_int() {
        "int"
    } else if value.is_float() {
        "float"
    } else if value.is_string() {
        "str"
    } else if value.is_bool() {
        "bool"
    } else {
        "object"
    }
}
