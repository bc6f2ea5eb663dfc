//! Tensor methods and functions: what a tensor is (`_shape`, `_dtype` …), core's op tables by name
//! (`_unary`, `_binary`, `_reduce`), views, joins, model ops and in-place updates.

use rustpython_vm::PyResult;
use torchlet_core::device::Device;
use torchlet_core::tensor::{
    ReduceOp, Reduction, Tensor, BINARY_METHODS, REDUCE_METHODS, UNARY_METHODS,
};

use super::args::{tensor_of, Args};
use super::creation::dtype_named;
use super::tensor::{wrap, OrRaise};
use super::values::{from_scalar, int, int_tuple};
use super::Native;

/// Every tensor function, by the name the `torch` package calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    // What a tensor is.
    ("_shape", |a| Ok(int_tuple(a.vm, a.tensor(0)?.dims()))),
    ("_stride", |a| Ok(int_tuple(a.vm, &a.tensor(0)?.stride()))),
    ("_dtype", |a| {
        Ok(a.vm.ctx.new_str(a.tensor(0)?.dtype().name()).into())
    }),
    ("_device", |a| {
        Ok(a.vm.ctx.new_str(device_name(a.tensor(0)?.device())).into())
    }),
    ("_numel", |a| Ok(int(a.vm, a.tensor(0)?.numel() as u64))),
    ("_element_size", |a| {
        Ok(int(a.vm, a.tensor(0)?.element_size() as u64))
    }),
    ("_data_ptr", |a| Ok(int(a.vm, a.tensor(0)?.data_ptr()))),
    ("_storage_offset", |a| {
        Ok(int(a.vm, a.tensor(0)?.storage_offset() as u64))
    }),
    ("_storage_nbytes", |a| {
        Ok(int(a.vm, a.tensor(0)?.storage_nbytes() as u64))
    }),
    ("_is_contiguous", |a| {
        Ok(a.vm.ctx.new_bool(a.tensor(0)?.is_contiguous()).into())
    }),
    ("_is_leaf", |a| {
        Ok(a.vm.ctx.new_bool(a.tensor(0)?.is_leaf()).into())
    }),
    ("_requires_grad", |a| {
        Ok(a.vm.ctx.new_bool(a.tensor(0)?.requires_grad()).into())
    }),
    ("_set_requires_grad", |a| {
        a.tensor(0)?.set_requires_grad(a.bool(1)?).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_grad", |a| {
        Ok(match a.tensor(0)?.grad() {
            Some(g) => wrap(a.vm, g),
            None => a.vm.ctx.none(),
        })
    }),
    ("_set_grad", |a| {
        a.tensor(0)?.set_grad(a.opt_tensor(1)?).or_raise(a.vm)?;
        super::none(a.vm)
    }),
    ("_grad_fn_name", |a| {
        Ok(match a.tensor(0)?.grad_fn_name() {
            Some(name) => a.vm.ctx.new_str(name).into(),
            None => a.vm.ctx.none(),
        })
    }),
    ("_same", |a| {
        Ok(a.vm
            .ctx
            .new_bool(a.tensor(0)?.same_tensor(&a.tensor(1)?))
            .into())
    }),
    ("_item", |a| {
        Ok(from_scalar(a.vm, a.tensor(0)?.item().or_raise(a.vm)?))
    }),
    ("_values", |a| {
        let values = a.tensor(0)?.to_scalars().or_raise(a.vm)?;
        let items = values.into_iter().map(|s| from_scalar(a.vm, s)).collect();
        Ok(a.vm.ctx.new_list(items).into())
    }),
    ("_has_values", |a| {
        // False in a shapes-only run (`torchlet fit`): the tensor has a shape and no values.
        Ok(a.vm.ctx.new_bool(a.tensor(0)?.has_values()).into())
    }),
    ("_holds_int", |a| {
        // Read on the host, so the check makes no device allocation; `None` where the tensor
        // has no values (`fit` runs shapes only).
        let t = a.tensor(0)?;
        if !t.has_values() {
            return super::none(a.vm);
        }
        let wanted = a.int(1)?;
        let values = t.to_scalars().or_raise(a.vm)?;
        let found = values
            .iter()
            .any(|v| matches!(v, torchlet_core::tensor::Scalar::Int(i) if *i == wanted));
        Ok(a.vm.ctx.new_bool(found).into())
    }),
    ("_repr", |a| {
        Ok(a.vm.ctx.new_str(a.tensor(0)?.repr().or_raise(a.vm)?).into())
    }),
    ("_truth", |a| {
        Ok(a.vm
            .ctx
            .new_bool(a.tensor(0)?.truth().or_raise(a.vm)?)
            .into())
    }),
    // Core's op tables, by name.
    ("_unary", unary),
    ("_binary", binary),
    ("_rbinary", rbinary),
    ("_reduce", reduce),
    ("_reduce_indices", reduce_indices),
    ("_reduce_over", reduce_over),
    ("_unary_names", |a| {
        names(a, UNARY_METHODS.iter().map(|m| m.name))
    }),
    ("_binary_names", |a| {
        names(a, BINARY_METHODS.iter().map(|m| m.name))
    }),
    ("_reduce_names", |a| {
        names(a, REDUCE_METHODS.iter().map(|m| m.name))
    }),
    // Views and copies.
    ("_view", |a| one(a, a.tensor(0)?.view(&isizes(a, 1)?))),
    ("_reshape", |a| one(a, a.tensor(0)?.reshape(&isizes(a, 1)?))),
    ("_transpose", |a| {
        one(
            a,
            a.tensor(0)?
                .transpose(a.int(1)? as isize, a.int(2)? as isize),
        )
    }),
    ("_t", |a| one(a, a.tensor(0)?.t())),
    ("_slice", |a| {
        let (start, len, step) = (a.int(2)?, a.int(3)?, a.int(4)?);
        one(
            a,
            a.tensor(0)?.slice_step(
                a.int(1)? as isize,
                start as usize,
                len as usize,
                step as usize,
            ),
        )
    }),
    ("_reciprocal", |a| one(a, a.tensor(0)?.reciprocal())),
    ("_permute", |a| one(a, a.tensor(0)?.permute(&isizes(a, 1)?))),
    ("_unsqueeze", |a| {
        one(a, a.tensor(0)?.unsqueeze(a.int(1)? as isize))
    }),
    ("_squeeze", |a| {
        one(a, a.tensor(0)?.squeeze(a.opt_int(1)?.map(|d| d as isize)))
    }),
    ("_expand", |a| one(a, a.tensor(0)?.expand(&a.shape(1)?))),
    ("_select", |a| {
        one(
            a,
            a.tensor(0)?.select(a.int(1)? as isize, a.int(2)? as isize),
        )
    }),
    ("_narrow", |a| {
        let len = usize::try_from(a.int(3)?).unwrap_or(0);
        one(
            a,
            a.tensor(0)?
                .narrow(a.int(1)? as isize, a.int(2)? as isize, len),
        )
    }),
    ("_contiguous", |a| one(a, a.tensor(0)?.contiguous())),
    ("_clone", |a| one(a, a.tensor(0)?.clone_tensor())),
    ("_detach", |a| one(a, a.tensor(0)?.detach())),
    ("_detach_", |a| {
        a.tensor(0)?.detach_();
        super::none(a.vm)
    }),
    ("_to", to),
    // Products, joins and splits.
    ("_matmul", |a| one(a, a.tensor(0)?.matmul(&a.tensor(1)?))),
    ("_mm", |a| one(a, a.tensor(0)?.mm(&a.tensor(1)?))),
    ("_bmm", |a| one(a, a.tensor(0)?.bmm(&a.tensor(1)?))),
    ("_add_scaled", |a| {
        one(a, a.tensor(0)?.add_scaled(&a.tensor(1)?, a.float(2)?))
    }),
    ("_linear", |a| {
        one(
            a,
            a.tensor(0)?
                .linear(&a.tensor(1)?, a.opt_tensor(2)?.as_ref()),
        )
    }),
    ("_cat", |a| {
        one(a, Tensor::cat(&a.tensors(0)?, a.int(1)? as isize))
    }),
    ("_stack", |a| {
        one(a, Tensor::stack(&a.tensors(0)?, a.int(1)? as isize))
    }),
    ("_split", |a| {
        let size = usize::try_from(a.int(1)?).unwrap_or(0);
        many(a, a.tensor(0)?.split(size, a.int(2)? as isize))
    }),
    ("_split_sizes", |a| {
        let sizes = a.shape(1)?;
        many(a, a.tensor(0)?.split_with_sizes(&sizes, a.int(2)? as isize))
    }),
    ("_chunk", |a| {
        let n = usize::try_from(a.int(1)?).unwrap_or(0);
        many(a, a.tensor(0)?.chunk(n, a.int(2)? as isize))
    }),
    ("_repeat", |a| one(a, a.tensor(0)?.repeat(&a.shape(1)?))),
    // Selection and masks.
    ("_where", where_),
    ("_masked_fill", |a| {
        one(a, a.tensor(0)?.masked_fill(&a.tensor(1)?, a.scalar(2)?))
    }),
    ("_masked_fill_", |a| {
        one(a, a.tensor(0)?.masked_fill_(&a.tensor(1)?, a.scalar(2)?))
    }),
    ("_masked_scatter", |a| {
        one(a, a.tensor(0)?.masked_scatter(&a.tensor(1)?, &a.tensor(2)?))
    }),
    ("_masked_scatter_", |a| {
        one(
            a,
            a.tensor(0)?.masked_scatter_(&a.tensor(1)?, &a.tensor(2)?),
        )
    }),
    ("_triangle", |a| {
        one(a, a.tensor(0)?.triangle(a.int(1)?, a.bool(2)?))
    }),
    ("_index_select", |a| {
        one(
            a,
            a.tensor(0)?.index_select(a.int(1)? as isize, &a.tensor(2)?),
        )
    }),
    // Selection by a bool mask (its size read from the mask's values).
    ("_nonzero", |a| one(a, a.tensor(0)?.nonzero())),
    // `x[idx]` with an int64 index: PyTorch's `index` (IndexBackward0).
    ("_index_rows", |a| {
        one(a, a.tensor(0)?.index_rows(&a.tensor(1)?))
    }),
    ("_index_mask", |a| {
        one(a, a.tensor(0)?.index_by_mask(&a.tensor(1)?))
    }),
    ("_masked_select", |a| {
        one(a, a.tensor(0)?.masked_select(&a.tensor(1)?))
    }),
    ("_gather", |a| {
        one(a, a.tensor(0)?.gather(a.int(1)? as isize, &a.tensor(2)?))
    }),
    // Sorting, selection, scans and sampling (computed on the host, PyTorch's device memory).
    ("_sort", |a| {
        let (values, indices) = a
            .tensor(0)?
            .sort(a.int(1)? as isize, a.bool(2)?)
            .or_raise(a.vm)?;
        Ok(a.vm
            .ctx
            .new_tuple(vec![wrap(a.vm, values), wrap(a.vm, indices)])
            .into())
    }),
    ("_topk", |a| {
        let k = usize::try_from(a.int(1)?).map_err(|_| {
            a.vm.new_runtime_error("selected index k out of range".to_owned())
        })?;
        let (values, indices) = a
            .tensor(0)?
            .topk(k, a.int(2)? as isize, a.bool(3)?, a.bool(4)?)
            .or_raise(a.vm)?;
        Ok(a.vm
            .ctx
            .new_tuple(vec![wrap(a.vm, values), wrap(a.vm, indices)])
            .into())
    }),
    ("_cumsum", |a| {
        let dtype = match a.opt_str(2)? {
            Some(name) => Some(dtype_named(a, &name)?),
            None => None,
        };
        one(a, a.tensor(0)?.cumsum(a.int(1)? as isize, dtype))
    }),
    ("_flip", |a| one(a, a.tensor(0)?.flip(&isizes(a, 1)?))),
    ("_scatter", |a| {
        let (dim, index, src) = (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?);
        one(a, a.tensor(0)?.scatter(dim, &index, &src))
    }),
    ("_scatter_value", |a| {
        let (dim, index, value) = (a.int(1)? as isize, a.tensor(2)?, a.scalar(3)?);
        one(a, a.tensor(0)?.scatter_value(dim, &index, value))
    }),
    ("_scatter_value_", |a| {
        let (dim, index, value) = (a.int(1)? as isize, a.tensor(2)?, a.scalar(3)?);
        a.tensor(0)?
            .scatter_value_(dim, &index, value)
            .or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_scatter_add", |a| {
        let (dim, index, src) = (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?);
        one(a, a.tensor(0)?.scatter_add(dim, &index, &src))
    }),
    ("_scatter_add_", |a| {
        let (dim, index, src) = (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?);
        a.tensor(0)?
            .scatter_add_(dim, &index, &src)
            .or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_index_add", |a| {
        let (dim, index, src, alpha) =
            (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?, a.float(4)?);
        one(a, a.tensor(0)?.index_add(dim, &index, &src, alpha))
    }),
    ("_index_add_", |a| {
        let (dim, index, src, alpha) =
            (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?, a.float(4)?);
        a.tensor(0)?
            .index_add_(dim, &index, &src, alpha)
            .or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_roll", |a| {
        let (shifts, dims) = (a.ints(1)?, a.ints(2)?);
        let dims: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
        one(a, a.tensor(0)?.roll(&shifts, &dims))
    }),
    ("_scatter_", |a| {
        let (dim, index, src) = (a.int(1)? as isize, a.tensor(2)?, a.tensor(3)?);
        a.tensor(0)?.scatter_(dim, &index, &src).or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_moments", |a| {
        // _moments(t, dims, correction, keepdim, take_sqrt, with_mean): (out, mean or None).
        let m = torchlet_core::tensor::Moments {
            dims: isizes(a, 1)?,
            correction: a.float(2)?,
            keepdim: a.bool(3)?,
            take_sqrt: a.bool(4)?,
        };
        let (out, mean) = a.tensor(0)?.moments(&m, a.bool(5)?).or_raise(a.vm)?;
        let mean = match mean {
            Some(t) => wrap(a.vm, t),
            None => a.vm.ctx.none(),
        };
        Ok(a.vm.ctx.new_tuple(vec![wrap(a.vm, out), mean]).into())
    }),
    ("_logsumexp", |a| {
        one(a, a.tensor(0)?.logsumexp(&isizes(a, 1)?, a.bool(2)?))
    }),
    ("_pairwise", pairwise),
    ("_norm_over", |a| {
        let ord = a.float(1)?;
        one(a, a.tensor(0)?.norm_over(ord, &isizes(a, 2)?, a.bool(3)?))
    }),
    ("_lerp", |a| {
        let weight = a.float(2)?;
        one(a, a.tensor(0)?.lerp(&a.tensor(1)?, weight))
    }),
    ("_addcmul", |a| {
        let value = a.float(3)?;
        one(a, a.tensor(0)?.addcmul(&a.tensor(1)?, &a.tensor(2)?, value))
    }),
    ("_clamp_min", |a| {
        one(a, a.tensor(0)?.clamp_min(a.float(1)?))
    }),
    ("_clamp_max", |a| {
        one(a, a.tensor(0)?.clamp_max(a.float(1)?))
    }),
    ("_multinomial", |a| {
        let n = usize::try_from(a.int(1)?).map_err(|_| {
            a.vm.new_runtime_error("cannot sample n_sample <= 0 samples".to_owned())
        })?;
        one(a, a.tensor(0)?.multinomial(n, a.bool(2)?))
    }),
    ("_embedding", |a| {
        one(a, Tensor::embedding(&a.tensor(0)?, &a.tensor(1)?))
    }),
    // Model ops.
    ("_layer_norm", |a| {
        let x = a.tensor(0)?;
        let (w, b) = (a.opt_tensor(2)?, a.opt_tensor(3)?);
        one(
            a,
            x.layer_norm(&a.shape(1)?, w.as_ref(), b.as_ref(), a.float(4)?),
        )
    }),
    ("_dropout", |a| {
        one(a, a.tensor(0)?.dropout(a.float(1)?, a.bool(2)?))
    }),
    ("_softmax", |a| softmax(a, false)),
    ("_log_softmax", |a| softmax(a, true)),
    // (input, target, ignore_index, reduction[, label_smoothing])
    ("_cross_entropy", |a| {
        let (x, t, ignore, smoothing) = (a.tensor(0)?, a.tensor(1)?, a.int(2)?, a.float(4)?);
        let reduction = Reduction::parse(&a.str(3)?);
        one(
            a,
            reduction.and_then(|r| x.cross_entropy_with(&t, ignore, r, smoothing)),
        )
    }),
    ("_nll_loss", |a| {
        let (x, t, ignore) = (a.tensor(0)?, a.tensor(1)?, a.int(2)?);
        one(
            a,
            Reduction::parse(&a.str(3)?).and_then(|r| x.nll_loss_with(&t, ignore, r)),
        )
    }),
    // The elementwise losses: (input, target, …, reduction as PyTorch spells it).
    ("_mse_loss", |a| {
        let (x, t) = (a.tensor(0)?, a.tensor(1)?);
        one(
            a,
            Reduction::parse(&a.str(2)?).and_then(|r| x.mse_loss_with(&t, r)),
        )
    }),
    ("_l1_loss", |a| {
        let (x, t) = (a.tensor(0)?, a.tensor(1)?);
        one(
            a,
            Reduction::parse(&a.str(2)?).and_then(|r| x.l1_loss(&t, r)),
        )
    }),
    ("_smooth_l1_loss", |a| {
        let (x, t, beta) = (a.tensor(0)?, a.tensor(1)?, a.float(3)?);
        one(
            a,
            Reduction::parse(&a.str(2)?).and_then(|r| x.smooth_l1_loss(&t, r, beta)),
        )
    }),
    ("_huber_loss", |a| {
        let (x, t, delta) = (a.tensor(0)?, a.tensor(1)?, a.float(3)?);
        one(
            a,
            Reduction::parse(&a.str(2)?).and_then(|r| x.huber_loss(&t, r, delta)),
        )
    }),
    ("_kl_div", |a| {
        let (x, t, log_target) = (a.tensor(0)?, a.tensor(1)?, a.bool(3)?);
        one(
            a,
            Reduction::parse(&a.str(2)?).and_then(|r| x.kl_div(&t, r, log_target)),
        )
    }),
    ("_binary_cross_entropy", |a| {
        let (x, t, w) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let reduction = Reduction::parse(&a.str(3)?);
        one(
            a,
            reduction.and_then(|r| x.binary_cross_entropy(&t, w.as_ref(), r)),
        )
    }),
    ("_binary_cross_entropy_with_logits", |a| {
        let (x, t) = (a.tensor(0)?, a.tensor(1)?);
        let (w, pw) = (a.opt_tensor(2)?, a.opt_tensor(3)?);
        let reduction = Reduction::parse(&a.str(4)?);
        one(
            a,
            reduction
                .and_then(|r| x.binary_cross_entropy_with_logits(&t, w.as_ref(), pw.as_ref(), r)),
        )
    }),
    ("_clamp", |a| {
        one(a, a.tensor(0)?.clamp(a.opt_float(1)?, a.opt_float(2)?))
    }),
    ("_pow_number", |a| {
        one(a, a.tensor(0)?.pow_number(a.scalar(1)?))
    }),
    // In place.
    ("_inplace", inplace),
    ("_unary_", unary_inplace),
    ("_activation", activation),
    ("_bool_logic", |a| {
        let or = a.bool(2)?;
        one(a, a.tensor(0)?.bool_logic(&a.tensor(1)?, or))
    }),
    ("_fill_", |a| one(a, a.tensor(0)?.fill_(a.scalar(1)?))),
    ("_zero_", |a| one(a, a.tensor(0)?.zero_())),
    ("_relu_", |a| one(a, a.tensor(0)?.relu_())),
    ("_copy_", |a| {
        let t = a.tensor(0)?;
        t.copy_(&a.tensor(1)?).or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_normal_", |a| {
        a.tensor(0)?
            .normal_(a.float(1)?, a.float(2)?)
            .or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
    ("_uniform_", |a| {
        a.tensor(0)?
            .uniform_(a.float(1)?, a.float(2)?)
            .or_raise(a.vm)?;
        Ok(a.get(0)?.clone())
    }),
];

/// PyTorch's name for a device: `cpu`, `cuda:0`.
pub(crate) fn device_name(device: Device) -> String {
    device.to_string()
}

fn one(a: &Args, t: torchlet_core::tensor::Result<Tensor>) -> PyResult {
    Ok(wrap(a.vm, t.or_raise(a.vm)?))
}

fn many(a: &Args, ts: torchlet_core::tensor::Result<Vec<Tensor>>) -> PyResult {
    let items = ts
        .or_raise(a.vm)?
        .into_iter()
        .map(|t| wrap(a.vm, t))
        .collect();
    Ok(a.vm.ctx.new_tuple(items).into())
}

fn names(a: &Args, names: impl Iterator<Item = &'static str>) -> PyResult {
    let items = names.map(|n| a.vm.ctx.new_str(n).into()).collect();
    Ok(a.vm.ctx.new_tuple(items).into())
}

fn isizes(a: &Args, i: usize) -> PyResult<Vec<isize>> {
    Ok(a.ints(i)?.into_iter().map(|d| d as isize).collect())
}

/// `_unary(name, t, keyword)`: a row of core's elementwise table.
fn unary(a: &Args) -> PyResult {
    let name = a.str(0)?;
    let method = UNARY_METHODS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| {
            a.vm.new_attribute_error(format!("no elementwise op {name}"))
        })?;
    let keyword = match method.keyword {
        Some((_, default)) => a.opt_str(2)?.unwrap_or_else(|| default.to_string()),
        None => String::new(),
    };
    one(a, (method.call)(&a.tensor(1)?, &keyword))
}

