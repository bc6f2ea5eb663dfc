//! Convolution-network ops in scripts: `conv2d`, `conv3d`, `conv_transpose2d`,
//! `conv_transpose3d`, `unfold`, `fold`, `max_pool2d`, `avg_pool2d`,
//! `adaptive_avg_pool2d`, `batch_norm`, `nll_loss` and `scaled_dot_product_attention`, as
//! functions with PyTorch's keyword arguments in an options map.
use rhai::{Engine, Map};

use super::convert::{OrRaise, Res};
use super::documented::Documented;
use super::errors::type_error;
use torchlet_core::tensor::attention::SdpaOptions;
use torchlet_core::tensor::conv::ConvOptions;
use torchlet_core::tensor::conv_transpose::ConvTransposeOptions;
use torchlet_core::tensor::fold::Window;
use torchlet_core::tensor::pool::{PoolOptions, Running};
use torchlet_core::tensor::Tensor;

/// Register the ops.
/// The class index `cross_entropy` and `nll_loss` skip, PyTorch's default `ignore_index`.
pub(crate) const IGNORE_INDEX: i64 = -100;

pub(crate) fn register(engine: &mut Engine) {
    engine
        .register_doc("conv2d", &["conv2d(x, w[, b][, #{stride, padding, dilation, groups}]) — 2-D convolution, as F.conv2d (cuDNN's workspaces on a GPU)"], |x: &mut Tensor, w: Tensor| {
            x.conv2d(&w, None, &ConvOptions::default()).or_raise()
        })
        .register_fn("conv2d", |x: &mut Tensor, w: Tensor, b: Tensor| x.conv2d(&w, Some(&b), &ConvOptions::default()).or_raise())
        .register_fn("conv2d", |x: &mut Tensor, w: Tensor, o: Map| conv2d(x, &w, None, &o))
        .register_fn("conv2d", |x: &mut Tensor, w: Tensor, b: Tensor, o: Map| conv2d(x, &w, Some(&b), &o))
        .register_doc("conv3d", &["conv3d(x, w[, b][, #{stride, padding, dilation, groups}]) — 3-D convolution of [N, C, D, H, W], as F.conv3d (cuDNN's workspaces on a GPU)"], |x: &mut Tensor, w: Tensor| {
            conv3d(x, &w, None, &Map::new())
        })
        .register_fn("conv3d", |x: &mut Tensor, w: Tensor, b: Tensor| conv3d(x, &w, Some(&b), &Map::new()))
        .register_fn("conv3d", |x: &mut Tensor, w: Tensor, o: Map| conv3d(x, &w, None, &o))
        .register_fn("conv3d", |x: &mut Tensor, w: Tensor, b: Tensor, o: Map| conv3d(x, &w, Some(&b), &o))
        .register_doc("max_pool2d", &["max_pool2d(x, k[, #{stride, padding, dilation, ceil_mode}]) — max over k×k windows, as F.max_pool2d (keeps the int64 indices for backward)"], |x: &mut Tensor, k: rhai::INT| {
            pool(x, k, &Map::new(), "max_pool2d")
        })
        .register_fn("max_pool2d", |x: &mut Tensor, k: rhai::INT, o: Map| pool(x, k, &o, "max_pool2d"))
        .register_doc("conv_transpose2d", &["conv_transpose2d(x, w[, b][, #{stride, padding, output_padding, groups, dilation}]) — transposed 2-D convolution (w [in, out/groups, kh, kw]), as F.conv_transpose2d"], |x: &mut Tensor, w: Tensor| {
            conv_transpose2d(x, &w, None, &Map::new())
        })
        .register_fn("conv_transpose2d", |x: &mut Tensor, w: Tensor, b: Tensor| conv_transpose2d(x, &w, Some(&b), &Map::new()))
        .register_fn("conv_transpose2d", |x: &mut Tensor, w: Tensor, o: Map| conv_transpose2d(x, &w, None, &o))
        .register_fn("conv_transpose2d", |x: &mut Tensor, w: Tensor, b: Tensor, o: Map| conv_transpose2d(x, &w, Some(&b), &o))
        .register_doc("conv_transpose3d", &["conv_transpose3d(x, w[, b][, #{stride, padding, output_padding, groups, dilation}]) — transposed 3-D convolution (w [in, out/groups, kd, kh, kw]), as F.conv_transpose3d"], |x: &mut Tensor, w: Tensor| {
            conv_transpose3d(x, &w, None, &Map::new())
        })
        .register_fn("conv_transpose3d", |x: &mut Tensor, w: Tensor, b: Tensor| conv_transpose3d(x, &w, Some(&b), &Map::new()))
        .register_fn("conv_transpose3d", |x: &mut Tensor, w: Tensor, o: Map| conv_transpose3d(x, &w, None, &o))
        .register_fn("conv_transpose3d", |x: &mut Tensor, w: Tensor, b: Tensor, o: Map| conv_transpose3d(x, &w, Some(&b), &o))
        .register_doc("unfold", &["unfold(x, k[, #{dilation, padding, stride}]) — each k×k block of [N, C, H, W] as a column of [N, C·k·k, blocks], as F.unfold (im2col)"], |x: &mut Tensor, k: rhai::INT| {
            unfold(x, k, &Map::new())
        })
        .register_fn("unfold", |x: &mut Tensor, k: rhai::INT, o: Map| unfold(x, k, &o))
        .register_doc("fold", &["fold(cols, size, k[, #{dilation, padding, stride}]) — columns of k×k blocks summed back into size×size planes (overlaps add up), as F.fold (col2im)"], |x: &mut Tensor, size: rhai::INT, k: rhai::INT| {
            fold(x, size, k, &Map::new())
        })
        .register_fn("fold", |x: &mut Tensor, size: rhai::INT, k: rhai::INT, o: Map| fold(x, size, k, &o))
        .register_doc("avg_pool2d", &["avg_pool2d(x, k[, #{stride, padding, ceil_mode, count_include_pad}]) — mean over k×k windows, as F.avg_pool2d"], |x: &mut Tensor, k: rhai::INT| {
            pool(x, k, &Map::new(), "avg_pool2d")
        })
        .register_fn("avg_pool2d", |x: &mut Tensor, k: rhai::INT, o: Map| pool(x, k, &o, "avg_pool2d"))
        .register_doc("adaptive_avg_pool2d", &["adaptive_avg_pool2d(x, size) — average pooling to a size×size output, as F.adaptive_avg_pool2d"], |x: &mut Tensor, s: rhai::INT| {
            let s = non_negative(s, "adaptive_avg_pool2d(): output_size")?;
            x.adaptive_avg_pool2d([s, s]).or_raise()
        })
        .register_doc("batch_norm", &["batch_norm(x, running_mean, running_var[, #{weight, bias, training, momentum, eps}]) — as F.batch_norm (training false, momentum 0.1, eps 1e-5)"], |x: &mut Tensor, m: Tensor, v: Tensor| {
            batch_norm(x, m, v, &Map::new())
        })
        .register_fn("batch_norm", |x: &mut Tensor, m: Tensor, v: Tensor, o: Map| batch_norm(x, m, v, &o))
        .register_doc("nll_loss", &["nll_loss(logp, target) — mean negative log-likelihood of log-probabilities at int64 classes, as F.nll_loss"], |x: &mut Tensor, t: Tensor| {
            x.nll_loss_mean(&t, IGNORE_INDEX).or_raise()
        })
        .register_doc("scaled_dot_product_attention", &["scaled_dot_product_attention(q, k, v[, #{attn_mask, dropout_p, is_causal, scale, enable_gqa}]) — as F.scaled_dot_product_attention, with the backend PyTorch picks (cuDNN, flash, memory-efficient, math)"], |q: &mut Tensor, k: Tensor, v: Tensor| {
            sdpa(q, &k, &v, &Map::new())
        })
        .register_fn("scaled_dot_product_attention", |q: &mut Tensor, k: Tensor, v: Tensor, o: Map| sdpa(q, &k, &v, &o));
}

