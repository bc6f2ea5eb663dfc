//! The `Tensor` type in scripts: properties, methods, indexing, printing.
use std::any::TypeId;

use rhai::{Array, Dynamic, Engine, Map, FLOAT, INT};

use super::convert::{
    device_of, dtype_of, dynamic_of_scalar, isize_list, scalar_of, shape_array, to_list, OrRaise,
    Res,
};
use super::creation::MAX_VARIADIC_DIMS;
use super::errors::{type_error, value_error};
use crate::device::Device;
use crate::tensor::{DType, Scalar, Tensor, UNARY_METHODS};

type Unary = fn(&Tensor) -> crate::tensor::Result<Tensor>;

/// Register the `Tensor` type and everything callable on it.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_type_with_name::<Tensor>("Tensor");
    engine.register_fn("to_string", |t: &mut Tensor| t.to_string());
    engine.register_fn("to_debug", |t: &mut Tensor| t.to_string());
    register_properties(engine);
    register_moves(engine);
    register_inspection(engine);
    register_math(engine);
    register_shape_ops(engine);
    register_reductions(engine);
    register_in_place(engine);
    register_autograd(engine);
}

fn register_properties(engine: &mut Engine) {
    engine
        .register_get("shape", |t: &mut Tensor| shape_array(&t.shape()))
        .register_get("dtype", |t: &mut Tensor| t.dtype().name().to_string())
        .register_get("device", |t: &mut Tensor| t.device().to_string())
        .register_get("is_cuda", |t: &mut Tensor| {
            matches!(t.device(), Device::Cuda(_))
        })
        .register_get("nbytes", |t: &mut Tensor| t.nbytes() as INT)
        .register_get("is_leaf", |t: &mut Tensor| t.is_leaf())
        .register_get("requires_grad", |t: &mut Tensor| t.requires_grad())
        .register_set("requires_grad", |t: &mut Tensor, flag: bool| {
            t.set_requires_grad(flag).or_raise()
        })
        .register_get("grad", |t: &mut Tensor| match t.grad() {
            Some(g) => Dynamic::from(g),
            None => Dynamic::UNIT,
        })
        .register_set("grad", |t: &mut Tensor, grad: Dynamic| {
            if grad.is_unit() {
                t.set_grad(None).or_raise()
            } else if let Some(g) = grad.read_lock::<Tensor>() {
                t.set_grad(Some(g.clone())).or_raise()
            } else {
                Err(type_error(format!(
                    "assigned grad expected to be a Tensor or (), not {}",
                    grad.type_name()
                )))
            }
        })
        .register_get("grad_fn", |t: &mut Tensor| match t.grad_fn_name() {
            Some(name) => Dynamic::from(name),
            None => Dynamic::UNIT,
        });
}

fn register_moves(engine: &mut Engine) {
    engine
        .register_fn("cuda", |t: &mut Tensor| {
            let index = crate::device::current_device();
            t.to_device(Device::Cuda(index)).or_raise()
        })
        .register_fn("cuda", |t: &mut Tensor, device: Dynamic| {
            match device_of(&device)? {
                cuda @ Device::Cuda(_) => t.to_device(cuda).or_raise(),
                Device::Cpu => Err(value_error("Invalid device, must be cuda device")),
            }
        })
        .register_fn("cpu", |t: &mut Tensor| t.to_device(Device::Cpu).or_raise())
        .register_fn("to", |t: &mut Tensor, target: Dynamic| move_to(t, &target))
        .register_fn("to", |t: &mut Tensor, opts: Map| {
            let mut out = t.clone();
            for (key, value) in &opts {
                out = match key.as_str() {
                    "device" => out.to_device(device_of(value)?).or_raise()?,
                    "dtype" => out.to_dtype(dtype_of(value)?).or_raise()?,
                    other => {
                        return Err(type_error(format!(
                            "to(): unexpected keyword '{other}'; allowed: device, dtype"
                        )))
                    }
                };
            }
            Ok(out)
        });
    let casts: [(&str, DType); 5] = [
        ("half", DType::F16),
        ("float", DType::F32),
        ("double", DType::F64),
        ("bfloat16", DType::BF16),
        ("long", DType::I64),
    ];
    for (name, dtype) in casts {
        engine.register_fn(name, move |t: &mut Tensor| t.to_dtype(dtype).or_raise());
    }
}

/// `t.to(x)`: a string names a dtype or a device; an int is a CUDA index.
fn move_to(t: &Tensor, target: &Dynamic) -> Res<Tensor> {
    if let Some(text) = target.read_lock::<rhai::ImmutableString>() {
        if let Some(dtype) = DType::parse(&text) {
            return t.to_dtype(dtype).or_raise();
        }
    }
    if target.is_map() {
        return Err(type_error("to(#{…}) takes keys device and dtype"));
    }
    t.to_device(device_of(target)?).or_raise()
}

