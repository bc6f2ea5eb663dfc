//! Creation functions: `tensor`, `zeros`/`ones`/`empty`/`rand`/`randn`, `full`, `arange`, `linspace`, `eye`, `*_like`.
use super::documented::Documented;
use std::any::TypeId;

use rhai::{Array, Dynamic, Engine, Map, INT};

use super::convert::{
    nested_values, options_of, scalar_of, shape_of_array, shape_of_ints, OrRaise, Res,
};
use super::errors::type_error;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

/// The most separate int dims a creation function or `view`/`reshape` takes: `zeros(2, 3, 4, 5, 6, 7)`.
pub const MAX_VARIADIC_DIMS: usize = 6;

type Maker = fn(&[usize], &TensorOptions) -> torchlet_core::tensor::Result<Tensor>;

/// Register every creation function.
pub(crate) fn register(engine: &mut Engine) {
    let makers: [(&str, &str, Maker); 5] = [
        (
            "zeros",
            "zeros(d0, d1, …) or zeros(shape_array[, opts]) — a tensor filled with 0",
            Tensor::zeros,
        ),
        (
            "ones",
            "ones(d0, d1, …) or ones(shape_array[, opts]) — a tensor filled with 1",
            Tensor::ones,
        ),
        (
            "empty",
            "empty(d0, d1, …) or empty(shape_array[, opts]) — an uninitialised tensor",
            Tensor::empty,
        ),
        (
            "rand",
            "rand(d0, d1, …) or rand(shape_array[, opts]) — uniform samples in [0, 1)",
            Tensor::rand,
        ),
        (
            "randn",
            "randn(d0, d1, …) or randn(shape_array[, opts]) — standard normal samples",
            Tensor::randn,
        ),
    ];
    for (name, doc, make) in makers {
        register_shaped(engine, name, doc, make);
    }

    engine.register_doc("tensor", &["tensor(nested_array[, opts]) — a tensor holding these values; opts: #{dtype, device, requires_grad}"], |data: Dynamic| make_tensor(&data, &Map::new()));
    engine.register_fn("tensor", |data: Dynamic, opts: Map| {
        make_tensor(&data, &opts)
    });

    engine.register_doc(
        "full",
        &["full(shape_array, value[, opts]) — a tensor filled with value"],
        |shape: Array, value: Dynamic| make_full(&shape, &value, &Map::new()),
    );
    engine.register_fn("full", |shape: Array, value: Dynamic, opts: Map| {
        make_full(&shape, &value, &opts)
    });

    engine.register_doc("arange", &["arange(end) or arange(start, end[, step][, opts]) — evenly spaced values in [start, end)"], |end: Dynamic| make_arange(&[end]));
    for arity in 2..=4 {
        engine.register_raw_fn("arange", vec![TypeId::of::<Dynamic>(); arity], |_, args| {
            let args: Vec<Dynamic> = args.iter().map(|a| (**a).clone()).collect();
            make_arange(&args)
        });
    }
    engine.register_doc(
        "linspace",
        &["linspace(start, end, steps[, opts]) — steps values from start to end inclusive"],
        |start: Dynamic, end: Dynamic, steps: Dynamic| make_linspace(&[start, end, steps]),
    );
    for arity in 4..=4 {
        engine.register_raw_fn(
            "linspace",
            vec![TypeId::of::<Dynamic>(); arity],
            |_, args| {
                let args: Vec<Dynamic> = args.iter().map(|a| (**a).clone()).collect();
                make_linspace(&args)
            },
        );
    }
    engine.register_doc(
        "eye",
        &["eye(n[, m][, opts]) — an identity matrix"],
        |n: Dynamic| make_eye(&[n]),
    );
    for arity in 2..=3 {
        engine.register_raw_fn("eye", vec![TypeId::of::<Dynamic>(); arity], |_, args| {
            let args: Vec<Dynamic> = args.iter().map(|a| (**a).clone()).collect();
            make_eye(&args)
        });
    }

    engine.register_doc(
        "zeros_like",
        &["zeros_like(t) — zeros with t's shape, dtype and device"],
        |t: &mut Tensor| t.zeros_like().or_raise(),
    );
    engine.register_doc(
        "ones_like",
        &["ones_like(t) — ones with t's shape, dtype and device"],
        |t: &mut Tensor| t.ones_like().or_raise(),
    );
    engine.register_doc(
        "empty_like",
        &["empty_like(t) — uninitialised, with t's shape, dtype and device"],
        |t: &mut Tensor| t.empty_like().or_raise(),
    );
    engine.register_doc(
        "randn_like",
        &["randn_like(t) — normal samples with t's shape, dtype and device"],
        |t: &mut Tensor| t.randn_like().or_raise(),
    );
    engine.register_doc(
        "manual_seed",
        &["manual_seed(n) — seed the random generators, for repeatable runs"],
        |seed: INT| torchlet_core::tensor::manual_seed(seed as u64),
    );
}