/// `_binary(name, t, other)`: `t op other` for a tensor or a number `other`.
fn binary(a: &Args) -> PyResult {
    let method = binary_row(a)?;
    let t = a.tensor(1)?;
    match tensor_of(a.get(2)?) {
        Some(other) => one(a, (method.tensors)(&t, &other)),
        None => one(a, (method.number)(&t, a.scalar(2)?)),
    }
}

/// `_pairwise(name, a, b, reflected)`: maximum, minimum, remainder or floor_divide of two
/// tensors, or of a tensor and a number (`number op t` when `reflected`).
fn pairwise(a: &Args) -> PyResult {
    let name = a.str(0)?;
    let t = a.tensor(1)?;
    let reflected = a.bool(3)?;
    let result = match (name.as_str(), tensor_of(a.get(2)?)) {
        ("maximum", Some(o)) => t.maximum(&o),
        ("minimum", Some(o)) => t.minimum(&o),
        ("remainder", Some(o)) if reflected => o.remainder(&t),
        ("remainder", Some(o)) => t.remainder(&o),
        ("floor_divide", Some(o)) if reflected => o.floor_divide(&t),
        ("floor_divide", Some(o)) => t.floor_divide(&o),
        ("remainder", None) => t.remainder_scalar(a.scalar(2)?, reflected),
        ("floor_divide", None) => t.floor_divide_scalar(a.scalar(2)?, reflected),
        (other, _) => {
            return Err(a
                .vm
                .new_type_error(format!("{other}() takes two tensors here")));
        }
    };
    one(a, result)
}

