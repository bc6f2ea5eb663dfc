//! `torch.cuda`'s streams, natively: new stream handles, the current stream of a device, and
//! `Tensor.record_stream` (Note [one queue underneath] in `torchlet_alloc::stream`).

use torchlet_alloc::stream;
use torchlet_core::device::{self, Device};

use super::args::Args;
use super::memory::index;
use super::tensor::OrRaise;
use super::values::int;
use super::Native;

/// The stream functions, by the name `torch/cuda/streams.py` calls them.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_cuda_new_stream", |a| Ok(int(a.vm, stream::new_stream()))),
    ("_cuda_current_stream", |a| {
        Ok(int(a.vm, stream::current(index(a, 0)?)))
    }),
    ("_cuda_set_stream", |a| {
        let (device, id) = (index(a, 0)?, stream_id(a, 1)?);
        Ok(int(a.vm, stream::set_current(device, id)))
    }),
    ("_record_stream", |a| {
        let (tensor, id) = (a.tensor(0)?, stream_id(a, 1)?);
        let Device::Cuda(index) = tensor.device() else {
            return Err(a.vm.new_runtime_error(format!(
                "record_stream: the tensor is on {}; only CUDA tensors are used on streams \
                 (move it with .cuda() first)",
                tensor.device()
            )));
        };
        let allocator = device::cuda_allocator(index).or_raise(a.vm)?;
        if tensor.storage_nbytes() > 0 {
            allocator
                .record_stream(tensor.storage_ptr(), id)
                .map_err(|e| a.vm.new_runtime_error(e.to_string()))?;
        }
        super::none(a.vm)
    }),
];

/// The stream handle at argument `i` (`Stream.cuda_stream`).
fn stream_id(a: &Args, i: usize) -> rustpython_vm::PyResult<u64> {
    let id = a.int(i)?;
    u64::try_from(id).map_err(|_| a.vm.new_value_error(format!("no stream {id}")))
}
