//! Variance, standard deviation, amax/amin, prod and logsumexp on every device: values against
//! the definitions computed here in f64, float64 gradients against finite differences, and
//! PyTorch's errors. Their allocator events are checked against PyTorch's by
//! `py_reductions_more.py` (tests/memory/parity_python.rs).
use crate::common;
use common::device_test;

use super::conv::{assert_close, check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Moments, Tensor};

fn moments(dims: &[isize], correction: f64, keepdim: bool, take_sqrt: bool) -> Moments {
    Moments {
        dims: dims.to_vec(),
        correction,
        keepdim,
        take_sqrt,
    }
}

device_test!(
    fn var_and_std_follow_the_definition_with_any_correction(device: Device) {
        let _gpu = common::exclusive();
        for dtype in [DType::F32, DType::F64, DType::BF16] {
            let x = values(&[3, 5], 2, dtype, device, false);
            let xv = vec_of(&x);
            let tol = if dtype == DType::BF16 { 2e-2 } else { 1e-5 };
            for correction in [0.0, 1.0] {
                let (v, mean) = x
                    .moments(&moments(&[1], correction, false, false), true)
                    .unwrap();
                let want: Vec<f64> = xv
                    .chunks(5)
                    .map(|r| {
                        let mu = r.iter().sum::<f64>() / 5.0;
                        r.iter().map(|a| (a - mu) * (a - mu)).sum::<f64>() / (5.0 - correction)
                    })
                    .collect();
                assert_close(&vec_of(&v), &want, tol, &format!("var {device} {dtype:?}"));
                let means: Vec<f64> = xv.chunks(5).map(|r| r.iter().sum::<f64>() / 5.0).collect();
                assert_close(&vec_of(&mean.unwrap()), &means, tol, "the mean of var_mean");
            }
            let (s, _) = x.moments(&moments(&[], 1.0, false, true), false).unwrap();
            let mu = xv.iter().sum::<f64>() / 15.0;
            let var = xv.iter().map(|a| (a - mu) * (a - mu)).sum::<f64>() / 14.0;
            assert_close(
                &vec_of(&s),
                &[var.sqrt()],
                tol,
                &format!("std {device} {dtype:?}"),
            );
            let (k, _) = x.moments(&moments(&[0], 1.0, true, true), false).unwrap();
            assert_eq!(k.shape(), vec![1, 5]);
        }
        let ints = Tensor::zeros(
            &[3],
            &torchlet_core::tensor::TensorOptions::default()
                .dtype(DType::I64)
                .device(device),
        )
        .unwrap();
        let err = ints
            .moments(&moments(&[], 1.0, false, false), false)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "std and var only support floating point and complex dtypes"
        );
    }
);

device_test!(
    fn var_and_std_gradients_match_finite_differences(device: Device) {
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].moments(&moments(&[], 1.0, false, true), false)
                .unwrap()
                .0
        });
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].moments(&moments(&[1], 0.0, false, false), false)
                .unwrap()
                .0
        });
        check_gradients(device, &[&[2, 3, 4]], |t| {
            let (s, mean) = t[0]
                .moments(&moments(&[0, 2], 1.0, true, true), true)
                .unwrap();
            s.add(&mean.unwrap()).unwrap()
        });
    }
);

device_test!(
    fn amax_amin_prod_and_logsumexp_follow_their_definitions(device: Device) {
        let _gpu = common::exclusive();
        let x = values(&[2, 3, 4], 5, DType::F32, device, false);
        let xv = vec_of(&x);
        let rows: Vec<&[f64]> = xv.chunks(4).collect();
        let max: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().cloned().fold(f64::MIN, f64::max))
            .collect();
        assert_eq!(vec_of(&x.amax(Some(-1), false).unwrap()), max);
        let over = x
            .reduction_over(torchlet_core::tensor::ReduceOp::Amin, &[0, 2], false)
            .unwrap();
        assert_eq!(over.shape(), vec![3]);
        for (j, got) in vec_of(&over).into_iter().enumerate() {
            let want = (0..2)
                .flat_map(|i| (0..4).map(move |k| (i, k)))
                .map(|(i, k)| xv[(i * 3 + j) * 4 + k])
                .fold(f64::MAX, f64::min);
            assert_eq!(got, want);
        }
        let prod: Vec<f64> = rows.iter().map(|r| r.iter().product()).collect();
        assert_close(
            &vec_of(&x.prod(Some(2), false).unwrap()),
            &prod,
            1e-5,
            "prod",
        );
        let lse: Vec<f64> = rows
            .iter()
            .map(|r| r.iter().map(|v| v.exp()).sum::<f64>().ln())
            .collect();
        assert_close(
            &vec_of(&x.logsumexp(&[-1], false).unwrap()),
            &lse,
            1e-5,
            "logsumexp",
        );
        assert_eq!(x.logsumexp(&[1, 2], true).unwrap().shape(), vec![2, 1, 1]);
    }
);

device_test!(
    fn amax_prod_and_logsumexp_gradients_match_finite_differences(device: Device) {
        check_gradients(device, &[&[3, 4]], |t| t[0].amax(Some(1), false).unwrap());
        check_gradients(device, &[&[3, 4]], |t| t[0].prod(Some(0), true).unwrap());
        check_gradients(device, &[&[3, 4]], |t| {
            t[0].logsumexp(&[0, 1], false).unwrap()
        });
    }
);
