//! Convolutions, pooling, batch norm (`torch.nn.functional.conv2d`, `max_pool2d`, …) and the
//! channels-last memory format over
//! core's ops; the Python side (`torch/nn/functional.py`) turns ints and tuples into pairs (and
//! triples, in 3-D).

use rustpython_vm::PyResult;
use torchlet_core::tensor::conv::ConvOptions;
use torchlet_core::tensor::conv_transpose::ConvTransposeOptions;
use torchlet_core::tensor::fold::Window;
use torchlet_core::tensor::pool::{PoolOptions, Running};

use super::args::Args;
use super::tensor::{wrap, OrRaise};
use super::Native;

/// Every convolution, pooling and normalisation function, by the name `torch` calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    // (tensor, channels_last, as `to` (else as `contiguous`)).
    ("_to_memory_format", |a| {
        let node = if a.bool(2)? {
            "ToCopyBackward0"
        } else {
            "CloneBackward0"
        };
        let t = a.tensor(0)?.to_memory_format(a.bool(1)?, node);
        Ok(wrap(a.vm, t.or_raise(a.vm)?))
    }),
    ("_is_channels_last", |a| {
        Ok(a.vm.ctx.new_bool(a.tensor(0)?.is_channels_last()).into())
    }),
    // (input, weight, bias, stride, padding, dilation, groups), each pair as a 2-tuple.
    ("_conv2d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let y = x.conv2d(&w, b.as_ref(), &conv_options(a, 3)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // The same with 3-tuples.
    ("_conv3d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let y = x.conv3d(&w, b.as_ref(), &conv_options(a, 3)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    ("_conv1d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let [s, p, d, g] = [3, 4, 5, 6].map(|i| a.int(i));
        let y = x.conv1d(
            &w,
            b.as_ref(),
            s? as usize,
            p? as usize,
            d? as usize,
            g? as usize,
        );
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, weight, bias, stride, padding, output_padding, groups, dilation), pairs as 2-tuples.
    ("_conv_transpose2d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let o = transpose_options(a, 3)?;
        Ok(wrap(
            a.vm,
            x.conv_transpose2d(&w, b.as_ref(), &o).or_raise(a.vm)?,
        ))
    }),
    // The same with 3-tuples.
    ("_conv_transpose3d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let o = transpose_options(a, 3)?;
        Ok(wrap(
            a.vm,
            x.conv_transpose3d(&w, b.as_ref(), &o).or_raise(a.vm)?,
        ))
    }),
    // The same with one int each, as F.conv_transpose1d takes them.
    ("_conv_transpose1d", |a| {
        let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
        let [s, p, op, g, d] = [3, 4, 5, 6, 7].map(|i| a.int(i).map(|v| v.max(0) as usize));
        let o = ConvTransposeOptions {
            conv: ConvOptions {
                stride: [1, s?],
                padding: [0, p?],
                dilation: [1, d?],
                groups: g?,
            },
            output_padding: [0, op?],
        };
        Ok(wrap(
            a.vm,
            x.conv_transpose1d(&w, b.as_ref(), &o).or_raise(a.vm)?,
        ))
    }),
    // (input, kernel_size, dilation, padding, stride), each pair a 2-tuple: F.unfold.
    ("_im2col", |a| {
        let y = a.tensor(0)?.im2col(window(a, 1)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, output_size, kernel_size, dilation, padding, stride): F.fold.
    ("_col2im", |a| {
        let y = a.tensor(0)?.col2im(pair(a, 1)?, window(a, 2)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, kernel, stride, padding, dilation, ceil_mode, return_indices)
    ("_max_pool2d", |a| {
        let o = pool_options(a, 1)?;
        let (y, idx) = a.tensor(0)?.max_pool2d(&o, a.bool(6)?).or_raise(a.vm)?;
        Ok(match idx {
            Some(i) => {
                a.vm.ctx
                    .new_tuple(vec![wrap(a.vm, y), wrap(a.vm, i)])
                    .into()
            }
            None => wrap(a.vm, y),
        })
    }),
    // (input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ("_avg_pool2d", |a| {
        let o = PoolOptions {
            kernel: pair(a, 1)?,
            stride: pair(a, 2)?,
            padding: pair(a, 3)?,
            dilation: [1, 1],
            ceil_mode: a.bool(4)?,
        };
        let y = a.tensor(0)?.avg_pool2d(&o, a.bool(5)?, a.opt_int(6)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    ("_adaptive_avg_pool2d", |a| {
        Ok(wrap(
            a.vm,
            a.tensor(0)?
                .adaptive_avg_pool2d(pair(a, 1)?)
                .or_raise(a.vm)?,
        ))
    }),
    // (input, running_mean, running_var, weight, bias, training, momentum, eps)
    ("_batch_norm", |a| {
        let (rm, rv) = (a.opt_tensor(1)?, a.opt_tensor(2)?);
        let running = match (&rm, &rv) {
            (Some(mean), Some(var)) => Some(Running {
                mean,
                var,
                momentum: a.float(6)?,
            }),
            _ => None,
        };
        let (w, b) = (a.opt_tensor(3)?, a.opt_tensor(4)?);
        let y = a
            .tensor(0)?
            .batch_norm(running, w.as_ref(), b.as_ref(), a.bool(5)?, a.float(7)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
];

/// Argument `i`, an `N`-tuple of ints (negative ones as 0).
fn ints_n<const N: usize>(a: &Args, i: usize) -> PyResult<[usize; N]> {
    let v = a.ints(i)?;
    if v.len() != N {
        let msg = format!("expected {N} ints, got {}", v.len());
        return Err(a.vm.new_value_error(msg));
    }
    Ok(std::array::from_fn(|d| v[d].max(0) as usize))
}

/// Argument `i`, a 2-tuple of non-negative ints.
fn pair(a: &Args, i: usize) -> PyResult<[usize; 2]> {
    ints_n(a, i)
}

/// A convolution's (stride, padding, dilation, groups) from argument `i` on.
fn conv_options<const N: usize>(a: &Args, i: usize) -> PyResult<ConvOptions<N>> {
    Ok(ConvOptions {
        stride: ints_n(a, i)?,
        padding: ints_n(a, i + 1)?,
        dilation: ints_n(a, i + 2)?,
        groups: a.int(i + 3)?.max(0) as usize,
    })
}

/// A transposed convolution's (stride, padding, output_padding, groups, dilation) from argument `i` on.
fn transpose_options<const N: usize>(a: &Args, i: usize) -> PyResult<ConvTransposeOptions<N>> {
    Ok(ConvTransposeOptions {
        conv: ConvOptions {
            stride: ints_n(a, i)?,
            padding: ints_n(a, i + 1)?,
            dilation: ints_n(a, i + 4)?,
            groups: a.int(i + 3)?.max(0) as usize,
        },
        output_padding: ints_n(a, i + 2)?,
    })
}

/// Unfold's (kernel_size, dilation, padding, stride) from argument `i` on, as `F.unfold` orders them.
fn window(a: &Args, i: usize) -> PyResult<Window> {
    Ok(Window {
        kernel: pair(a, i)?,
        dilation: pair(a, i + 1)?,
        padding: pair(a, i + 2)?,
        stride: pair(a, i + 3)?,
    })
}

/// Max pooling's (kernel, stride, padding, dilation, ceil_mode) from argument `i` on.
fn pool_options(a: &Args, i: usize) -> PyResult<PoolOptions> {
    Ok(PoolOptions {
        kernel: pair(a, i)?,
        stride: pair(a, i + 1)?,
        padding: pair(a, i + 2)?,
        dilation: pair(a, i + 3)?,
        ceil_mode: a.bool(i + 4)?,
    })
}
