//! Script values ↔ tensor arguments: shapes, dims, numbers, devices, dtypes, option maps, nested arrays.
use rhai::{Array, Dynamic, EvalAltResult, Map, FLOAT, INT};

use super::errors::{raise, type_error, value_error};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorError, TensorOptions};

/// What every binding returns.
pub type Res<T> = Result<T, Box<EvalAltResult>>;

/// A tensor error as the script sees it: same kind, same message.
pub fn tensor_error(error: TensorError) -> Box<EvalAltResult> {
    raise(error.kind(), error.to_string())
}

/// `?` for tensor results inside bindings.
pub trait OrRaise<T> {
    /// Turn the tensor layer's error into a script error.
    fn or_raise(self) -> Res<T>;
}

impl<T> OrRaise<T> for torchlet_core::tensor::Result<T> {
    fn or_raise(self) -> Res<T> {
        self.map_err(tensor_error)
    }
}

/// One dimension's length; negative lengths are PyTorch's "negative dimension" error.
pub fn dim_len(value: INT) -> Res<usize> {
    usize::try_from(value).map_err(|_| {
        raise(
            "RuntimeError",
            format!("Trying to create tensor with negative dimension {value}: [{value}]"),
        )
    })
}

/// Lengths given as separate int arguments: `zeros(2, 3)`.
pub fn shape_of_ints(values: &[INT]) -> Res<Vec<usize>> {
    values.iter().map(|&v| dim_len(v)).collect()
}

/// A shape given as an array: `zeros([2, 3])`.
pub fn shape_of_array(array: &Array) -> Res<Vec<usize>> {
    array
        .iter()
        .map(|v| {
            v.as_int()
                .map_err(|t| type_error(format!("a shape holds ints, not {t}")))
                .and_then(dim_len)
        })
        .collect()
}

/// Signed dims (for `view`, `permute`, `reshape`): `-1` is allowed.
pub fn isize_list(array: &Array) -> Res<Vec<isize>> {
    array
        .iter()
        .map(|v| {
            v.as_int()
                .map(|i| i as isize)
                .map_err(|t| type_error(format!("expected a list of ints, found {t}")))
        })
        .collect()
}

/// A Python number from an int, float or bool.
pub fn scalar_of(value: &Dynamic) -> Res<Scalar> {
    if let Ok(i) = value.as_int() {
        Ok(Scalar::Int(i))
    } else if let Ok(f) = value.as_float() {
        Ok(Scalar::Float(f))
    } else if let Ok(b) = value.as_bool() {
        Ok(Scalar::Bool(b))
    } else {
        Err(type_error(format!(
            "expected a number (int, float or bool), found {}",
            value.type_name()
        )))
    }
}

/// A number back as a script value.
pub fn dynamic_of_scalar(value: Scalar) -> Dynamic {
    match value {
        Scalar::Float(f) => Dynamic::from_float(f as FLOAT),
        Scalar::Int(i) => Dynamic::from_int(i as INT),
        Scalar::Bool(b) => Dynamic::from_bool(b),
    }
}

/// A device from `n` (cuda:n), `"cpu"`, `"cuda"` or `"cuda:n"`.
pub fn device_of(value: &Dynamic) -> Res<Device> {
    if let Ok(i) = value.as_int() {
        return usize::try_from(i).map(Device::Cuda).map_err(|_| {
            value_error(format!(
                "Invalid device id {i}: a device index is 0 or more"
            ))
        });
    }
    match value.read_lock::<rhai::ImmutableString>() {
        Some(text) => Device::parse(&text).or_raise(),
        None => Err(type_error(format!(
            "a device is an int or a string like \"cuda:0\", not {}",
            value.type_name()
        ))),
    }
}

