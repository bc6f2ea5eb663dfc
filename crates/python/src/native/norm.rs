//! Group and RMS norm, padding and 2-D resizing over core's ops; the Python side
//! (`torch/nn/functional.py`) resolves the defaults.

use torchlet_core::tensor::upsample::UpsampleMode;

use super::tensor::{wrap, OrRaise};
use super::Native;

/// Every normalisation, padding and resizing function, by the name `torch` calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    // (input, num_groups, weight, bias, eps)
    ("_group_norm", |a| {
        let (x, w, b) = (a.tensor(0)?, a.opt_tensor(2)?, a.opt_tensor(3)?);
        let y = x.group_norm(a.int(1)? as usize, w.as_ref(), b.as_ref(), a.float(4)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, normalized_shape, weight, eps or None)
    ("_rms_norm", |a| {
        let (x, w) = (a.tensor(0)?, a.opt_tensor(2)?);
        let y = x.rms_norm(&a.shape(1)?, w.as_ref(), a.opt_float(3)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, pad, value)
    ("_constant_pad", |a| {
        let y = a.tensor(0)?.constant_pad(&a.ints(1)?, a.float(2)?);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
    // (input, (Ho, Wo), (scale_h, scale_w) or None, mode, align_corners)
    ("_upsample2d", |a| {
        let size = a.shape(1)?;
        let scales = match a.is_none(2) {
            true => None,
            false => {
                let s = a.sequence(2)?;
                let f = |i: usize| super::args::float_of(a.vm, &s[i]);
                f(0).zip(f(1)).map(|(h, w)| [h, w])
            }
        };
        let mode = match a.str(3)?.as_str() {
            "nearest" => UpsampleMode::Nearest,
            _ => UpsampleMode::Bilinear {
                align_corners: a.bool(4)?,
            },
        };
        let y = a.tensor(0)?.upsample2d([size[0], size[1]], scales, mode);
        Ok(wrap(a.vm, y.or_raise(a.vm)?))
    }),
];
