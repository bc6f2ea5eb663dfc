//! Summing into slots, filling masked places and shifting in scripts: `scatter_add`, `index_add`
//! (with `alpha`), `masked_scatter` and `roll`, as functions and methods.
use rhai::{Array, Dynamic, Engine, Map, INT};

use super::conv_api::{check_keys, float};
use super::convert::{isize_list, OrRaise, Res};
use super::documented::Documented;
use super::errors::type_error;
use torchlet_core::tensor::Tensor;

/// Register the ops.
pub(crate) fn register(engine: &mut Engine) {
    engine
        .register_doc("scatter_add", &["t.scatter_add(dim, index, src) — a copy of t with src's values added at index along dim (index int64)"], |t: &mut Tensor, dim: INT, index: Tensor, src: Tensor| {
            t.scatter_add(dim as isize, &index, &src).or_raise()
        })
        .register_doc("scatter_add_", &["t.scatter_add_(dim, index, src) — scatter_add into t itself"], |t: &mut Tensor, dim: INT, index: Tensor, src: Tensor| {
            t.scatter_add_(dim as isize, &index, &src).or_raise()
        })
        .register_doc("index_add", &["t.index_add(dim, index, source[, #{alpha}]) — a copy of t with alpha × source's slices added at index along dim"], |t: &mut Tensor, dim: INT, index: Tensor, source: Tensor| {
            t.index_add(dim as isize, &index, &source, 1.0).or_raise()
        })
        .register_fn("index_add", |t: &mut Tensor, dim: INT, index: Tensor, source: Tensor, o: Map| {
            t.index_add(dim as isize, &index, &source, alpha(&o, "index_add")?).or_raise()
        })
        .register_doc("index_add_", &["t.index_add_(dim, index, source[, #{alpha}]) — index_add into t itself"], |t: &mut Tensor, dim: INT, index: Tensor, source: Tensor| {
            t.index_add_(dim as isize, &index, &source, 1.0).or_raise()
        })
        .register_fn("index_add_", |t: &mut Tensor, dim: INT, index: Tensor, source: Tensor, o: Map| {
            t.index_add_(dim as isize, &index, &source, alpha(&o, "index_add_")?).or_raise()
        })
        .register_doc("masked_scatter", &["t.masked_scatter(mask, source) — a copy of t whose places where the bool mask holds take source's elements in order"], |t: &mut Tensor, mask: Tensor, source: Tensor| {
            t.masked_scatter(&mask, &source).or_raise()
        })
        .register_doc("masked_scatter_", &["t.masked_scatter_(mask, source) — masked_scatter into t itself"], |t: &mut Tensor, mask: Tensor, source: Tensor| {
            t.masked_scatter_(&mask, &source).or_raise()
        })
        .register_doc("roll", &["t.roll(shift, dim) or t.roll([shifts], [dims]) — t rotated along dims, as torch.roll"], |t: &mut Tensor, shifts: Dynamic, dims: Dynamic| {
            roll(t, &shifts, &dims)
        });
}

fn alpha(o: &Map, what: &str) -> Res<f64> {
    check_keys(o, &["alpha"], what)?;
    float(o, "alpha", 1.0, what)
}

/// `roll(shift, dim)` with ints, or with two arrays of the same length.
fn roll(t: &Tensor, shifts: &Dynamic, dims: &Dynamic) -> Res<Tensor> {
    if let (Ok(shift), Ok(dim)) = (shifts.as_int(), dims.as_int()) {
        return t.roll(&[shift], &[dim as isize]).or_raise();
    }
    let array = |v: &Dynamic, what: &str| {
        v.clone().try_cast::<Array>().ok_or_else(|| {
            type_error(format!(
                "roll(): {what} must be an int or an array of ints, not {}",
                v.type_name()
            ))
        })
    };
    let shifts: Vec<i64> = isize_list(&array(shifts, "shifts")?)?
        .into_iter()
        .map(|s| s as i64)
        .collect();
    let dims = isize_list(&array(dims, "dims")?)?;
    t.roll(&shifts, &dims).or_raise()
}
