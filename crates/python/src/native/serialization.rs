//! `torch.save` and `torch.load`'s native half: a tensor's whole storage as bytes, read to the
//! host (as PyTorch's save copies each storage to the CPU, taking no device memory), and a new
//! storage of those bytes on a device (as PyTorch's load makes each storage where it belongs).

use rustpython_vm::builtins::PyBytes;
use rustpython_vm::PyResult;
use torchlet_core::device::Device;
use torchlet_core::tensor::{Tensor, TensorOptions};

use super::args::Args;
use super::creation::dtype_named;
use super::tensor::{wrap, OrRaise};
use super::Native;

/// The serialization functions, by the name `torch/serialization.py` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_storage_bytes", |a| {
        // None in a shapes-only run (`torchlet fit`): there are no values to save.
        let t = a.tensor(0)?;
        if !t.has_values() {
            return super::none(a.vm);
        }
        let bytes = t.storage_bytes().or_raise(a.vm)?;
        Ok(a.vm.ctx.new_bytes(bytes).into())
    }),
    ("_storage_from_bytes", storage_from_bytes),
    ("_storage_view", |a| {
        let sizes = usizes(a, 1)?;
        let strides = usizes(a, 2)?;
        let offset = usize::try_from(a.int(3)?).unwrap_or(usize::MAX);
        let view = a.tensor(0)?.storage_view(&sizes, &strides, offset);
        Ok(wrap(a.vm, view.or_raise(a.vm)?))
    }),
];

/// Argument `i` as sizes or strides (none negative).
fn usizes(a: &Args, i: usize) -> PyResult<Vec<usize>> {
    a.ints(i)?
        .into_iter()
        .map(|n| {
            usize::try_from(n)
                .map_err(|_| a.vm.new_value_error(format!("torch.load: {n} is negative")))
        })
        .collect()
}

/// `_storage_from_bytes(data, nbytes, dtype, device)`: a flat tensor over a new storage of
/// `nbytes` on `device`, holding `data` (None: no values, as a shapes-only run has none).
fn storage_from_bytes(a: &Args) -> PyResult {
    let nbytes = a.int(1)?;
    let dtype = dtype_named(a, &a.str(2)?)?;
    let device = Device::parse(&a.str(3)?).or_raise(a.vm)?;
    let numel = usize::try_from(nbytes).unwrap_or(0) / dtype.size();
    let options = TensorOptions::default().dtype(dtype).device(device);
    let t = Tensor::empty(&[numel], &options).or_raise(a.vm)?;
    if !a.is_none(0) {
        let data = a.get(0)?.downcast_ref::<PyBytes>().ok_or_else(|| {
            a.vm.new_type_error("torch.load: a storage's data must be bytes")
        })?;
        if data.as_bytes().len() != t.storage_nbytes() {
            return Err(a.vm.new_value_error(format!(
                "torch.load: a storage of {} bytes holds {} bytes of data; the file is damaged",
                t.storage_nbytes(),
                data.as_bytes().len()
            )));
        }
        if t.has_values() {
            t.restore_storage_bytes(data.as_bytes()).or_raise(a.vm)?;
        }
    }
    Ok(wrap(a.vm, t))
}
