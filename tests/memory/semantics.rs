//! Memory on the GPU matches PyTorch's numbers: outputs only, temporaries freed, what autograd keeps.
use crate::common;

use common::figures::{SEGMENT, TWO_X, X};
use torchlet_core::autograd;
use torchlet_core::device::Device;
use torchlet_core::tensor::{Scalar, Tensor, TensorOptions};

fn cpu_randn(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, &TensorOptions::default()).unwrap()
}

#[test]
fn moving_to_gpu_allocates_exactly_the_tensor() {
    let (_g, a) = common::gpu();
    let (base, base_reserved) = (a.memory_allocated(), a.memory_reserved());
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    assert_eq!(a.memory_allocated() - base, X);
    assert_eq!(a.memory_reserved() - base_reserved, SEGMENT);
    let x_cpu = x.to_device(Device::Cpu).unwrap();
    drop(x); // `x = x.cpu()` in Python drops the GPU tensor's last reference
    assert_eq!(a.memory_allocated(), base);
    assert_eq!(a.memory_reserved() - base_reserved, SEGMENT);
    drop(x_cpu);
    assert_eq!(a.memory_reserved() - base_reserved, SEGMENT);
    a.empty_cache();
    assert_eq!(a.memory_reserved(), base_reserved);
    assert_eq!(a.max_memory_allocated() - base, X);
}

#[test]
fn temporaries_are_freed_with_their_last_handle() {
    let (_g, a) = common::gpu();
    let (base, base_reserved) = (a.memory_allocated(), a.memory_reserved());
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    let temp = x.mul_scalar(Scalar::Int(2)).unwrap();
    assert_eq!(a.memory_allocated() - base, TWO_X);
    assert_eq!(a.memory_reserved() - base_reserved, SEGMENT);
    drop(temp);
    assert_eq!(a.memory_allocated() - base, X);
    a.empty_cache();
    assert_eq!(
        a.memory_reserved() - base_reserved,
        SEGMENT,
        "the segment is still split by x"
    );
    assert_eq!(a.max_memory_allocated() - base, TWO_X);
    drop(x);
}

#[test]
fn no_grad_result_is_the_only_new_allocation() {
    let (_g, a) = common::gpu();
    let base = a.memory_allocated();
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    let y = {
        let _ng = autograd::no_grad();
        x.add_scalar(Scalar::Int(1)).unwrap()
    };
    assert_eq!(a.memory_allocated() - base, TWO_X);
    assert!(!y.requires_grad());
}

#[test]
fn the_first_matmul_takes_a_cublas_workspace_that_stays() {
    let (_g, a) = common::gpu();
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    let before = a.memory_allocated();
    let c = x.matmul(&x).unwrap();
    let workspace = a.memory_allocated() - before - X;
    // 32 MiB on the first product on this device (no other test in this file multiplies matrices).
    assert_eq!(workspace, 33554432);
    drop(c);
    a.empty_cache();
    let after_first = a.memory_allocated();
    let c2 = x.matmul(&x).unwrap();
    assert_eq!(
        a.memory_allocated() - after_first,
        X,
        "the workspace is reused"
    );
    drop((c2, x));
    a.empty_cache();
    assert!(
        a.memory_allocated() >= 33554432,
        "the workspace outlives empty_cache"
    );
}

#[test]
fn views_share_storage_and_allocate_nothing() {
    let (_g, a) = common::gpu();
    let base = a.memory_allocated();
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    let before = a.memory_allocated();
    let v = x
        .t()
        .unwrap()
        .reshape(&[-1])
        .unwrap_or_else(|_| x.view(&[-1]).unwrap());
    let row = x.index(3).unwrap();
    let n = x.narrow(1, 10, 5).unwrap();
    assert_eq!(row.storage_id(), x.storage_id());
    assert_eq!(n.storage_id(), x.storage_id());
    let flat = x.view(&[-1]).unwrap();
    assert_eq!(flat.storage_id(), x.storage_id());
    drop(v);
    assert_eq!(a.memory_allocated(), before);
    drop(x);
    assert_eq!(a.memory_allocated(), before, "views keep the storage alive");
    drop((row, n, flat));
    assert_eq!(a.memory_allocated(), base);
}

