//! Sorting, selection, running sums, spread and sampling: `sort`, `argsort`, `topk`, `cumsum`,
//! `flip`, `scatter`, `std`, `variance` (PyTorch's `var`), `logsumexp`, `multinomial`, and
//! selection by a mask (`nonzero`, `masked_select`, `t[mask]`), as functions and methods.

use rhai::{Array, Dynamic, Engine, Map, INT};

use super::convert::{isize_list, OrRaise, Res};
use super::documented::Documented;
use super::errors::type_error;
use torchlet_core::tensor::{Moments, Tensor};

/// `[values, indices]`, as a script unpacks PyTorch's (values, indices).
fn pair(values: Tensor, indices: Tensor) -> Array {
    vec![Dynamic::from(values), Dynamic::from(indices)]
}

/// A bool option of `op` from `opts`, `default` when absent; an unknown key is an error.
fn flag(opts: &Map, op: &str, known: &[&str], key: &str, default: bool) -> Res<bool> {
    if let Some(k) = opts.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(type_error(format!(
            "{op}() got an unexpected keyword argument '{k}'"
        )));
    }
    match opts.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_bool()
            .map_err(|t| type_error(format!("{op}(): argument '{key}' must be bool, not {t}"))),
    }
}

/// The `dim` option of `op` (an int), `default` when absent.
fn dim_of(opts: &Map, op: &str, default: INT) -> Res<INT> {
    match opts.get("dim") {
        None => Ok(default),
        Some(v) => v
            .as_int()
            .map_err(|t| type_error(format!("{op}(): argument 'dim' must be int, not {t}"))),
    }
}

/// Registers the functions and methods of this module.
pub fn register(engine: &mut Engine) {
    const SORT: &[&str] = &["dim", "descending", "stable"];
    engine
        .register_doc(
            "sort",
            &["sort(t[, dim[, descending]]) or sort(t, #{dim, descending}) — [values, indices] sorted along dim (-1), ascending"],
            |t: &mut Tensor| t.sort(-1, false).map(|(v, i)| pair(v, i)).or_raise(),
        )
        .register_fn("sort", |t: &mut Tensor, dim: INT| {
            t.sort(dim as isize, false).map(|(v, i)| pair(v, i)).or_raise()
        })
        .register_fn("sort", |t: &mut Tensor, dim: INT, descending: bool| {
            t.sort(dim as isize, descending).map(|(v, i)| pair(v, i)).or_raise()
        })
        .register_fn("sort", |t: &mut Tensor, opts: Map| {
            let descending = flag(&opts, "sort", SORT, "descending", false)?;
            t.sort(dim_of(&opts, "sort", -1)? as isize, descending)
                .map(|(v, i)| pair(v, i))
                .or_raise()
        })
        .register_doc(
            "argsort",
            &["argsort(t[, dim[, descending]]) — the int64 indices that sort t along dim (-1)"],
            |t: &mut Tensor| t.argsort(-1, false).or_raise(),
        )
        .register_fn("argsort", |t: &mut Tensor, dim: INT| t.argsort(dim as isize, false).or_raise())
        .register_fn("argsort", |t: &mut Tensor, dim: INT, descending: bool| {
            t.argsort(dim as isize, descending).or_raise()
        })
        .register_doc(
            "topk",
            &["topk(t, k[, #{dim, largest, sorted}]) — [values, indices] of the k largest along dim (-1)"],
            |t: &mut Tensor, k: INT| topk(t, k, &Map::new()),
        )
        .register_fn("topk", |t: &mut Tensor, k: INT, opts: Map| topk(t, k, &opts))
        .register_fn("topk", |t: &mut Tensor, k: INT, dim: INT| {
            let mut opts = Map::new();
            opts.insert("dim".into(), Dynamic::from(dim));
            topk(t, k, &opts)
        });
    engine
        .register_doc(
            "cumsum",
            &["cumsum(t, dim) — running sums along dim (int64 for integer and bool tensors)"],
            |t: &mut Tensor, dim: INT| t.cumsum(dim as isize, None).or_raise(),
        )
        .register_doc(
            "flip",
            &["flip(t, dims_array) — a copy with the order of each dim in dims reversed"],
            |t: &mut Tensor, dims: Array| t.flip(&isize_list(&dims)?).or_raise(),
        )
        .register_doc(
            "scatter",
            &["scatter(t, dim, index, src) — a copy of t with src written at index along dim (src a tensor or a number)"],
            |t: &mut Tensor, dim: INT, index: Tensor, src: Dynamic| {
                if let Some(src) = src.clone().try_cast::<Tensor>() {
                    return t.scatter(dim as isize, &index, &src).or_raise();
                }
                let value = super::convert::scalar_of(&src)?;
                t.scatter_value(dim as isize, &index, value).or_raise()
            },
        )
        .register_doc(
            "logsumexp",
            &["logsumexp(t, dim[, keepdim]) — log(sum(exp(t))) along dim, computed stably"],
            |t: &mut Tensor, dim: INT| t.logsumexp(&[dim as isize], false).or_raise(),
        )
        .register_fn("logsumexp", |t: &mut Tensor, dim: INT, keepdim: bool| {
            t.logsumexp(&[dim as isize], keepdim).or_raise()
        });
    for (name, take_sqrt, doc) in [
        ("std", true, "std(t[, dim[, unbiased]]) — standard deviation of all elements or along dim (Bessel's correction unless unbiased is false)"),
        // `var` is a reserved word of the language: PyTorch's `var` is `variance` here.
        ("variance", false, "variance(t[, dim[, unbiased]]) — PyTorch's var: variance of all elements or along dim (Bessel's correction unless unbiased is false)"),
    ] {
        engine
            .register_doc(name, &[doc], move |t: &mut Tensor| spread(t, &[], true, take_sqrt))
            .register_fn(name, move |t: &mut Tensor, dim: INT| spread(t, &[dim as isize], true, take_sqrt))
            .register_fn(name, move |t: &mut Tensor, dim: INT, unbiased: bool| {
                spread(t, &[dim as isize], unbiased, take_sqrt)
            });
    }
    engine
        .register_doc(
            "multinomial",
            &["multinomial(probs, n[, replacement]) — n int64 category indices drawn from each row of probabilities"],
            |t: &mut Tensor, n: INT| multinomial(t, n, false),
        )
        .register_fn("multinomial", |t: &mut Tensor, n: INT, replacement: bool| {
            multinomial(t, n, replacement)
        });
    register_mask_selection(engine);
}

