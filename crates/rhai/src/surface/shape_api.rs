//! Shape and index ops in scripts: `cat`, `stack`, `split`, `chunk`, `expand`, `repeat`, `where`,
//! `masked_fill`, `triu`/`tril`, `index_select`, `gather`, `embedding`, `randint`.
//!
//! Each is a function (`cat(ts, dim)`, as `torch.cat`) and, through Rhai's method-call syntax on
//! the first argument, a method where PyTorch has one (`t.split(…)`). Keyword arguments come as
//! an object map: `cat([a, b], #{dim: -1})`, `triu(t, #{diagonal: 1})`.
use std::any::TypeId;

use rhai::{Array, Dynamic, Engine, Map, INT};

use super::convert::{isize_list, options_of, scalar_of, shape_of_array, OrRaise, Res};
use super::creation::MAX_VARIADIC_DIMS;
use super::documented::Documented;
use super::errors::type_error;
use torchlet_core::tensor::{Tensor, TensorOptions};

/// Register every shape and index op.
pub(crate) fn register(engine: &mut Engine) {
    register_joins(engine);
    register_splits(engine);
    register_tiling(engine);
    register_masks(engine);
    register_indexing(engine);
}

/// The tensors of a script array, or a TypeError naming what else it held.
fn tensors_of(items: &Array, op: &str) -> Res<Vec<Tensor>> {
    items
        .iter()
        .map(|v| {
            v.read_lock::<Tensor>().map(|t| t.clone()).ok_or_else(|| {
                type_error(format!(
                    "{op}(): argument 'tensors' must be a list of Tensors, not containing {}",
                    v.type_name()
                ))
            })
        })
        .collect()
}

/// An int keyword from an option map, or `default`; unknown keys are a TypeError.
fn keyword(opts: &Map, op: &str, key: &str, default: INT) -> Res<INT> {
    if let Some(k) = opts.keys().find(|k| k.as_str() != key) {
        return Err(type_error(format!(
            "{op}() got an unexpected keyword argument '{k}'"
        )));
    }
    match opts.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_int()
            .map_err(|t| type_error(format!("{op}(): argument '{key}' must be int, not {t}"))),
    }
}

/// A tensor array as a script array.
fn array_of(parts: Vec<Tensor>) -> Array {
    parts.into_iter().map(Dynamic::from).collect()
}

fn register_joins(engine: &mut Engine) {
    type Join = fn(&[Tensor], isize) -> torchlet_core::tensor::Result<Tensor>;
    let joins: [(&str, &str, Join); 2] = [
        (
            "cat",
            "cat(tensors, dim=0) — the tensors joined along dim (a new tensor; also #{dim})",
            Tensor::cat,
        ),
        (
            "stack",
            "stack(tensors, dim=0) — equal-shaped tensors joined along a new dim",
            Tensor::stack,
        ),
    ];
    for (name, doc, op) in joins {
        engine
            .register_doc(name, &[doc], move |ts: Array| {
                op(&tensors_of(&ts, name)?, 0).or_raise()
            })
            .register_fn(name, move |ts: Array, dim: INT| {
                op(&tensors_of(&ts, name)?, dim as isize).or_raise()
            })
            .register_fn(name, move |ts: Array, opts: Map| {
                let dim = keyword(&opts, name, "dim", 0)?;
                op(&tensors_of(&ts, name)?, dim as isize).or_raise()
            });
    }
}

/// `split`'s size argument: one int (equal parts) or an array of sizes.
fn split_any(t: &Tensor, size: &Dynamic, dim: INT) -> Res<Array> {
    let parts = if let Ok(n) = size.as_int() {
        let n = usize::try_from(n).map_err(|_| {
            super::errors::raise(
                "RuntimeError",
                format!("split expects split_size be non-negative, but got split_size={n}"),
            )
        })?;
        t.split(n, dim as isize)
    } else if let Some(sizes) = size.read_lock::<Array>() {
        t.split_with_sizes(&shape_of_array(&sizes)?, dim as isize)
    } else {
        return Err(type_error(format!(
            "split(): argument 'split_size' must be int or a list of ints, not {}",
            size.type_name()
        )));
    };
    Ok(array_of(parts.or_raise()?))
}