#[test]
fn autograd_keeps_exp_and_relu_outputs() {
    let (_g, a) = common::gpu();
    let opts = TensorOptions::default()
        .device(Device::Cuda(0))
        .requires_grad(true);
    let w = Tensor::randn(&[1000, 1000], &opts).unwrap();
    let base = a.memory_allocated();
    let h = w
        .mul_scalar(Scalar::Int(2))
        .unwrap()
        .exp()
        .unwrap()
        .relu()
        .unwrap()
        .sum(None, false)
        .unwrap();
    assert_eq!(a.memory_allocated() - base, 8001024);
    assert_eq!(h.grad_fn_name().as_deref(), Some("SumBackward0"));
    drop(h);
    assert_eq!(a.memory_allocated(), base);
    {
        let _ng = autograd::no_grad();
        let h = w
            .mul_scalar(Scalar::Int(2))
            .unwrap()
            .exp()
            .unwrap()
            .relu()
            .unwrap()
            .sum(None, false)
            .unwrap();
        assert_eq!(a.memory_allocated() - base, 512);
        assert!(!h.requires_grad());
    }
    assert_eq!(a.memory_allocated(), base);
}

#[test]
fn backward_frees_saved_tensors_and_allocates_grads() {
    let (_g, a) = common::gpu();
    let opts = TensorOptions::default()
        .device(Device::Cuda(0))
        .requires_grad(true);
    let x = Tensor::randn(&[1000, 1000], &opts).unwrap();
    let y = Tensor::randn(&[1000, 1000], &opts).unwrap();
    let s = x.mul(&y).unwrap().relu().unwrap().sum(None, false).unwrap();
    let before = a.memory_allocated();
    s.backward(false).unwrap();
    assert_eq!(a.memory_allocated() as i64 - before as i64, 4970496);
    assert!(x.grad().is_some() && y.grad().is_some());
    let err = s.backward(false).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("Trying to backward through the graph a second time"));
}

#[test]
fn copying_a_transposed_gpu_tensor_to_the_host_takes_no_gpu_memory() {
    let (_g, a) = common::gpu();
    let x = cpu_randn(&[300, 200]).to_device(Device::Cuda(0)).unwrap();
    let expected: Vec<f64> = {
        let v = x.to_vec_f64().unwrap();
        (0..60000).map(|i| v[(i % 300) * 200 + i / 300]).collect()
    };
    a.reset_peak_memory_stats();
    let now = a.memory_allocated();
    let host = x.t().unwrap().to_device(Device::Cpu).unwrap();
    assert_eq!(a.max_memory_allocated(), now);
    assert_eq!(host.to_vec_f64().unwrap(), expected);
}

#[test]
#[cfg_attr(
    feature = "gpu-tests",
    ignore = "exhausts the simulated GPU's fixed 16 GiB, which a real GPU does not have"
)]
fn out_of_memory_is_an_error_that_keeps_every_tensor() {
    assert!(
        !common::real_gpu(),
        "this test exhausts the simulated GPU's 16 GiB: for a real GPU, build the tests with \
         TORCHLET_TEST_DEVICE=cuda, which ignores it"
    );
    let (_g, a) = common::gpu();
    let x = cpu_randn(&[1000, 1000]).to_device(Device::Cuda(0)).unwrap();
    let before = a.memory_allocated();
    let opts = TensorOptions::default().device(Device::Cuda(0));
    let e = Tensor::empty(&[5_000_000_000], &opts).unwrap_err();
    assert_eq!(e.kind(), "OutOfMemoryError");
    assert!(e.to_string().contains("out of memory"), "{e}");
    assert_eq!(a.memory_allocated(), before);
    assert_eq!(x.sum(None, false).unwrap().numel(), 1, "x is still usable");
}
