//! The meta device: shapes and dtypes without memory, moved and refused as PyTorch moves and refuses.
use crate::common;
use common::{device_test, opts};

use torchlet_core::device::{self, Device};
use torchlet_core::tensor::{DType, Tensor};

/// Bytes allocated on `device` (the CPU's memory is not traced: 0).
fn allocated(device: Device) -> u64 {
    match device {
        Device::Cuda(i) => device::cuda_allocator(i).unwrap().memory_allocated(),
        _ => 0,
    }
}

device_test!(
    fn a_meta_tensor_takes_no_memory_and_leaves_only_as_pytorchs_do(device: Device) {
        let x = Tensor::randn(&[256, 128], &opts(DType::F32, device)).unwrap();
        let before = allocated(device);
        let m = x.to_device(Device::Meta).unwrap();
        assert_eq!((m.device(), m.dims()), (Device::Meta, &[256, 128][..]));
        // Ops on meta tensors give their shapes and dtypes and allocate nothing anywhere.
        let y = m
            .matmul(&m.t().unwrap())
            .unwrap()
            .to_dtype(DType::F16)
            .unwrap();
        assert_eq!((y.dims(), y.dtype()), (&[256, 256][..], DType::F16));
        assert_eq!(allocated(device), before);
        assert_eq!(
            y.repr().unwrap(),
            "tensor(..., device='meta', size=(256, 256), dtype=torch.float16)"
        );
        // No values: leaving meta and reading an item are refused with PyTorch's words.
        let err = m.to_device(device).unwrap_err();
        assert_eq!(
            (err.kind(), err.message()),
            (
                "NotImplementedError",
                "Cannot copy out of meta tensor; no data!"
            )
        );
        let err = m.sum(None, false).unwrap().item().unwrap_err();
        assert_eq!(
            err.message(),
            "Tensor.item() cannot be called on meta tensors"
        );
        // An empty tensor of the meta one's shape on the device (to_empty) takes its bytes.
        let made = Tensor::empty(m.dims(), &opts(DType::F32, device)).unwrap();
        assert_eq!(made.dims(), x.dims());
        if device.is_cuda() {
            assert_eq!(allocated(device) - before, 256 * 128 * 4);
        }
    }
);