/// `nonzero`, `masked_select` and `t[mask]`: selections whose size the mask's values decide.
fn register_mask_selection(engine: &mut Engine) {
    engine
        .register_doc(
            "nonzero",
            &["nonzero(t) — the [count, ndim] int64 coordinates of t's nonzero elements"],
            |t: &mut Tensor| t.nonzero().or_raise(),
        )
        .register_doc(
            "masked_select",
            &["masked_select(t, mask) — t's elements where the bool mask (t's shape) holds, 1-D"],
            |t: &mut Tensor, mask: Tensor| t.masked_select(&mask).or_raise(),
        )
        .register_indexer_get(|t: &mut Tensor, mask: Tensor| {
            if mask.dtype() != torchlet_core::tensor::DType::Bool {
                return Err(type_error(
                    "a tensor index must be a bool mask (t[t > 0]); for positions use index_select(t, dim, idx)",
                ));
            }
            t.index_by_mask(&mask).or_raise()
        });
}

fn topk(t: &Tensor, k: INT, opts: &Map) -> Res<Array> {
    const TOPK: &[&str] = &["dim", "largest", "sorted"];
    let largest = flag(opts, "topk", TOPK, "largest", true)?;
    let sorted = flag(opts, "topk", TOPK, "sorted", true)?;
    let k = usize::try_from(k).map_err(|_| type_error("topk(): selected index k out of range"))?;
    t.topk(k, dim_of(opts, "topk", -1)? as isize, largest, sorted)
        .map(|(v, i)| pair(v, i))
        .or_raise()
}

fn multinomial(t: &Tensor, n: INT, replacement: bool) -> Res<Tensor> {
    let n = usize::try_from(n)
        .map_err(|_| type_error("multinomial(): cannot sample n_sample <= 0 samples"))?;
    t.multinomial(n, replacement).or_raise()
}

fn spread(t: &Tensor, dims: &[isize], unbiased: bool, take_sqrt: bool) -> Res<Tensor> {
    let m = Moments {
        dims: dims.to_vec(),
        correction: if unbiased { 1.0 } else { 0.0 },
        keepdim: false,
        take_sqrt,
    };
    Ok(t.moments(&m, false).or_raise()?.0)
}