/// The keys of `o` must be among `allowed`.
pub(crate) fn check_keys(o: &Map, allowed: &[&str], what: &str) -> Res<()> {
    match o.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(type_error(format!(
            "{what}(): unexpected keyword '{k}'; allowed: {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn non_negative(v: rhai::INT, what: &str) -> Res<usize> {
    usize::try_from(v)
        .map_err(|_| type_error(format!("{what} must be a non-negative int, not {v}")))
}

/// Option `key` as a (height, width) pair: an int or an array of two ints.
fn pair(o: &Map, key: &str, default: [usize; 2], what: &str) -> Res<[usize; 2]> {
    ints_n(o, key, default, what)
}

/// Option `key` of `o` as `N` non-negative ints: one int for all, or an array of `N`.
fn ints_n<const N: usize>(o: &Map, key: &str, default: [usize; N], what: &str) -> Res<[usize; N]> {
    let Some(v) = o.get(key) else {
        return Ok(default);
    };
    if let Ok(i) = v.as_int() {
        let i = non_negative(i, &format!("{what}(): {key}"))?;
        return Ok([i; N]);
    }
    let count = ["", "one", "two", "three"][N];
    let bad = || {
        type_error(format!(
            "{what}(): {key} must be an int or an array of {count} ints, not {}",
            v.type_name()
        ))
    };
    let items = v.clone().try_cast::<rhai::Array>().ok_or_else(bad)?;
    let ints: Vec<rhai::INT> = items
        .iter()
        .map(|d| d.as_int())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    if ints.len() != N {
        return Err(bad());
    }
    let mut out = [0; N];
    for (o, &i) in out.iter_mut().zip(&ints) {
        *o = non_negative(i, key)?;
    }
    Ok(out)
}

pub(crate) fn flag(o: &Map, key: &str, default: bool, what: &str) -> Res<bool> {
    o.get(key).map_or(Ok(default), |v| {
        v.as_bool()
            .map_err(|t| type_error(format!("{what}(): {key} must be a bool, not {t}")))
    })
}

pub(crate) fn float(o: &Map, key: &str, default: f64, what: &str) -> Res<f64> {
    let Some(v) = o.get(key) else {
        return Ok(default);
    };
    v.as_float()
        .or_else(|_| v.as_int().map(|i| i as f64))
        .map_err(|t| type_error(format!("{what}(): {key} must be a number, not {t}")))
}

pub(crate) fn tensor(o: &Map, key: &str, what: &str) -> Res<Option<Tensor>> {
    match o.get(key) {
        None => Ok(None),
        Some(v) if v.is_unit() => Ok(None),
        Some(v) => v.clone().try_cast::<Tensor>().map(Some).ok_or_else(|| {
            type_error(format!(
                "{what}(): {key} must be a tensor or (), not {}",
                v.type_name()
            ))
        }),
    }
}

fn conv2d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, o: &Map) -> Res<Tensor> {
    check_keys(o, &["stride", "padding", "dilation", "groups"], "conv2d")?;
    x.conv2d(w, b, &conv_options(o, "conv2d")?).or_raise()
}

fn conv3d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, o: &Map) -> Res<Tensor> {
    check_keys(o, &["stride", "padding", "dilation", "groups"], "conv3d")?;
    x.conv3d(w, b, &conv_options(o, "conv3d")?).or_raise()
}

/// A convolution's stride, padding, dilation and groups from `o`.
fn conv_options<const N: usize>(o: &Map, what: &str) -> Res<ConvOptions<N>> {
    let groups = o.get("groups").map_or(Ok(1), |g| {
        g.as_int()
            .map_err(|t| type_error(format!("{what}(): groups must be an int, not {t}")))
    })?;
    Ok(ConvOptions {
        stride: ints_n(o, "stride", [1; N], what)?,
        padding: ints_n(o, "padding", [0; N], what)?,
        dilation: ints_n(o, "dilation", [1; N], what)?,
        groups: non_negative(groups, &format!("{what}(): groups"))?,
    })
}

fn conv_transpose2d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, o: &Map) -> Res<Tensor> {
    x.conv_transpose2d(w, b, &transpose_options(o, "conv_transpose2d")?)
        .or_raise()
}

