//! The activations with a parameter, mish, hardswish and rounding on every device: values against
//! the definitions in f64, float64 gradients against finite differences. Their allocator events
//! are checked against PyTorch's by `tests/parity/py_elementwise_more.py`.
use crate::common;
use common::device_test;

use super::conv::{assert_close, check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor};

type Activation = (&'static str, fn(&Tensor) -> Tensor, fn(f64) -> f64);

/// Each activation (on 3.7 x, so that hardswish's three pieces are all met) and its definition.
fn activations() -> Vec<Activation> {
    fn softplus(x: f64) -> f64 {
        if 2.0 * x > 1.5 {
            x
        } else {
            (2.0 * x).exp().ln_1p() / 2.0
        }
    }
    vec![
        (
            "leaky_relu",
            |t| t.leaky_relu(0.1).unwrap(),
            |x| if x > 0.0 { x } else { 0.1 * x },
        ),
        (
            "elu",
            |t| t.elu(0.5).unwrap(),
            |x| if x > 0.0 { x } else { 0.5 * x.exp_m1() },
        ),
        ("softplus", |t| t.softplus(2.0, 1.5).unwrap(), softplus),
        (
            "mish",
            |t| t.mish().unwrap(),
            |x| x * x.exp().ln_1p().tanh(),
        ),
        (
            "hardswish",
            |t| t.hardswish().unwrap(),
            |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        ),
    ]
}

fn scaled(t: &Tensor) -> Tensor {
    t.mul_scalar(Scalar::Float(3.7)).unwrap()
}

device_test!(
    fn activations_compute_their_definitions(device: Device) {
        let x = values(&[4, 50], 3, DType::F32, device, false);
        let input: Vec<f64> = vec_of(&scaled(&x));
        for (name, f, reference) in activations() {
            let want: Vec<f64> = input.iter().map(|&v| reference(v)).collect();
            assert_close(&vec_of(&f(&scaled(&x))), &want, 1e-5, name);
        }
    }
);

device_test!(
    fn activation_gradients_match_finite_differences(device: Device) {
        for (_, f, _) in activations() {
            check_gradients(device, &[&[3, 7]], |t| f(&scaled(&t[0])));
        }
    }
);

device_test!(
    fn rounding_rounds_halves_to_even_and_passes_no_gradient(device: Device) {
        let v = [-2.5, -1.5, -0.4, 0.5, 1.5, 2.7];
        let x = Tensor::from_values(
            v.iter().map(|&f| Scalar::Float(f)).collect(),
            vec![6],
            &common::opts(DType::F32, device),
        )
        .unwrap();
        assert_eq!(
            vec_of(&x.round().unwrap()),
            [-2.0, -2.0, -0.0, 0.0, 2.0, 3.0]
        );
        assert_eq!(
            vec_of(&x.floor().unwrap()),
            [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0]
        );
        assert_eq!(
            vec_of(&x.ceil().unwrap()),
            [-2.0, -1.0, -0.0, 1.0, 2.0, 3.0]
        );
        assert_eq!(
            vec_of(&x.trunc().unwrap()),
            [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0]
        );
        let w = values(&[6], 1, DType::F64, device, true);
        w.floor()
            .unwrap()
            .sum(None, false)
            .unwrap()
            .backward(false)
            .unwrap();
        assert_eq!(vec_of(&w.grad().unwrap()), [0.0; 6]);
    }
);