fn chunk_any(t: &Tensor, chunks: INT, dim: INT) -> Res<Array> {
    let chunks = usize::try_from(chunks).unwrap_or(0);
    Ok(array_of(t.chunk(chunks, dim as isize).or_raise()?))
}

fn register_splits(engine: &mut Engine) {
    engine
        .register_doc(
            "split",
            &["split(t, size_or_sizes, dim=0) — views of t along dim: equal parts of size, or these sizes (also t.split)"],
            |t: &mut Tensor, size: Dynamic| split_any(t, &size, 0),
        )
        .register_fn("split", |t: &mut Tensor, size: Dynamic, dim: INT| {
            split_any(t, &size, dim)
        })
        .register_fn("split", |t: &mut Tensor, size: Dynamic, opts: Map| {
            split_any(t, &size, keyword(&opts, "split", "dim", 0)?)
        })
        .register_doc(
            "chunk",
            &["chunk(t, n, dim=0) — at most n equal views of t along dim (also t.chunk)"],
            |t: &mut Tensor, n: INT| chunk_any(t, n, 0),
        )
        .register_fn("chunk", |t: &mut Tensor, n: INT, dim: INT| {
            chunk_any(t, n, dim)
        })
        .register_fn("chunk", |t: &mut Tensor, n: INT, opts: Map| {
            chunk_any(t, n, keyword(&opts, "chunk", "dim", 0)?)
        });
}

/// `expand`'s sizes: -1 keeps the existing size of a dim.
fn expand_sizes(t: &Tensor, sizes: &[isize]) -> Res<Tensor> {
    let extra = sizes.len().saturating_sub(t.dim());
    let mut shape = Vec::with_capacity(sizes.len());
    for (i, &s) in sizes.iter().enumerate() {
        shape.push(match s {
            -1 if i >= extra => t.dims()[i - extra],
            -1 => {
                return Err(super::errors::raise(
                    "RuntimeError",
                    format!("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"),
                ))
            }
            s if s < 0 => {
                return Err(super::errors::raise(
                    "RuntimeError",
                    format!("Trying to create tensor with negative dimension {s}: {sizes:?}"),
                ))
            }
            s => s as usize,
        });
    }
    t.expand(&shape).or_raise()
}

fn repeat_sizes(t: &Tensor, sizes: &[isize]) -> Res<Tensor> {
    let repeats: Vec<usize> = sizes
        .iter()
        .map(|&r| {
            usize::try_from(r).map_err(|_| {
                super::errors::raise(
                    "RuntimeError",
                    format!("Trying to create tensor with negative dimension {r}: {sizes:?}"),
                )
            })
        })
        .collect::<Res<_>>()?;
    t.repeat(&repeats).or_raise()
}

fn register_tiling(engine: &mut Engine) {
    type Tile = fn(&Tensor, &[isize]) -> Res<Tensor>;
    let ops: [(&str, &str, Tile); 2] = [
        ("expand", "t.expand(d0, d1, …) or t.expand(shape_array) — t broadcast to a larger shape without copying (-1 keeps a dim)", expand_sizes),
        ("repeat", "t.repeat(r0, r1, …) or t.repeat(array) — t tiled r times along each dim (a new tensor)", repeat_sizes),
    ];
    for (name, doc, op) in ops {
        engine.register_doc(name, &[doc], move |t: &mut Tensor, dims: Array| {
            op(t, &isize_list(&dims)?)
        });
        for arity in 1..=MAX_VARIADIC_DIMS {
            let mut types = vec![TypeId::of::<Tensor>()];
            types.extend(std::iter::repeat_n(TypeId::of::<INT>(), arity));
            engine.register_raw_fn(name, types, move |_, args| {
                let (first, rest) = args.split_first_mut().expect("a tensor comes first");
                let dims: Vec<isize> = rest
                    .iter()
                    .map(|a| a.as_int().unwrap_or(0) as isize)
                    .collect();
                let t = first
                    .read_lock::<Tensor>()
                    .expect("typed as Tensor")
                    .clone();
                op(&t, &dims)
            });
        }
    }
}