fn conv_transpose3d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, o: &Map) -> Res<Tensor> {
    x.conv_transpose3d(w, b, &transpose_options(o, "conv_transpose3d")?)
        .or_raise()
}

/// A transposed convolution's options from `o`.
fn transpose_options<const N: usize>(o: &Map, what: &str) -> Res<ConvTransposeOptions<N>> {
    check_keys(
        o,
        &["stride", "padding", "output_padding", "groups", "dilation"],
        what,
    )?;
    Ok(ConvTransposeOptions {
        conv: conv_options(o, what)?,
        output_padding: ints_n(o, "output_padding", [0; N], what)?,
    })
}

fn pool(x: &Tensor, k: rhai::INT, o: &Map, what: &str) -> Res<Tensor> {
    let k = non_negative(k, &format!("{what}(): kernel_size"))?;
    if what == "max_pool2d" {
        check_keys(o, &["stride", "padding", "dilation", "ceil_mode"], what)?;
    } else {
        check_keys(
            o,
            &["stride", "padding", "ceil_mode", "count_include_pad"],
            what,
        )?;
    }
    let opts = PoolOptions {
        kernel: [k, k],
        stride: pair(o, "stride", [k, k], what)?,
        padding: pair(o, "padding", [0, 0], what)?,
        dilation: pair(o, "dilation", [1, 1], what)?,
        ceil_mode: flag(o, "ceil_mode", false, what)?,
    };
    match what {
        "max_pool2d" => Ok(x.max_pool2d(&opts, false).or_raise()?.0),
        _ => x
            .avg_pool2d(&opts, flag(o, "count_include_pad", true, what)?, None)
            .or_raise(),
    }
}