/// `_rbinary(name, t, number)`: `number op t` (Python's reflected operators).
fn rbinary(a: &Args) -> PyResult {
    let method = binary_row(a)?;
    let first = method.number_first.ok_or_else(|| {
        a.vm.new_type_error(format!("a number cannot come first in {}", method.name))
    })?;
    one(a, first(&a.tensor(1)?, a.scalar(2)?))
}

fn binary_row(a: &Args) -> PyResult<&'static torchlet_core::tensor::BinaryMethod> {
    let name = a.str(0)?;
    BINARY_METHODS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| a.vm.new_attribute_error(format!("no binary op {name}")))
}

/// `_reduce(name, t, dim, keepdim)`: a row of core's reduction table.
fn reduce(a: &Args) -> PyResult {
    let name = a.str(0)?;
    let method = REDUCE_METHODS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| a.vm.new_attribute_error(format!("no reduction {name}")))?;
    let dim = a.opt_int(2)?.map(|d| d as isize);
    one(a, (method.call)(&a.tensor(1)?, dim, a.bool(3)?))
}

/// `_reduce_over(name, t, dims, keepdim)`: a sum or mean over several dims at once (one kernel,
/// one output, as PyTorch's).
fn reduce_over(a: &Args) -> PyResult {
    let op = match a.str(0)?.as_str() {
        "sum" => ReduceOp::Sum,
        "mean" => ReduceOp::Mean,
        "amax" => ReduceOp::Amax,
        "amin" => ReduceOp::Amin,
        other => {
            return Err(a.vm.new_not_implemented_error(format!(
                "torchlet: {other}() over several dims at once is not supported yet; reduce one dim at a time"
            )))
        }
    };
    one(
        a,
        a.tensor(1)?.reduction_over(op, &isizes(a, 2)?, a.bool(3)?),
    )
}