fn register_inspection(engine: &mut Engine) {
    engine
        .register_fn("size", |t: &mut Tensor| shape_array(&t.shape()))
        .register_fn("size", |t: &mut Tensor, dim: INT| -> Res<INT> {
            let shape = t.shape();
            let d = wrap_dim(dim, shape.len())?;
            Ok(shape[d] as INT)
        })
        .register_fn("dim", |t: &mut Tensor| t.dim() as INT)
        .register_fn("numel", |t: &mut Tensor| t.numel() as INT)
        .register_fn("element_size", |t: &mut Tensor| t.element_size() as INT)
        .register_fn("data_ptr", |t: &mut Tensor| t.data_ptr() as INT)
        .register_fn("item", |t: &mut Tensor| {
            t.item().map(dynamic_of_scalar).or_raise()
        })
        .register_fn("tolist", |t: &mut Tensor| to_list(t))
        .register_indexer_get(|t: &mut Tensor, i: INT| t.index(i as isize).or_raise());
}

/// A possibly negative dim as an index into `rank` dims, with PyTorch's message when out of range.
fn wrap_dim(dim: INT, rank: usize) -> Res<usize> {
    let r = rank.max(1) as INT;
    if dim < -r || dim >= r {
        return Err(super::errors::raise(
            "IndexError",
            format!(
                "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
                -r,
                r - 1
            ),
        ));
    }
    Ok(if dim < 0 { dim + r } else { dim } as usize)
}

fn register_math(engine: &mut Engine) {
    let unary: [(&str, Unary); 5] = [
        ("t", Tensor::t),
        ("contiguous", Tensor::contiguous),
        ("clone", Tensor::clone_tensor),
        ("detach", Tensor::detach),
        ("flatten", Tensor::flatten),
    ];
    for (name, op) in unary {
        engine.register_fn(name, move |t: &mut Tensor| op(t).or_raise());
    }
    register_elementwise(engine);
    for name in ["matmul", "mm"] {
        engine.register_fn(name, |a: &mut Tensor, b: Tensor| a.matmul(&b).or_raise());
    }
    engine
        .register_fn("pow", |t: &mut Tensor, e: Tensor| t.pow(&e).or_raise())
        .register_fn("pow", |t: &mut Tensor, e: FLOAT| t.pow_scalar(e).or_raise())
        .register_fn("pow", |t: &mut Tensor, e: INT| {
            t.pow_scalar(e as f64).or_raise()
        })
        .register_fn("clamp", |t: &mut Tensor, min: Dynamic, max: Dynamic| {
            t.clamp(bound(&min)?, bound(&max)?).or_raise()
        })
        .register_fn("softmax", |t: &mut Tensor, dim: INT| {
            t.softmax(dim as isize).or_raise()
        })
        .register_fn("log_softmax", |t: &mut Tensor, dim: INT| {
            t.log_softmax(dim as isize).or_raise()
        })
        .register_fn("mse_loss", |a: &mut Tensor, b: Tensor| {
            a.mse_loss(&b).or_raise()
        })
        .register_fn("cross_entropy", |a: &mut Tensor, b: Tensor| {
            a.cross_entropy(&b).or_raise()
        });
}

/// Every elementwise method of `tensor::UNARY_METHODS`, as `t.name()` and `name(t)`, and with
/// its keyword as `name(t, #{keyword: "value"})`.
fn register_elementwise(engine: &mut Engine) {
    for method in UNARY_METHODS {
        let call = method.call;
        let default = method.keyword.map_or("", |(_, value)| value);
        engine.register_fn(method.name, move |t: &mut Tensor| {
            call(t, default).or_raise()
        });
        if let Some((key, _)) = method.keyword {
            let name = method.name;
            engine.register_fn(name, move |t: &mut Tensor, options: Map| {
                let value = keyword_string(name, key, &options)?.unwrap_or_else(|| default.into());
                call(t, &value).or_raise()
            });
        }
    }
}

/// The string value of keyword `key` in `options`, refusing any other keyword or a non-string.
fn keyword_string(name: &str, key: &str, options: &Map) -> Res<Option<String>> {
    if let Some(other) = options.keys().find(|k| k.as_str() != key) {
        return Err(type_error(format!(
            "{name}(): unexpected keyword '{other}'; allowed: {key}"
        )));
    }
    match options.get(key) {
        None => Ok(None),
        Some(v) if v.is_string() => Ok(Some(v.clone().cast::<rhai::ImmutableString>().to_string())),
        Some(v) => Err(type_error(format!(
            "{name}(): argument '{key}' must be str, not {}",
            v.type_name()
        ))),
    }
}

/// A `clamp` bound: a number, or `()` for none.
fn bound(value: &Dynamic) -> Res<Option<f64>> {
    if value.is_unit() {
        Ok(None)
    } else {
        Ok(Some(scalar_of(value)?.to_f64()))
    }
}

