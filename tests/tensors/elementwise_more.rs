//! maximum/minimum, `%` and `//`, log1p/expm1/erf/sign, clamp_min/clamp_max, lerp, addcmul and
//! norms over dims on every device: values against Python's and the definitions, float64
//! gradients against finite differences, and the refusals. Their allocator events are checked
//! against PyTorch's by `py_ops_reach.py` once recorded (tests/parity/pending/).
use crate::common;
use common::device_test;

use super::conv::{assert_close, check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn of(v: &[f64], dtype: DType, device: Device) -> Tensor {
    let s = v
        .iter()
        .map(|&x| {
            if dtype.is_float() {
                Scalar::Float(x)
            } else {
                Scalar::Int(x as i64)
            }
        })
        .collect();
    Tensor::from_values(
        s,
        vec![v.len()],
        &TensorOptions::default().dtype(dtype).device(device),
    )
    .unwrap()
}

/// The error function by Abramowitz and Stegun's 7.1.26 (absolute error under 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let poly = t
        * (0.254829592
            + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    (1.0 - poly * (-x * x).exp()).copysign(x)
}

device_test!(
    fn remainder_and_floor_divide_follow_python(device: Device) {
        let _gpu = common::exclusive();
        let a = of(&[-7., 7., -3., 0., 9.], DType::I64, device);
        let b = of(&[3., -3., 2., 5., -4.], DType::I64, device);
        // Python: -7 % 3 == 2, 7 % -3 == -2, -3 % 2 == 1, 0 % 5 == 0, 9 % -4 == -3.
        assert_eq!(vec_of(&a.remainder(&b).unwrap()), [2., -2., 1., 0., -3.]);
        assert_eq!(
            vec_of(&a.floor_divide(&b).unwrap()),
            [-3., -3., -2., 0., -3.]
        );
        let f = of(&[-7.5, 7.5, 2.0], DType::F32, device);
        assert_eq!(
            vec_of(&f.remainder_scalar(Scalar::Int(2), false).unwrap()),
            [0.5, 1.5, 0.0]
        );
        assert_eq!(
            vec_of(&f.floor_divide_scalar(Scalar::Int(2), false).unwrap()),
            [-4., 3., 1.]
        );
        assert_eq!(
            vec_of(&a.remainder_scalar(Scalar::Int(10), true).unwrap())[..2],
            [-4., 3.]
        );
        let g = values(&[3], 1, DType::F32, device, true);
        let err = g
            .remainder_scalar(Scalar::Int(2), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("torchlet: the gradient of remainder is not supported yet"),
            "{err}"
        );
    }
);

device_test!(
    fn new_elementwise_values_follow_their_definitions(device: Device) {
        let _gpu = common::exclusive();
        let x = values(&[2, 5], 3, DType::F32, device, false);
        let y = values(&[2, 5], 4, DType::F32, device, false);
        let (xv, yv) = (vec_of(&x), vec_of(&y));
        let each = |f: &dyn Fn(f64, f64) -> f64| {
            xv.iter()
                .zip(&yv)
                .map(|(&a, &b)| f(a, b))
                .collect::<Vec<_>>()
        };
        assert_close(
            &vec_of(&x.maximum(&y).unwrap()),
            &each(&|a, b| a.max(b)),
            0.0,
            "maximum",
        );
        assert_close(
            &vec_of(&x.minimum(&y).unwrap()),
            &each(&|a, b| a.min(b)),
            0.0,
            "minimum",
        );
        assert_close(
            &vec_of(&x.log1p().unwrap()),
            &each(&|a, _| a.ln_1p()),
            1e-6,
            "log1p",
        );
        assert_close(
            &vec_of(&x.expm1().unwrap()),
            &each(&|a, _| a.exp_m1()),
            1e-6,
            "expm1",
        );
        assert_close(
            &vec_of(&x.erf().unwrap()),
            &each(&|a, _| erf(a)),
            1e-6,
            "erf",
        );
        assert_close(
            &vec_of(&x.sign().unwrap()),
            &each(&|a, _| {
                if a > 0.0 {
                    1.0
                } else if a < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }),
            0.0,
            "sign",
        );
        assert_close(
            &vec_of(&x.clamp_min(0.0).unwrap()),
            &each(&|a, _| a.max(0.0)),
            0.0,
            "clamp_min",
        );
        assert_close(
            &vec_of(&x.clamp_max(0.25).unwrap()),
            &each(&|a, _| a.min(0.25)),
            0.0,
            "clamp_max",
        );
        assert_close(
            &vec_of(&x.lerp(&y, 0.25).unwrap()),
            &each(&|a, b| a + 0.25 * (b - a)),
            1e-6,
            "lerp",
        );
        assert_close(
            &vec_of(&x.addcmul(&x, &y, 0.5).unwrap()),
            &each(&|a, b| a + 0.5 * a * b),
            1e-6,
            "addcmul",
        );
        let rows: Vec<f64> = xv
            .chunks(5)
            .map(|r| r.iter().map(|v| v * v).sum::<f64>().sqrt())
            .collect();
        assert_close(
            &vec_of(&x.norm_over(2.0, &[1], false).unwrap()),
            &rows,
            1e-6,
            "norm(dim=1)",
        );
        let l1: f64 = xv.iter().map(|v| v.abs()).sum();
        assert_close(
            &vec_of(&x.norm_over(1.0, &[], false).unwrap()),
            &[l1],
            1e-6,
            "1-norm",
        );
        assert_eq!(x.norm_over(2.0, &[0], true).unwrap().shape(), vec![1, 5]);
    }
);

device_test!(
    fn new_elementwise_gradients_match_finite_differences(device: Device) {
        check_gradients(device, &[&[3, 4], &[3, 4]], |t| {
            t[0].maximum(&t[1]).unwrap()
        });
        check_gradients(device, &[&[3, 4], &[4]], |t| t[0].minimum(&t[1]).unwrap());
        check_gradients(device, &[&[3, 4], &[3, 4]], |t| {
            t[0].lerp(&t[1], 0.3).unwrap()
        });
        check_gradients(device, &[&[3, 4], &[3, 4], &[4]], |t| {
            t[0].addcmul(&t[1], &t[2], 0.5).unwrap()
        });
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].add_scalar(Scalar::Int(2)).unwrap().log1p().unwrap()
        });
        check_gradients(device, &[&[3, 4]], |t| t[0].expm1().unwrap());
        check_gradients(device, &[&[3, 4]], |t| t[0].erf().unwrap());
        check_gradients(device, &[&[3, 4]], |t| t[0].clamp_min(0.1).unwrap());
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].norm_over(2.0, &[1], false).unwrap()
        });
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].norm_over(2.0, &[], true).unwrap()
        });
    }
);
