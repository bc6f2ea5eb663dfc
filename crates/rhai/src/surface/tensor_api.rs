//! The `Tensor` type in scripts: properties, methods, indexing, printing.
use super::documented::Documented;
use std::any::TypeId;

use rhai::{Array, Dynamic, Engine, Map, NativeCallContext, FLOAT, INT};

use super::checkpoint::with_call_context;
use super::convert::{
    device_of, dtype_of, dynamic_of_scalar, isize_list, scalar_of, shape_array, to_list, OrRaise,
    Res,
};
use super::creation::MAX_VARIADIC_DIMS;
use super::errors::{type_error, value_error};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, REDUCE_METHODS, UNARY_METHODS};

type Unary = fn(&Tensor) -> torchlet_core::tensor::Result<Tensor>;

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
        .register_get_doc(
            "shape",
            "t.shape — the shape, as an array",
            |t: &mut Tensor| shape_array(&t.shape()),
        )
        .register_get_doc(
            "dtype",
            "t.dtype — the element type, e.g. \"float32\"",
            |t: &mut Tensor| t.dtype().name().to_string(),
        )
        .register_get_doc(
            "device",
            "t.device — where the data lives, e.g. \"cuda:0\"",
            |t: &mut Tensor| t.device().to_string(),
        )
        .register_get_doc(
            "is_cuda",
            "t.is_cuda — whether the data is on a GPU",
            |t: &mut Tensor| matches!(t.device(), Device::Cuda(_)),
        )
        .register_get_doc(
            "nbytes",
            "t.nbytes — bytes of the elements (numel × element_size)",
            |t: &mut Tensor| t.nbytes() as INT,
        )
        .register_get_doc(
            "is_leaf",
            "t.is_leaf — whether t was made by the user rather than by a recorded op",
            |t: &mut Tensor| t.is_leaf(),
        )
        .register_get_doc(
            "requires_grad",
            "t.requires_grad — whether gradients are recorded for t (settable)",
            |t: &mut Tensor| t.requires_grad(),
        )
        .register_set("requires_grad", |t: &mut Tensor, flag: bool| {
            t.set_requires_grad(flag).or_raise()
        })
        .register_get_doc(
            "grad",
            "t.grad — the accumulated gradient, or (); set to () to free it",
            |t: &mut Tensor| match t.grad() {
                Some(g) => Dynamic::from(g),
                None => Dynamic::UNIT,
            },
        )
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
        .register_get_doc(
            "grad_fn",
            "t.grad_fn — name of the graph node that made t, or ()",
            |t: &mut Tensor| match t.grad_fn_name() {
                Some(name) => Dynamic::from(name),
                None => Dynamic::UNIT,
            },
        );
}