/// A dtype from its name (`"float16"`, also PyTorch's aliases that `DType::parse` knows).
pub fn dtype_of(value: &Dynamic) -> Res<DType> {
    match value.read_lock::<rhai::ImmutableString>() {
        Some(text) => DType::parse(&text).ok_or_else(|| {
            type_error(format!(
                "unknown dtype \"{}\"; use one of float32, float64, float16, bfloat16, int64, int32, uint8, bool",
                text.as_str()
            ))
        }),
        None => Err(type_error(format!(
            "a dtype is a string like \"float16\", not {}",
            value.type_name()
        ))),
    }
}

/// Keyword arguments `#{dtype, device, requires_grad}` applied over `base`.
pub fn options_of(map: &Map, base: TensorOptions) -> Res<TensorOptions> {
    let mut options = base;
    for (key, value) in map {
        match key.as_str() {
            "dtype" => options.dtype = dtype_of(value)?,
            "device" => options.device = device_of(value)?,
            "requires_grad" => {
                options.requires_grad = value
                    .as_bool()
                    .map_err(|t| type_error(format!("requires_grad must be a bool, not {t}")))?
            }
            other => {
                return Err(type_error(format!(
                    "unexpected keyword argument '{other}'; allowed: dtype, device, requires_grad"
                )))
            }
        }
    }
    Ok(options)
}

/// The values and shape of a nested array (`[[1, 2], [3, 4]]`), checking it is rectangular.
pub fn nested_values(value: &Dynamic) -> Res<(Vec<Scalar>, Vec<usize>)> {
    let mut values = Vec::new();
    let mut shape = None;
    collect(value, &mut Vec::new(), &mut shape, &mut values)?;
    Ok((values, shape.unwrap_or_default()))
}

fn collect(
    value: &Dynamic,
    path: &mut Vec<usize>,
    shape: &mut Option<Vec<usize>>,
    out: &mut Vec<Scalar>,
) -> Res<()> {
    match value.read_lock::<Array>() {
        Some(items) => {
            let items = items.clone();
            path.push(items.len());
            if items.is_empty() {
                check_shape(path, shape)?;
            }
            for item in &items {
                collect(item, path, shape, out)?;
            }
            path.pop();
            Ok(())
        }
        None => {
            check_shape(path, shape)?;
            out.push(scalar_of(value)?);
            Ok(())
        }
    }
}

fn check_shape(path: &[usize], shape: &mut Option<Vec<usize>>) -> Res<()> {
    match shape {
        None => {
            *shape = Some(path.to_vec());
            Ok(())
        }
        Some(s) if s.as_slice() == path => Ok(()),
        Some(s) => Err(value_error(format!(
            "expected a rectangular nested list: found a sequence of shape {path:?} where {s:?} was expected"
        ))),
    }
}

/// `t.tolist()`: nested arrays of ints, floats or bools, as PyTorch's `tolist` gives.
pub fn to_list(tensor: &Tensor) -> Res<Dynamic> {
    let dtype = tensor.dtype();
    let values: Vec<Dynamic> = tensor
        .to_vec_f64()
        .or_raise()?
        .into_iter()
        .map(|v| match dtype {
            DType::Bool => Dynamic::from_bool(v != 0.0),
            DType::I64 | DType::I32 | DType::U8 => Dynamic::from_int(v as INT),
            _ => Dynamic::from_float(v as FLOAT),
        })
        .collect();
    let shape = tensor.shape();
    if shape.is_empty() {
        return Ok(values.into_iter().next().unwrap_or(Dynamic::UNIT));
    }
    Ok(nest(&values, &shape))
}

fn nest(values: &[Dynamic], shape: &[usize]) -> Dynamic {
    if shape.len() == 1 {
        return Dynamic::from_array(values.to_vec());
    }
    let stride: usize = shape[1..].iter().product();
    let rows: Array = (0..shape[0])
        .map(|i| nest(&values[i * stride..(i + 1) * stride], &shape[1..]))
        .collect();
    Dynamic::from_array(rows)
}

/// A shape as a script array of ints.
pub fn shape_array(shape: &[usize]) -> Array {
    shape.iter().map(|&d| Dynamic::from_int(d as INT)).collect()
}
