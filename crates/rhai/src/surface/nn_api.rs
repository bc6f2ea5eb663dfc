//! Model ops in scripts: `linear`, `bmm`, `layer_norm`, `dropout`, `relu_`, as functions and methods.
use rhai::{Array, Dynamic, Engine, Map, FLOAT, INT};

use super::convert::{OrRaise, Res};
use super::documented::Documented;
use super::errors::{type_error, value_error};
use torchlet_core::tensor::Tensor;

/// Register the model ops.
pub(crate) fn register(engine: &mut Engine) {
    register_linear(engine);
    register_layer_norm(engine);
    register_dropout(engine);
    engine.register_doc(
        "relu_",
        &["t.relu_() — relu in place: t's memory holds max(t, 0) (also relu_(t))"],
        |t: &mut Tensor| t.relu_().or_raise(),
    );
}

/// `()` for "none", else a tensor; anything else is a TypeError naming `what`.
fn optional_tensor(value: &Dynamic, what: &str) -> Res<Option<Tensor>> {
    if value.is_unit() {
        return Ok(None);
    }
    value.clone().try_cast::<Tensor>().map(Some).ok_or_else(|| {
        type_error(format!(
            "{what} must be a tensor or (), not {}",
            value.type_name()
        ))
    })
}

fn number(value: &Dynamic, what: &str) -> Res<f64> {
    if let Ok(f) = value.as_float() {
        return Ok(f);
    }
    value
        .as_int()
        .map(|i| i as f64)
        .map_err(|t| type_error(format!("{what} must be a number, not {t}")))
}

fn register_linear(engine: &mut Engine) {
    engine
        .register_doc(
            "linear",
            &["linear(x, w[, b]) — x @ w.t() + b, as F.linear (one fused addmm with a bias)"],
            |x: &mut Tensor, w: Tensor| x.linear(&w, None).or_raise(),
        )
        .register_fn("linear", |x: &mut Tensor, w: Tensor, b: Dynamic| {
            let b = optional_tensor(&b, "linear(): bias")?;
            x.linear(&w, b.as_ref()).or_raise()
        })
        .register_doc(
            "bmm",
            &["bmm(a, b) — batched matrix product of two 3-D tensors (also a.bmm(b))"],
            |a: &mut Tensor, b: Tensor| a.bmm(&b).or_raise(),
        );
}

/// `normalized_shape` given as an int or an array of ints.
fn normalized_shape(shape: &Dynamic) -> Res<Vec<usize>> {
    let dims: Vec<INT> = if let Ok(d) = shape.as_int() {
        vec![d]
    } else if let Some(a) = shape.clone().try_cast::<Array>() {
        a.iter()
            .map(|v| {
                v.as_int().map_err(|t| {
                    type_error(format!(
                        "layer_norm(): normalized_shape must hold ints, not {t}"
                    ))
                })
            })
            .collect::<Res<_>>()?
    } else {
        return Err(type_error(format!(
            "layer_norm(): normalized_shape must be an int or an array of ints, not {}",
            shape.type_name()
        )));
    };
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                value_error(format!(
                    "layer_norm(): invalid normalized_shape dimension {d}"
                ))
            })
        })
        .collect()
}

fn layer_norm(x: &Tensor, shape: &Dynamic, w: &Dynamic, b: &Dynamic, eps: f64) -> Res<Tensor> {
    let shape = normalized_shape(shape)?;
    let w = optional_tensor(w, "layer_norm(): weight")?;
    let b = optional_tensor(b, "layer_norm(): bias")?;
    x.layer_norm(&shape, w.as_ref(), b.as_ref(), eps).or_raise()
}

/// PyTorch's default epsilon of layer_norm.
const LAYER_NORM_EPS: f64 = 1e-5;

fn register_layer_norm(engine: &mut Engine) {
    let none = Dynamic::UNIT;
    engine
        .register_doc(
            "layer_norm",
            &["layer_norm(x, shape[, w, b, eps]) — normalise over the trailing dims `shape` (an int or array), as F.layer_norm; eps 1e-5; also layer_norm(x, shape, #{weight, bias, eps})"],
            move |x: &mut Tensor, s: Dynamic| layer_norm(x, &s, &none, &Dynamic::UNIT, LAYER_NORM_EPS),
        )
        .register_fn("layer_norm", |x: &mut Tensor, s: Dynamic, w: Dynamic| {
            if let Some(opts) = w.clone().try_cast::<Map>() {
                return layer_norm_options(x, &s, &opts);
            }
            layer_norm(x, &s, &w, &Dynamic::UNIT, LAYER_NORM_EPS)
        })
        .register_fn("layer_norm", |x: &mut Tensor, s: Dynamic, w: Dynamic, b: Dynamic| {
            layer_norm(x, &s, &w, &b, LAYER_NORM_EPS)
        })
        .register_fn(
            "layer_norm",
            |x: &mut Tensor, s: Dynamic, w: Dynamic, b: Dynamic, eps: Dynamic| {
                layer_norm(x, &s, &w, &b, number(&eps, "layer_norm(): eps")?)
            },
        );
}

fn layer_norm_options(x: &Tensor, shape: &Dynamic, opts: &Map) -> Res<Tensor> {
    if let Some(k) = opts
        .keys()
        .find(|k| !["weight", "bias", "eps"].contains(&k.as_str()))
    {
        return Err(type_error(format!(
            "layer_norm(): unexpected keyword '{k}'; allowed: weight, bias, eps"
        )));
    }
    let get = |k: &str| opts.get(k).cloned().unwrap_or(Dynamic::UNIT);
    let eps = match opts.get("eps") {
        Some(e) => number(e, "layer_norm(): eps")?,
        None => LAYER_NORM_EPS,
    };
    layer_norm(x, shape, &get("weight"), &get("bias"), eps)
}

/// F.dropout's defaults: p = 0.5, training = true.
fn dropout_options(x: &Tensor, opts: &Map) -> Res<Tensor> {
    if let Some(k) = opts
        .keys()
        .find(|k| !["p", "training"].contains(&k.as_str()))
    {
        return Err(type_error(format!(
            "dropout(): unexpected keyword '{k}'; allowed: p, training"
        )));
    }
    let p = match opts.get("p") {
        Some(p) => number(p, "dropout(): p")?,
        None => 0.5,
    };
    let training = match opts.get("training") {
        Some(t) => t
            .as_bool()
            .map_err(|t| type_error(format!("dropout(): training must be a bool, not {t}")))?,
        None => true,
    };
    x.dropout(p, training).or_raise()
}

fn register_dropout(engine: &mut Engine) {
    engine
        .register_doc(
            "dropout",
            &["dropout(x[, p, training]) — zero elements with probability p (0.5) and scale the rest by 1/(1-p), as F.dropout (training true by default); also dropout(x, #{p, training})"],
            |x: &mut Tensor| x.dropout(0.5, true).or_raise(),
        )
        .register_fn("dropout", |x: &mut Tensor, p: FLOAT| x.dropout(p, true).or_raise())
        .register_fn("dropout", |x: &mut Tensor, p: INT| x.dropout(p as f64, true).or_raise())
        .register_fn("dropout", |x: &mut Tensor, opts: Map| dropout_options(x, &opts))
        .register_fn("dropout", |x: &mut Tensor, p: FLOAT, training: bool| {
            x.dropout(p, training).or_raise()
        })
        .register_fn("dropout", |x: &mut Tensor, p: INT, training: bool| {
            x.dropout(p as f64, training).or_raise()
        });
}