/// `_reduce_indices(name, t, dim, keepdim)`: `(values, indices)`, as `x.max(1)` returns them.
fn reduce_indices(a: &Args) -> PyResult {
    let name = a.str(0)?;
    let op = ReduceOp::ALL
        .iter()
        .copied()
        .find(|op| op.name() == name)
        .ok_or_else(|| a.vm.new_attribute_error(format!("no reduction {name}")))?;
    let dim = a.int(2)? as isize;
    let (values, indices) = a
        .tensor(1)?
        .reduction_with_indices(op, Some(dim), a.bool(3)?)
        .or_raise(a.vm)?;
    let indices = match indices {
        Some(i) => wrap(a.vm, i),
        None => a.vm.ctx.none(),
    };
    Ok(a.vm.ctx.new_tuple(vec![wrap(a.vm, values), indices]).into())
}

/// `_to(t, device, dtype)`: PyTorch's `Tensor.to`, the dtype first when both change.
fn to(a: &Args) -> PyResult {
    let mut t = a.tensor(0)?;
    let original = t.clone();
    if let Some(name) = a.opt_str(2)? {
        t = t.to_dtype(dtype_named(a, &name)?).or_raise(a.vm)?;
    }
    if let Some(device) = a.opt_str(1)? {
        t = t
            .to_device(Device::parse(&device).or_raise(a.vm)?)
            .or_raise(a.vm)?;
    }
    if t.same_tensor(&original) {
        // Nothing changed: PyTorch returns the tensor itself.
        return Ok(a.get(0)?.clone());
    }
    Ok(wrap(a.vm, t))
}