fn register_moves(engine: &mut Engine) {
    engine
        .register_doc("cuda", &["t.cuda([n]) — a copy on cuda:n (the current device, cuda::current_device(), by default)"], |t: &mut Tensor| {
            let index = torchlet_core::device::current_device();
            t.to_device(Device::Cuda(index)).or_raise()
        })
        .register_fn("cuda", |t: &mut Tensor, device: Dynamic| {
            match device_of(&device)? {
                cuda @ Device::Cuda(_) => t.to_device(cuda).or_raise(),
                Device::Cpu | Device::Meta => Err(value_error("Invalid device, must be cuda device")),
            }
        })
        .register_doc("cpu", &["t.cpu() — a copy in host memory"], |t: &mut Tensor| t.to_device(Device::Cpu).or_raise())
        .register_doc("to", &["t.to(\"cuda:0\" | \"float16\" | #{device, dtype}) — a copy on that device or of that dtype"], |t: &mut Tensor, target: Dynamic| move_to(t, &target))
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
    let casts: [(&str, &str, DType); 5] = [
        ("half", "t.half() — a float16 copy", DType::F16),
        ("float", "t.float() — a float32 copy", DType::F32),
        ("double", "t.double() — a float64 copy", DType::F64),
        ("bfloat16", "t.bfloat16() — a bfloat16 copy", DType::BF16),
        ("long", "t.long() — an int64 copy", DType::I64),
    ];
    for (name, doc, dtype) in casts {
        engine.register_doc(name, &[doc], move |t: &mut Tensor| {
            t.to_dtype(dtype).or_raise()
        });
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
        .register_doc(
            "size",
            &["t.size([dim]) — the shape as an array, or one dimension's length"],
            |t: &mut Tensor| shape_array(&t.shape()),
        )
        .register_fn("size", |t: &mut Tensor, dim: INT| one_dim(&t.shape(), dim))
        .register_doc(
            "dim",
            &["t.dim() — the number of dimensions"],
            |t: &mut Tensor| t.dim() as INT,
        )
        .register_doc(
            "numel",
            &["t.numel() — the number of elements"],
            |t: &mut Tensor| t.numel() as INT,
        )
        .register_doc(
            "element_size",
            &["t.element_size() — bytes per element"],
            |t: &mut Tensor| t.element_size() as INT,
        )
        .register_doc(
            "stride",
            &["t.stride([dim]) — elements to step in each dimension, or in one (views share memory)"],
            |t: &mut Tensor| shape_array(&t.stride()),
        )
        .register_fn("stride", |t: &mut Tensor, dim: INT| one_dim(&t.stride(), dim))
        .register_doc(
            "is_contiguous",
            &["t.is_contiguous() — whether the elements lie dense in row-major order"],
            |t: &mut Tensor| t.is_contiguous(),
        )
        .register_doc(
            "storage_offset",
            &["t.storage_offset() — elements from the start of the memory t views to its first"],
            |t: &mut Tensor| t.storage_offset() as INT,
        )
        .register_doc(
            "data_ptr",
            &["t.data_ptr() — address of the first element"],
            |t: &mut Tensor| t.data_ptr() as INT,
        )
        .register_doc(
            "item",
            &["t.item() — the value of a one-element tensor"],
            |t: &mut Tensor| t.item().map(dynamic_of_scalar).or_raise(),
        )
        .register_doc(
            "tolist",
            &["t.tolist() — the values as (nested) arrays"],
            |t: &mut Tensor| to_list(t),
        )
        .register_indexer_get(|t: &mut Tensor, i: INT| t.index(i as isize).or_raise());
}

/// The entry of `per_dim` (a shape or strides) for a possibly negative `dim`.
fn one_dim(per_dim: &[usize], dim: INT) -> Res<INT> {
    Ok(per_dim[wrap_dim(dim, per_dim.len())?] as INT)
}

/// A possibly negative dim as an index into `rank` dims, with PyTorch's message when out of range
/// (`size` and `stride` take no dim of a 0-d tensor, where reductions would take 0 and -1).
fn wrap_dim(dim: INT, rank: usize) -> Res<usize> {
    if rank == 0 {
        return Err(super::errors::raise(
            "IndexError",
            format!("Dimension specified as {dim} but tensor has no dimensions"),
        ));
    }
    let r = rank as INT;
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
    let unary: [(&str, &[&str], Unary); 5] = [
        (
            "t",
            &["t.t() — transpose of a 2-D tensor (a view)"],
            Tensor::t,
        ),
        (
            "contiguous",
            &["t.contiguous() — a contiguous tensor with the same values"],
            Tensor::contiguous,
        ),
        (
            "clone",
            &["t.clone() — a copy with its own memory"],
            Tensor::clone_tensor,
        ),
        (
            "detach",
            &["t.detach() — the same memory, cut from the autograd graph"],
            Tensor::detach,
        ),
        (
            "flatten",
            &["t.flatten() — a 1-D tensor of all elements"],
            Tensor::flatten,
        ),
    ];
    for (name, docs, op) in unary {
        engine.register_doc(name, docs, move |t: &mut Tensor| op(t).or_raise());
    }
    register_elementwise(engine);
    let matmul = |a: &mut Tensor, b: Tensor| a.matmul(&b).or_raise();
    engine.register_doc(
        "matmul",
        &[
            "matmul(a, b) — matrix product (also a.matmul(b), a.mm(b))",
            "a.matmul(b) — matrix product",
        ],
        matmul,
    );
    engine.register_doc(
        "mm",
        &["a.mm(b) — matrix product of two 2-D tensors"],
        matmul,
    );
    engine
        .register_doc("clamp", &["t.clamp(min, max) — limit values to [min, max]; pass () for no bound"], |t: &mut Tensor, min: Dynamic, max: Dynamic| {
            t.clamp(bound(&min)?, bound(&max)?).or_raise()
        })
        .register_doc("softmax", &["t.softmax(dim) — softmax along dim"], |t: &mut Tensor, dim: INT| {
            t.softmax(dim as isize).or_raise()
        })
        .register_doc("log_softmax", &["t.log_softmax(dim) — log of softmax along dim"], |t: &mut Tensor, dim: INT| {
            t.log_softmax(dim as isize).or_raise()
        })
        .register_doc("mse_loss", &["mse_loss(input, target) — mean squared error"], |a: &mut Tensor, b: Tensor| {
            a.mse_loss(&b).or_raise()
        })
        .register_doc("cross_entropy", &["cross_entropy(logits, targets) — softmax cross-entropy; targets are int64 class indices"], |a: &mut Tensor, b: Tensor| {
            a.cross_entropy(&b, crate::surface::conv_api::IGNORE_INDEX).or_raise()
        });
}

/// Help lines an elementwise name carries besides its row's: `abs` also documents the number
/// function `abs(x)`, which is Rhai's own and has no registration of ours to hold it.
const ALSO_DOCUMENTS: &[(&str, &str)] = &[(
    "abs",
    "abs(x) — a number's absolute value (t.abs() for a tensor)",
)];

/// Every elementwise method of `tensor::UNARY_METHODS`, as `t.name()` and `name(t)`, and with
/// its keyword as `name(t, #{keyword: "value"})`; each spelling registers with the row's help line.
fn register_elementwise(engine: &mut Engine) {
    for method in UNARY_METHODS {
        let call = method.call;
        let default = method.keyword.map_or("", |(_, value)| value);
        let mut docs = vec![method.help];
        docs.extend(
            ALSO_DOCUMENTS
                .iter()
                .filter(|(name, _)| *name == method.name)
                .map(|(_, doc)| *doc),
        );
        engine.register_doc(method.name, &docs, move |t: &mut Tensor| {
            call(t, default).or_raise()
        });
        if let Some((key, _)) = method.keyword {
            let name = method.name;
            engine.register_doc(name, &[method.help], move |t: &mut Tensor, options: Map| {
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
        .register_doc(
            "transpose",
            &["t.transpose(d0, d1) — swap two dimensions (a view)"],
            |t: &mut Tensor, d0: INT, d1: INT| t.transpose(d0 as isize, d1 as isize).or_raise(),
        )
        .register_doc(
            "unsqueeze",
            &["t.unsqueeze(dim) — insert a dimension of size 1"],
            |t: &mut Tensor, d: INT| t.unsqueeze(d as isize).or_raise(),
        )
        .register_doc(
            "squeeze",
            &["t.squeeze([dim]) — remove dimensions of size 1"],
            |t: &mut Tensor| t.squeeze(None).or_raise(),
        )
        .register_fn("squeeze", |t: &mut Tensor, d: INT| {
            t.squeeze(Some(d as isize)).or_raise()
        })
        .register_doc(
            "narrow",
            &["t.narrow(dim, start, length) — a slice along dim (a view)"],
            |t: &mut Tensor, dim: INT, start: INT, len: INT| {
                let len = usize::try_from(len)
                    .map_err(|_| value_error("narrow(): length must be 0 or more"))?;
                t.narrow(dim as isize, start as isize, len).or_raise()
            },
        );
    type ShapeOp = fn(&Tensor, &[isize]) -> torchlet_core::tensor::Result<Tensor>;
    let shape_ops: [(&str, &str, ShapeOp); 3] = [
        (
            "reshape",
            "t.reshape(shape_array) or t.reshape(d0, d1, …) — same values, new shape",
            |t, dims| t.reshape(dims),
        ),
        (
            "view",
            "t.view(shape_array) or t.view(d0, d1, …) — a view with a new shape",
            |t, dims| t.view(dims),
        ),
        (
            "permute",
            "t.permute(dims_array) — reorder dimensions (a view)",
            |t, dims| t.permute(dims),
        ),
    ];
    for (name, doc, op) in shape_ops {
        engine.register_doc(name, &[doc], move |t: &mut Tensor, dims: Array| {
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

/// Every reduction of `tensor::REDUCE_METHODS`, as `t.name()`, `t.name(dim)` and
/// `t.name(dim, keepdim)` (and `name(t, …)`), documented from its row.
fn register_reductions(engine: &mut Engine) {
    for method in REDUCE_METHODS {
        let (name, op) = (method.name, method.call);
        engine
            .register_doc(name, &[method.help], move |t: &mut Tensor| {
                op(t, None, false).or_raise()
            })
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
        .register_doc(
            "add_",
            &["t.add_(other) — add in place (also t += other)"],
            |t: &mut Tensor, o: Tensor| t.add_(&o).or_raise(),
        )
        .register_doc(
            "sub_",
            &["t.sub_(other) — subtract in place (also t -= other)"],
            |t: &mut Tensor, o: Tensor| t.sub_(&o).or_raise(),
        )
        .register_doc(
            "mul_",
            &["t.mul_(other) — multiply in place (also t *= other)"],
            |t: &mut Tensor, o: Tensor| t.mul_(&o).or_raise(),
        )
        .register_doc(
            "zero_",
            &["t.zero_() — fill with 0 in place"],
            |t: &mut Tensor| t.zero_().or_raise(),
        );
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
    // After the loop, which registers `fill_(Tensor, int)` raw: this overload carries the help.
    engine.register_doc(
        "fill_",
        &["t.fill_(value) — fill with value in place"],
        |t: &mut Tensor, v: INT| t.fill_(Scalar::Int(v)).or_raise(),
    );
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
    op: impl Fn(&Tensor, Scalar) -> torchlet_core::tensor::Result<Tensor>,
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
        .register_doc(
            "requires_grad_",
            &["t.requires_grad_([flag]) — start (or stop) recording gradients for t"],
            |t: &mut Tensor| -> Res<Tensor> {
                t.set_requires_grad(true).or_raise()?;
                Ok(t.clone())
            },
        )
        .register_fn(
            "requires_grad_",
            |t: &mut Tensor, flag: bool| -> Res<Tensor> {
                t.set_requires_grad(flag).or_raise()?;
                Ok(t.clone())
            },
        )
        .register_doc(
            "backward",
            &["t.backward([#{retain_graph: true}]) — compute gradients into the leaves' .grad"],
            |ctx: NativeCallContext, t: &mut Tensor| {
                with_call_context(&ctx, || t.backward(false)).or_raise()
            },
        )
        .register_fn(
            "backward",
            |ctx: NativeCallContext, t: &mut Tensor, opts: Map| {
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
                with_call_context(&ctx, || t.backward(retain)).or_raise()
            },
        )
        .register_doc(
            "is_grad_enabled",
            &["is_grad_enabled() — whether operations record the autograd graph now"],
            torchlet_core::autograd::is_grad_enabled,
        );
}