/// `where`'s value operands: tensors or numbers (not both numbers).
fn where_any(cond: &Tensor, a: &Dynamic, b: &Dynamic) -> Res<Tensor> {
    let (ta, tb) = (a.read_lock::<Tensor>(), b.read_lock::<Tensor>());
    match (ta, tb) {
        (Some(a), Some(b)) => Tensor::where_(cond, &a, &b).or_raise(),
        (Some(a), None) => Tensor::where_scalar(cond, &a, scalar_of(b)?, true).or_raise(),
        (None, Some(b)) => Tensor::where_scalar(cond, &b, scalar_of(a)?, false).or_raise(),
        (None, None) => {
            let like = cond.zeros_like().or_raise()?;
            let like = like
                .to_dtype(torchlet_core::tensor::DType::F32)
                .or_raise()?;
            let a = Tensor::where_scalar(cond, &like, scalar_of(a)?, false).or_raise()?;
            Tensor::where_scalar(cond, &a, scalar_of(b)?, true).or_raise()
        }
    }
}

fn register_masks(engine: &mut Engine) {
    engine
        .register_doc(
            "where",
            &["where(cond, a, b) — a where the bool cond is true, else b (broadcast; a or b may be a number)"],
            |cond: Tensor, a: Dynamic, b: Dynamic| where_any(&cond, &a, &b),
        )
        .register_doc(
            "masked_fill",
            &["t.masked_fill(mask, value) — a copy of t with value where the bool mask is true"],
            |t: &mut Tensor, mask: Tensor, value: Dynamic| {
                t.masked_fill(&mask, scalar_of(&value)?).or_raise()
            },
        )
        .register_doc(
            "masked_fill_",
            &["t.masked_fill_(mask, value) — set value where the bool mask is true, in place"],
            |t: &mut Tensor, mask: Tensor, value: Dynamic| {
                t.masked_fill_(&mask, scalar_of(&value)?).or_raise()
            },
        );
    for (name, upper, doc) in [
        ("triu", true, "triu(t, diagonal=0) — t with the elements below the diagonal zeroed (also #{diagonal}, t.triu)"),
        ("tril", false, "tril(t, diagonal=0) — t with the elements above the diagonal zeroed (also #{diagonal}, t.tril)"),
    ] {
        engine
            .register_doc(name, &[doc], move |t: &mut Tensor| {
                t.triangle(0, upper).or_raise()
            })
            .register_fn(name, move |t: &mut Tensor, diagonal: INT| {
                t.triangle(diagonal, upper).or_raise()
            })
            .register_fn(name, move |t: &mut Tensor, opts: Map| {
                t.triangle(keyword(&opts, name, "diagonal", 0)?, upper)
                    .or_raise()
            });
    }
}

fn register_indexing(engine: &mut Engine) {
    engine
        .register_doc(
            "index_select",
            &["index_select(t, dim, index) — the slices of t along dim at the 1-D int index (a new tensor)"],
            |t: &mut Tensor, dim: INT, index: Tensor| t.index_select(dim as isize, &index).or_raise(),
        )
        .register_doc(
            "gather",
            &["gather(t, dim, index) — out[i][j] = t[i][index[i][j]] along dim (index int64, t's number of dims)"],
            |t: &mut Tensor, dim: INT, index: Tensor| t.gather(dim as isize, &index).or_raise(),
        )
        .register_doc(
            "embedding",
            &["embedding(index, weight) — the rows of the 2-D weight at the int index (F.embedding)"],
            |index: Tensor, weight: Tensor| Tensor::embedding(&index, &weight).or_raise(),
        )
        .register_doc(
            "randint",
            &["randint(low, high, shape_array[, opts]) — uniform int64 values in [low, high)"],
            |low: INT, high: INT, shape: Array| randint(low, high, &shape, &Map::new()),
        )
        .register_fn("randint", |low: INT, high: INT, shape: Array, opts: Map| {
            randint(low, high, &shape, &opts)
        })
        .register_fn("randint", |high: INT, shape: Array| {
            randint(0, high, &shape, &Map::new())
        })
        .register_fn("randint", |high: INT, shape: Array, opts: Map| {
            randint(0, high, &shape, &opts)
        });
}

fn randint(low: INT, high: INT, shape: &Array, opts: &Map) -> Res<Tensor> {
    let base = TensorOptions::default().dtype(torchlet_core::tensor::DType::I64);
    let opts = options_of(opts, base)?;
    Tensor::randint(low, high, &shape_of_array(shape)?, &opts).or_raise()
}