fn register_shape_ops(engine: &mut Engine) {
    engine
        .register_fn("transpose", |t: &mut Tensor, d0: INT, d1: INT| {
            t.transpose(d0 as isize, d1 as isize).or_raise()
        })
        .register_fn("unsqueeze", |t: &mut Tensor, d: INT| {
            t.unsqueeze(d as isize).or_raise()
        })
        .register_fn("squeeze", |t: &mut Tensor| t.squeeze(None).or_raise())
        .register_fn("squeeze", |t: &mut Tensor, d: INT| {
            t.squeeze(Some(d as isize)).or_raise()
        })
        .register_fn(
            "narrow",
            |t: &mut Tensor, dim: INT, start: INT, len: INT| {
                let len = usize::try_from(len)
                    .map_err(|_| value_error("narrow(): length must be 0 or more"))?;
                t.narrow(dim as isize, start as isize, len).or_raise()
            },
        );
    type ShapeOp = fn(&Tensor, &[isize]) -> crate::tensor::Result<Tensor>;
    let shape_ops: [(&str, ShapeOp); 3] = [
        ("reshape", |t, dims| t.reshape(dims)),
        ("view", |t, dims| t.view(dims)),
        ("permute", |t, dims| t.permute(dims)),
    ];
    for (name, op) in shape_ops {
        engine.register_fn(name, move |t: &mut Tensor, dims: Array| {
            op(t, &isize_list(&dims)?).or_raise()
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
                op(&t, &dims).or_raise()
            });
        }
    }
}

fn register_reductions(engine: &mut Engine) {
    type Reduce = fn(&Tensor, Option<isize>, bool) -> crate::tensor::Result<Tensor>;
    let reductions: [(&str, Reduce); 5] = [
        ("sum", Tensor::sum),
        ("mean", Tensor::mean),
        ("max", Tensor::max),
        ("min", Tensor::min),
        ("argmax", Tensor::argmax),
    ];
    for (name, op) in reductions {
        engine
            .register_fn(name, move |t: &mut Tensor| op(t, None, false).or_raise())
            .register_fn(name, move |t: &mut Tensor, dim: INT| {
                op(t, Some(dim as isize), false).or_raise()
            })
            .register_fn(name, move |t: &mut Tensor, dim: INT, keepdim: bool| {
                op(t, Some(dim as isize), keepdim).or_raise()
            });
    }
}

fn register_in_place(engine: &mut Engine) {
    engine
        .register_fn("add_", |t: &mut Tensor, o: Tensor| t.add_(&o).or_raise())
        .register_fn("sub_", |t: &mut Tensor, o: Tensor| t.sub_(&o).or_raise())
        .register_fn("mul_", |t: &mut Tensor, o: Tensor| t.mul_(&o).or_raise())
        .register_fn("zero_", |t: &mut Tensor| t.zero_().or_raise());
    for ty in [
        TypeId::of::<INT>(),
        TypeId::of::<FLOAT>(),
        TypeId::of::<bool>(),
    ] {
        engine
            .register_raw_fn("add_", [TypeId::of::<Tensor>(), ty], |_, args| {
                in_place_scalar(args, |t, s| t.add_scalar_(s))
            })
            .register_raw_fn("sub_", [TypeId::of::<Tensor>(), ty], |_, args| {
                in_place_scalar(args, |t, s| t.add_scalar_(negate(s)))
            })
            .register_raw_fn("mul_", [TypeId::of::<Tensor>(), ty], |_, args| {
                in_place_scalar(args, |t, s| t.mul_scalar_(s))
            })
            .register_raw_fn("fill_", [TypeId::of::<Tensor>(), ty], |_, args| {
                in_place_scalar(args, |t, s| t.fill_(s))
            });
    }
}

fn negate(s: Scalar) -> Scalar {
    match s {
        Scalar::Float(f) => Scalar::Float(-f),
        Scalar::Int(i) => Scalar::Int(-i),
        Scalar::Bool(b) => Scalar::Int(-(b as i64)),
    }
}

fn in_place_scalar(
    args: &mut [&mut Dynamic],
    op: impl Fn(&Tensor, Scalar) -> crate::tensor::Result<Tensor>,
) -> Res<Tensor> {
    let scalar = scalar_of(args[1])?;
    let t = args[0]
        .read_lock::<Tensor>()
        .expect("typed as Tensor")
        .clone();
    op(&t, scalar).or_raise()
}

fn register_autograd(engine: &mut Engine) {
    engine
        .register_fn("requires_grad_", |t: &mut Tensor| -> Res<Tensor> {
            t.set_requires_grad(true).or_raise()?;
            Ok(t.clone())
        })
        .register_fn(
            "requires_grad_",
            |t: &mut Tensor, flag: bool| -> Res<Tensor> {
                t.set_requires_grad(flag).or_raise()?;
                Ok(t.clone())
            },
        )
        .register_fn("backward", |t: &mut Tensor| t.backward(false).or_raise())
        .register_fn("backward", |t: &mut Tensor, opts: Map| {
            let mut retain = false;
            for (key, value) in &opts {
                match key.as_str() {
                    "retain_graph" => {
                        retain = value
                            .as_bool()
                            .map_err(|_| type_error("retain_graph must be a bool"))?
                    }
                    other => {
                        return Err(type_error(format!(
                            "backward(): unexpected keyword '{other}'; allowed: retain_graph"
                        )))
                    }
                }
            }
            t.backward(retain).or_raise()
        })
        .register_fn("is_grad_enabled", crate::autograd::is_grad_enabled);
}
