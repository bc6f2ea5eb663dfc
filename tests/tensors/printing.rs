//! Tensors print exactly as PyTorch 2.11 prints them (strings recorded from PyTorch in data/torch_repr.json).
use crate::common;
use common::{device_test, opts};

use std::collections::HashMap;

use torchlet_core::autograd;
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn pytorch() -> HashMap<String, String> {
    serde_json::from_str(include_str!("../data/torch_repr.json")).expect("fixture parses")
}

fn floats(values: &[f64], shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let v = values.iter().map(|&x| Scalar::Float(x)).collect();
    Tensor::from_values(v, shape.to_vec(), &opts(dtype, device)).unwrap()
}

fn ints(values: &[i64], dtype: DType, device: Device) -> Tensor {
    let v = values.iter().map(|&x| Scalar::Int(x)).collect();
    Tensor::from_values(v, vec![values.len()], &opts(dtype, device)).unwrap()
}

fn arange(n: usize, dtype: DType, device: Device) -> Tensor {
    Tensor::arange(0.0, n as f64, 1.0, &opts(dtype, device)).unwrap()
}

/// The CPU-printed cases, each built on `device` (its values then printed from the host).
fn cases(device: Device) -> Vec<(&'static str, Tensor)> {
    use DType::*;
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    vec![
        ("mixed_sign", floats(&[1.0, -0.5], &[1, 2], F32, device)),
        (
            "int_valued_float",
            floats(&[1.0, 2.0, 3.0], &[3], F32, device),
        ),
        ("int64", ints(&[1, 2, 3], I64, device)),
        ("negative_ints", ints(&[-1, 10, 100], I64, device)),
        (
            "bool",
            Tensor::from_values(
                vec![Scalar::Bool(true), Scalar::Bool(false)],
                vec![2],
                &opts(Bool, device),
            )
            .unwrap(),
        ),
        ("small_sci", floats(&[1e-5, 1.0], &[2], F32, device)),
        ("big_int_sci", floats(&[1e10, 1.0], &[2], F32, device)),
        ("ratio_sci", floats(&[123456.789, 0.5], &[2], F32, device)),
        ("zeros", Tensor::zeros(&[3], &opts(F32, device)).unwrap()),
        ("with_zero", floats(&[1.5, 0.0], &[2], F32, device)),
        ("neg_zero", floats(&[-0.0, 1.25], &[2], F32, device)),
        ("scalar_float", floats(&[3.5], &[], F32, device)),
        ("scalar_int_float", floats(&[3.0], &[], F32, device)),
        (
            "scalar_int",
            Tensor::from_values(vec![Scalar::Int(2)], vec![], &opts(I64, device)).unwrap(),
        ),
        ("empty", Tensor::zeros(&[0], &opts(F32, device)).unwrap()),
        (
            "empty_2d",
            Tensor::zeros(&[2, 0], &opts(F32, device)).unwrap(),
        ),
        (
            "empty_int",
            Tensor::zeros(&[0], &opts(I64, device)).unwrap(),
        ),
        ("float16", floats(&[0.1, 0.2], &[2], F16, device)),
        ("bfloat16", floats(&[0.1, 0.2, 3.0], &[3], BF16, device)),
        ("float64", floats(&[1.0, 2.5], &[2], F64, device)),
        ("int32", ints(&[1, 2], I32, device)),
        ("uint8", ints(&[1, 255], U8, device)),
        (
            "nonfinite",
            floats(&[nan, inf, -inf, 1.5], &[4], F32, device),
        ),
        ("nonfinite_int_mode", floats(&[nan, 2.0], &[2], F32, device)),
        (
            "wrapped_line",
            arange(30, F32, device).div_scalar(Scalar::Int(7)).unwrap(),
        ),
        (
            "three_d",
            arange(24, F32, device).reshape(&[2, 3, 4]).unwrap(),
        ),
        ("summarized_1d", arange(2000, F32, device)),
        (
            "summarized_int_2d",
            arange(1200, I64, device).reshape(&[40, 30]).unwrap(),
        ),
        (
            "summarized_float_2d",
            arange(1100, F32, device)
                .reshape(&[11, 100])
                .unwrap()
                .div_scalar(Scalar::Int(3))
                .unwrap(),
        ),
        (
            "summarized_3d",
            arange(1200, F32, device).reshape(&[12, 10, 10]).unwrap(),
        ),
        (
            "linspace",
            Tensor::linspace(0.0, 1.0, 5, &opts(F32, device)).unwrap(),
        ),
        ("eye_int", Tensor::eye(3, None, &opts(I64, device)).unwrap()),
        (
            "round_half",
            floats(&[0.00005, 0.12345, 2.5], &[3], F64, device),
        ),
    ]
}

device_test!(
    fn values_print_like_pytorch_on_every_device(device: Device) {
        let expected = pytorch();
        for (name, t) in cases(device) {
            let host = t.to_device(Device::Cpu).unwrap();
            assert_eq!(
                host.to_string(),
                expected[name],
                "case {name} built on {device}"
            );
        }
    }
);

#[test]
fn autograd_suffixes_print_like_pytorch() {
    let expected = pytorch();
    let x = Tensor::ones(&[2], &TensorOptions::default().requires_grad(true)).unwrap();
    assert_eq!(x.to_string(), expected["requires_grad"]);
    let y = x.mul_scalar(Scalar::Int(2)).unwrap();
    assert_eq!(y.to_string(), expected["grad_fn"]);
    assert_eq!(
        y.sum(None, false).unwrap().to_string(),
        expected["sum_grad_fn"]
    );
    let _guard = autograd::no_grad();
    assert_eq!(
        x.mul_scalar(Scalar::Int(2)).unwrap().to_string(),
        expected["no_grad_result"]
    );
}

#[test]
fn gpu_tensors_show_their_device_like_pytorch() {
    let expected = pytorch();
    common::uses_gpu();
    let gpu = Device::Cuda(0);
    let cuda = floats(&[1.0, 2.0], &[2], DType::F32, Device::Cpu)
        .to_device(gpu)
        .unwrap();
    assert_eq!(cuda.to_string(), expected["cuda"]);
    let half = floats(&[1.0, 2.5], &[2], DType::F32, Device::Cpu)
        .to_device(gpu)
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    assert_eq!(half.to_string(), expected["cuda_half"]);
    let row = arange(12, DType::F32, Device::Cpu)
        .div_scalar(Scalar::Int(3))
        .unwrap()
        .to_device(gpu)
        .unwrap();
    assert_eq!(row.to_string(), expected["cuda_long_row"]);
    let empty = Tensor::zeros(&[0], &opts(DType::F32, gpu)).unwrap();
    assert_eq!(empty.to_string(), expected["cuda_empty"]);
    let leaf = floats(&[1.0], &[1], DType::F32, Device::Cpu)
        .to_device(gpu)
        .unwrap();
    leaf.set_requires_grad(true).unwrap();
    assert_eq!(leaf.to_string(), expected["cuda1_like"]);
    let w = floats(&[1.12345678; 7], &[1, 7], DType::F32, Device::Cpu);
    w.set_requires_grad(true).unwrap();
    let wrapped = w
        .to_device(gpu)
        .unwrap()
        .mul_scalar(Scalar::Int(3))
        .unwrap();
    assert_eq!(wrapped.to_string(), expected["suffix_wraps"]);
}
