//! The losses in scripts, as `F.*` spells them: `l1_loss`, `smooth_l1_loss`, `huber_loss`, the binary cross-entropies, `kl_div`, and `mse_loss`/`cross_entropy`/`nll_loss` with options.
use rhai::{Engine, Map};

use super::conv_api::{check_keys, flag, float, tensor, IGNORE_INDEX};
use super::convert::{OrRaise, Res};
use super::documented::Documented;
use super::errors::type_error;
use torchlet_core::tensor::{Reduction, Tensor};

/// Register the losses; each takes `(input, target)` and an optional map of PyTorch's keywords.
pub(crate) fn register(engine: &mut Engine) {
    type Loss = fn(&Tensor, &Tensor, &Map) -> Res<Tensor>;
    let losses: [(&str, &str, Loss); 6] = [
        ("l1_loss", "l1_loss(input, target[, #{reduction}]) — mean absolute error, as F.l1_loss", l1),
        ("smooth_l1_loss", "smooth_l1_loss(input, target[, #{reduction, beta}]) — squared below beta (1.0), absolute above, as F.smooth_l1_loss", smooth_l1),
        ("huber_loss", "huber_loss(input, target[, #{reduction, delta}]) — squared below delta (1.0), linear above, as F.huber_loss", huber),
        ("binary_cross_entropy", "binary_cross_entropy(probs, target[, #{reduction, weight}]) — as F.binary_cross_entropy", bce),
        ("binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits(logits, target[, #{reduction, weight, pos_weight}]) — as F.binary_cross_entropy_with_logits", bce_logits),
        ("kl_div", "kl_div(log_probs, target[, #{reduction, log_target}]) — as F.kl_div (reduction \"mean\")", kl_div),
    ];
    for (name, doc, loss) in losses {
        engine
            .register_doc(name, &[doc], move |x: &mut Tensor, t: Tensor| {
                loss(x, &t, &Map::new())
            })
            .register_fn(name, move |x: &mut Tensor, t: Tensor, o: Map| {
                loss(x, &t, &o)
            });
    }
    engine
        .register_fn("mse_loss", |x: &mut Tensor, t: Tensor, o: Map| {
            mse(x, &t, &o)
        })
        .register_fn("cross_entropy", |x: &mut Tensor, t: Tensor, o: Map| {
            cross_entropy(x, &t, &o)
        })
        .register_fn("nll_loss", |x: &mut Tensor, t: Tensor, o: Map| {
            nll(x, &t, &o)
        });
}

/// Option `reduction`: "mean" (the default), "sum" or "none".
fn reduction(o: &Map, what: &str) -> Res<Reduction> {
    let Some(v) = o.get("reduction") else {
        return Ok(Reduction::Mean);
    };
    let name = v.clone().into_string().map_err(|t| {
        type_error(format!(
            "{what}(): reduction must be \"mean\", \"sum\" or \"none\", not {t}"
        ))
    })?;
    Reduction::parse(&name).or_raise()
}

fn l1(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction"], "l1_loss")?;
    x.l1_loss(t, reduction(o, "l1_loss")?).or_raise()
}

fn smooth_l1(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction", "beta"], "smooth_l1_loss")?;
    let beta = float(o, "beta", 1.0, "smooth_l1_loss")?;
    x.smooth_l1_loss(t, reduction(o, "smooth_l1_loss")?, beta)
        .or_raise()
}

fn huber(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction", "delta"], "huber_loss")?;
    let delta = float(o, "delta", 1.0, "huber_loss")?;
    x.huber_loss(t, reduction(o, "huber_loss")?, delta)
        .or_raise()
}

fn bce(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    let what = "binary_cross_entropy";
    check_keys(o, &["reduction", "weight"], what)?;
    let weight = tensor(o, "weight", what)?;
    x.binary_cross_entropy(t, weight.as_ref(), reduction(o, what)?)
        .or_raise()
}

fn bce_logits(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    let what = "binary_cross_entropy_with_logits";
    check_keys(o, &["reduction", "weight", "pos_weight"], what)?;
    let (weight, pos) = (tensor(o, "weight", what)?, tensor(o, "pos_weight", what)?);
    x.binary_cross_entropy_with_logits(t, weight.as_ref(), pos.as_ref(), reduction(o, what)?)
        .or_raise()
}

fn kl_div(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction", "log_target"], "kl_div")?;
    let log_target = flag(o, "log_target", false, "kl_div")?;
    x.kl_div(t, reduction(o, "kl_div")?, log_target).or_raise()
}

fn mse(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction"], "mse_loss")?;
    x.mse_loss_with(t, reduction(o, "mse_loss")?).or_raise()
}

/// Option `ignore_index` (PyTorch's -100 by default).
fn ignore_index(o: &Map, what: &str) -> Res<i64> {
    o.get("ignore_index").map_or(Ok(IGNORE_INDEX), |v| {
        v.as_int()
            .map_err(|t| type_error(format!("{what}(): ignore_index must be an int, not {t}")))
    })
}

fn cross_entropy(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    let what = "cross_entropy";
    check_keys(o, &["reduction", "ignore_index", "label_smoothing"], what)?;
    let smoothing = float(o, "label_smoothing", 0.0, what)?;
    x.cross_entropy_with(t, ignore_index(o, what)?, reduction(o, what)?, smoothing)
        .or_raise()
}

fn nll(x: &Tensor, t: &Tensor, o: &Map) -> Res<Tensor> {
    check_keys(o, &["reduction", "ignore_index"], "nll_loss")?;
    x.nll_loss_with(t, ignore_index(o, "nll_loss")?, reduction(o, "nll_loss")?)
        .or_raise()
}