/// `_where(cond, a, b)`: either of `a` and `b` may be a number.
fn where_(a: &Args) -> PyResult {
    let cond = a.tensor(0)?;
    match (tensor_of(a.get(1)?), tensor_of(a.get(2)?)) {
        (Some(x), Some(y)) => one(a, Tensor::where_(&cond, &x, &y)),
        (Some(x), None) => one(a, Tensor::where_scalar(&cond, &x, a.scalar(2)?, true)),
        (None, Some(y)) => one(a, Tensor::where_scalar(&cond, &y, a.scalar(1)?, false)),
        (None, None) => Err(a.vm.new_type_error("where(): give at least one tensor")),
    }
}

/// `_inplace(op, t, other)`: `t += other` and its kin, `other` a tensor or a number.
fn inplace(a: &Args) -> PyResult {
    let op = a.str(0)?;
    let t = a.tensor(1)?;
    let result = match (tensor_of(a.get(2)?), op.as_str()) {
        (Some(o), "add") => t.add_(&o),
        (Some(o), "sub") => t.sub_(&o),
        (Some(o), "mul") => t.mul_(&o),
        (Some(o), "div") => t.div_(&o),
        (None, "add") => t.add_scalar_(a.scalar(2)?),
        (None, "sub") => t.sub_scalar_(a.scalar(2)?),
        (None, "mul") => t.mul_scalar_(a.scalar(2)?),
        (None, "div") => t.div_scalar_(a.scalar(2)?),
        _ => return Err(a.vm.new_value_error(format!("no in-place op {op}_"))),
    };
    result.or_raise(a.vm)?;
    Ok(a.get(1)?.clone())
}