/// `name(d0, …)`, `name(d0, …, opts)`, `name(shape)` and `name(shape, opts)`.
fn register_shaped(engine: &mut Engine, name: &'static str, doc: &str, make: Maker) {
    for arity in 1..=MAX_VARIADIC_DIMS {
        engine.register_raw_fn(name, vec![TypeId::of::<INT>(); arity], move |_, args| {
            let dims: Vec<INT> = args.iter().map(|a| a.as_int().unwrap_or(0)).collect();
            make(&shape_of_ints(&dims)?, &TensorOptions::default()).or_raise()
        });
        let mut types = vec![TypeId::of::<INT>(); arity];
        types.push(TypeId::of::<Map>());
        engine.register_raw_fn(name, types, move |_, args| {
            let (opts, dims) = args.split_last().expect("arity is at least 2");
            let dims: Vec<INT> = dims.iter().map(|a| a.as_int().unwrap_or(0)).collect();
            let opts = options_of(&opts.clone_cast::<Map>(), TensorOptions::default())?;
            make(&shape_of_ints(&dims)?, &opts).or_raise()
        });
    }
    engine.register_doc(name, &[doc], move |shape: Array| {
        make(&shape_of_array(&shape)?, &TensorOptions::default()).or_raise()
    });
    engine.register_fn(name, move |shape: Array, opts: Map| {
        let opts = options_of(&opts, TensorOptions::default())?;
        make(&shape_of_array(&shape)?, &opts).or_raise()
    });
}

/// The dtype PyTorch infers from Python numbers: any float → float32, all bools → bool, else int64.
fn inferred_dtype(values: &[Scalar]) -> DType {
    if values.iter().any(|v| matches!(v, Scalar::Float(_))) {
        DType::F32
    } else if !values.is_empty() && values.iter().all(|v| matches!(v, Scalar::Bool(_))) {
        DType::Bool
    } else if values.is_empty() {
        DType::F32
    } else {
        DType::I64
    }
}

fn with_dtype(dtype: DType) -> TensorOptions {
    TensorOptions {
        dtype,
        ..TensorOptions::default()
    }
}

fn make_tensor(data: &Dynamic, opts: &Map) -> Res<Tensor> {
    if let Some(t) = data.read_lock::<Tensor>() {
        // tensor(t) copies, as PyTorch's torch.tensor(t) does (with a warning there).
        return t.clone_tensor().or_raise();
    }
    let (values, shape) = nested_values(data)?;
    let opts = options_of(opts, with_dtype(inferred_dtype(&values)))?;
    Tensor::from_values(values, shape, &opts).or_raise()
}

fn make_full(shape: &Array, value: &Dynamic, opts: &Map) -> Res<Tensor> {
    let value = scalar_of(value)?;
    let opts = options_of(opts, with_dtype(inferred_dtype(&[value])))?;
    Tensor::full(&shape_of_array(shape)?, value, &opts).or_raise()
}

/// Split a trailing options map off positional arguments.
fn split_opts(args: &[Dynamic]) -> Res<(Vec<Dynamic>, Map)> {
    match args.split_last() {
        Some((last, rest)) if last.is_map() => Ok((rest.to_vec(), last.clone_cast::<Map>())),
        _ => Ok((args.to_vec(), Map::new())),
    }
}

fn make_arange(args: &[Dynamic]) -> Res<Tensor> {
    let (numbers, opts) = split_opts(args)?;
    let numbers: Vec<Scalar> = numbers.iter().map(scalar_of).collect::<Res<_>>()?;
    let (start, end, step) = match numbers.as_slice() {
        [end] => (Scalar::Int(0), *end, Scalar::Int(1)),
        [start, end] => (*start, *end, Scalar::Int(1)),
        [start, end, step] => (*start, *end, *step),
        _ => return Err(type_error("arange(end), arange(start, end) or arange(start, end, step), each with optional #{dtype, device}")),
    };
    let all_ints = [start, end, step]
        .iter()
        .all(|v| !matches!(v, Scalar::Float(_)));
    let dtype = if all_ints { DType::I64 } else { DType::F32 };
    let opts = options_of(&opts, with_dtype(dtype))?;
    Tensor::arange(start.to_f64(), end.to_f64(), step.to_f64(), &opts).or_raise()
}

fn make_linspace(args: &[Dynamic]) -> Res<Tensor> {
    let (numbers, opts) = split_opts(args)?;
    let [start, end, steps] = numbers.as_slice() else {
        return Err(type_error("linspace(start, end, steps[, opts])"));
    };
    let steps = steps
        .as_int()
        .ok()
        .and_then(|s| usize::try_from(s).ok())
        .ok_or_else(|| type_error("linspace: steps must be an int of 0 or more"))?;
    let opts = options_of(&opts, TensorOptions::default())?;
    Tensor::linspace(
        scalar_of(start)?.to_f64(),
        scalar_of(end)?.to_f64(),
        steps,
        &opts,
    )
    .or_raise()
}

fn make_eye(args: &[Dynamic]) -> Res<Tensor> {
    let (numbers, opts) = split_opts(args)?;
    let sizes: Vec<usize> = numbers
        .iter()
        .map(|v| {
            v.as_int()
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| type_error("eye(n[, m][, opts]): sizes are ints of 0 or more"))
        })
        .collect::<Res<_>>()?;
    let (n, m) = match sizes.as_slice() {
        [n] => (*n, None),
        [n, m] => (*n, Some(*m)),
        _ => return Err(type_error("eye(n[, m][, opts])")),
    };
    let opts = options_of(&opts, TensorOptions::default())?;
    Tensor::eye(n, m, &opts).or_raise()
}
