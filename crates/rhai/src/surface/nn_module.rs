//! The `nn` module: `nn::linear_params` (parameters as `nn.Linear` makes them) and
//! `nn::parameters` (gather them into the array an optimizer takes).
use rhai::{Array, Dynamic, Engine, Map, Module, INT};

use super::convert::{dim_len, options_of, OrRaise, Res};
use super::documented::DocumentedModule;
use super::errors::type_error;
use torchlet_core::tensor::{Tensor, TensorOptions};

/// `nn::linear_params(in, out[, #{bias, device, dtype}])`: `#{weight, bias}` (bias `()` when off).
fn linear_params(in_features: INT, out_features: INT, options: &Map) -> Res<Map> {
    let mut bias = true;
    let mut rest = Map::new();
    for (key, value) in options {
        match key.as_str() {
            "bias" => {
                bias = value
                    .as_bool()
                    .map_err(|t| type_error(format!("bias must be a bool, not {t}")))?
            }
            "device" | "dtype" => {
                rest.insert(key.clone(), value.clone());
            }
            other => {
                return Err(type_error(format!(
                    "linear_params() got an unexpected keyword argument '{other}'; valid options: bias, device, dtype"
                )))
            }
        }
    }
    let options = options_of(&rest, TensorOptions::default())?;
    let (weight, bias) = torchlet_core::nn::linear_params(
        dim_len(in_features)?,
        dim_len(out_features)?,
        bias,
        &options,
    )
    .or_raise()?;
    let mut map = Map::new();
    map.insert("weight".into(), Dynamic::from(weight));
    map.insert("bias".into(), bias.map_or(Dynamic::UNIT, Dynamic::from));
    Ok(map)
}

/// A map's keys in the order `nn.Module` registers parameters: weight, bias, then the rest.
fn module_order(map: &Map) -> Vec<&str> {
    let mut keys: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
    let rank = |k: &str| match k {
        "weight" => 0,
        "bias" => 1,
        _ => 2,
    };
    keys.sort_by_key(|k| (rank(k), *k));
    keys
}

fn gather(value: &Dynamic, out: &mut Array) -> Res<()> {
    if value.is::<Tensor>() {
        out.push(value.clone());
    } else if let Some(items) = value.read_lock::<Array>() {
        for item in items.iter() {
            gather(item, out)?;
        }
    } else if let Some(map) = value.read_lock::<Map>() {
        for key in module_order(&map) {
            gather(&map[key], out)?;
        }
    } else if !value.is_unit() {
        return Err(type_error(format!(
            "nn::parameters() gathers tensors from arrays and maps, not {}",
            value.type_name()
        )));
    }
    Ok(())
}

/// Register the `nn` module.
pub(crate) fn register(engine: &mut Engine) {
    let mut m = Module::new();
    m.register_doc("linear_params", &["nn::linear_params(in, out[, #{bias, device, dtype}]) — #{weight [out, in], bias [out]} as nn.Linear initialises them (uniform ±1/sqrt(in)), requiring grad"], |i: INT, o: INT| linear_params(i, o, &Map::new()));
    m.set_native_fn("linear_params", |i: INT, o: INT, opts: Map| {
        linear_params(i, o, &opts)
    });
    m.register_doc("parameters", &["nn::parameters(x) — the tensors in x (arrays in order, a map's weight then bias then the rest), for an optimizer"], |x: Dynamic| {
        let mut out = Array::new();
        gather(&x, &mut out)?;
        Ok(out)
    });
    engine.register_static_module("nn", m.into());
}