/// `_unary_(name, t, min, max)`: an elementwise function written into `t` (`clamp_` takes the
/// bounds, the others ignore them).
fn unary_inplace(a: &Args) -> PyResult {
    use torchlet_core::device::UnaryOp;
    let name = a.str(0)?;
    let op = match name.as_str() {
        "clamp" => UnaryOp::Clamp {
            min: a.opt_float(2)?,
            max: a.opt_float(3)?,
        },
        "erfinv" => UnaryOp::Erfinv,
        "exp" => UnaryOp::Exp,
        "log" => UnaryOp::Log,
        "sqrt" => UnaryOp::Sqrt,
        "rsqrt" => UnaryOp::Rsqrt,
        "abs" => UnaryOp::Abs,
        "neg" => UnaryOp::Neg,
        "sigmoid" => UnaryOp::Sigmoid,
        "tanh" => UnaryOp::Tanh,
        other => return Err(a.vm.new_value_error(format!("no in-place op {other}_"))),
    };
    a.tensor(1)?.unary_(op, &name).or_raise(a.vm)?;
    Ok(a.get(1)?.clone())
}

/// `_activation(name, t, p0, p1)`: the activations with parameters and rounding
/// (`crates/core/src/tensor/activations.rs`).
fn activation(a: &Args) -> PyResult {
    let t = a.tensor(1)?;
    let result = match a.str(0)?.as_str() {
        "leaky_relu" => t.leaky_relu(a.float(2)?),
        "elu" => t.elu(a.float(2)?),
        "softplus" => t.softplus(a.float(2)?, a.float(3)?),
        "mish" => t.mish(),
        "hardswish" => t.hardswish(),
        "floor" => t.floor(),
        "ceil" => t.ceil(),
        "round" => t.round(),
        "trunc" => t.trunc(),
        other => return Err(a.vm.new_value_error(format!("no activation {other}"))),
    };
    one(a, result)
}

/// `_softmax(x, dim, dtype)`/`_log_softmax`: with PyTorch's optional result dtype (its name).
fn softmax(a: &Args, log: bool) -> PyResult {
    let dtype = match a.opt_str(2)? {
        Some(name) => Some(dtype_named(a, &name)?),
        None => None,
    };
    one(a, a.tensor(0)?.softmax_as(a.int(1)? as isize, log, dtype))
}