/// The sliding window of `unfold`/`fold` calls: a square kernel `k`, the rest from `o`.
fn window(k: rhai::INT, o: &Map, what: &str) -> Res<Window> {
    check_keys(o, &["dilation", "padding", "stride"], what)?;
    let k = non_negative(k, &format!("{what}(): kernel_size"))?;
    Ok(Window {
        kernel: [k, k],
        dilation: pair(o, "dilation", [1, 1], what)?,
        padding: pair(o, "padding", [0, 0], what)?,
        stride: pair(o, "stride", [1, 1], what)?,
    })
}

fn unfold(x: &Tensor, k: rhai::INT, o: &Map) -> Res<Tensor> {
    x.im2col(window(k, o, "unfold")?).or_raise()
}

fn fold(x: &Tensor, size: rhai::INT, k: rhai::INT, o: &Map) -> Res<Tensor> {
    let size = non_negative(size, "fold(): output_size")?;
    x.col2im([size, size], window(k, o, "fold")?).or_raise()
}

fn batch_norm(x: &Tensor, mean: Tensor, var: Tensor, o: &Map) -> Res<Tensor> {
    const WHAT: &str = "batch_norm";
    check_keys(o, &["weight", "bias", "training", "momentum", "eps"], WHAT)?;
    let running = Running {
        mean: &mean,
        var: &var,
        momentum: float(o, "momentum", 0.1, WHAT)?,
    };
    let (w, b) = (tensor(o, "weight", WHAT)?, tensor(o, "bias", WHAT)?);
    x.batch_norm(
        Some(running),
        w.as_ref(),
        b.as_ref(),
        flag(o, "training", false, WHAT)?,
        float(o, "eps", 1e-5, WHAT)?,
    )
    .or_raise()
}

fn sdpa(q: &Tensor, k: &Tensor, v: &Tensor, o: &Map) -> Res<Tensor> {
    const WHAT: &str = "scaled_dot_product_attention";
    check_keys(
        o,
        &["attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"],
        WHAT,
    )?;
    let scale = match o.get("scale") {
        Some(v) if !v.is_unit() => Some(float(o, "scale", 1.0, WHAT)?),
        _ => None,
    };
    let options = SdpaOptions {
        attn_mask: tensor(o, "attn_mask", WHAT)?,
        dropout_p: float(o, "dropout_p", 0.0, WHAT)?,
        is_causal: flag(o, "is_causal", false, WHAT)?,
        scale,
        enable_gqa: flag(o, "enable_gqa", false, WHAT)?,
    };
    Tensor::scaled_dot_product_attention(q, k, v, &options).or_raise()
}
