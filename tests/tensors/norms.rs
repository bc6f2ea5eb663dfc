//! Group norm, RMS norm, constant padding, 2-D resizing, the gradient norms and GradScaler's
//! kernels on every device: values against references written out here in f64, float64
//! gradients against finite differences, and PyTorch's errors. Their allocator events are checked
//! against PyTorch's in `conv.rs` (the recording script) and the parity programs.
use crate::common;
use common::device_test;

use super::conv::{assert_close, check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::amp_scale::{unscale_and_check, update_scale, ScaleUpdate};
use torchlet_core::tensor::upsample::UpsampleMode;
use torchlet_core::tensor::vector_norm::foreach_norm;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

/// Group norm of x [N, C, L] in f64, from the definition.
fn reference_group_norm(
    x: &[f64],
    [n, c, l]: [usize; 3],
    g: usize,
    w: &[f64],
    b: &[f64],
) -> Vec<f64> {
    let d = c / g;
    let mut y = vec![0.0; x.len()];
    for s in 0..n {
        for grp in 0..g {
            let at = |ch: usize, i: usize| (s * c + grp * d + ch) * l + i;
            let members: Vec<usize> = (0..d)
                .flat_map(|ch| (0..l).map(move |i| at(ch, i)))
                .collect();
            let mu = members.iter().map(|&k| x[k]).sum::<f64>() / members.len() as f64;
            let var =
                members.iter().map(|&k| (x[k] - mu).powi(2)).sum::<f64>() / members.len() as f64;
            for &k in &members {
                let ch = k / l % c;
                y[k] = (x[k] - mu) / (var + 1e-5).sqrt() * w[ch] + b[ch];
            }
        }
    }
    y
}

device_test!(
    fn group_norm_computes_the_definition(device: Device) {
        let x = values(&[2, 6, 3, 2], 1, DType::F32, device, false);
        let w = values(&[6], 2, DType::F32, device, false);
        let b = values(&[6], 3, DType::F32, device, false);
        let y = x.group_norm(3, Some(&w), Some(&b), 1e-5).unwrap();
        let want = reference_group_norm(&vec_of(&x), [2, 6, 6], 3, &vec_of(&w), &vec_of(&b));
        assert_close(&vec_of(&y), &want, 1e-5, &format!("group_norm on {device}"));
    }
);

device_test!(
    fn group_norm_gradients_match_finite_differences(device: Device) {
        check_gradients(device, &[&[2, 4, 3], &[4], &[4]], |t| {
            t[0].group_norm(2, Some(&t[1]), Some(&t[2]), 1e-5).unwrap()
        });
    }
);

device_test!(
    fn rms_norm_divides_by_the_root_mean_square(device: Device) {
        let x = values(&[3, 5], 4, DType::F32, device, false);
        let w = values(&[5], 5, DType::F32, device, false);
        let y = x.rms_norm(&[5], Some(&w), Some(1e-6)).unwrap();
        let (xv, wv) = (vec_of(&x), vec_of(&w));
        let want: Vec<f64> = (0..15)
            .map(|i| {
                let row = &xv[i / 5 * 5..i / 5 * 5 + 5];
                let ms = row.iter().map(|v| v * v).sum::<f64>() / 5.0;
                xv[i] / (ms + 1e-6).sqrt() * wv[i % 5]
            })
            .collect();
        assert_close(&vec_of(&y), &want, 1e-5, &format!("rms_norm on {device}"));
        check_gradients(device, &[&[3, 4], &[4]], |t| {
            t[0].rms_norm(&[4], Some(&t[1]), None).unwrap()
        });
        // No rows: the weight's gradient sums nothing, so it is zeros, not uninitialised memory.
        let empty = values(&[0, 4], 6, DType::F32, device, true);
        let w = Tensor::full(&[4], Scalar::Float(2.0), &TensorOptions::default())
            .unwrap()
            .to_device(device)
            .unwrap();
        w.set_requires_grad(true).unwrap();
        let y = empty.rms_norm(&[4], Some(&w), None).unwrap();
        y.sum(None, false).unwrap().backward(false).unwrap();
        assert_eq!(vec_of(&w.grad().unwrap()), [0.0; 4], "rms_norm on {device}");
    }
);

device_test!(
    fn constant_pad_fills_around_and_crops_with_negative_amounts(device: Device) {
        let x = values(&[2, 3], 6, DType::F32, device, false);
        let xv = vec_of(&x);
        let y = x.constant_pad(&[1, 2, 0, 1], 7.0).unwrap();
        assert_eq!(y.shape(), vec![3, 6]);
        let yv = vec_of(&y);
        for r in 0..3 {
            for c in 0..6 {
                let want = if r < 2 && (1..4).contains(&c) {
                    xv[r * 3 + c - 1]
                } else {
                    7.0
                };
                assert_eq!(yv[r * 6 + c], want, "[{r}, {c}] on {device}");
            }
        }
        let cropped = x.constant_pad(&[-1, 0], 0.0).unwrap();
        assert_eq!(vec_of(&cropped), vec![xv[1], xv[2], xv[4], xv[5]]);
        check_gradients(device, &[&[2, 3, 2]], |t| {
            t[0].constant_pad(&[1, -1, 2, 0], 0.5).unwrap()
        });
    }
);

device_test!(
    fn interpolate_reads_pytorchs_taps(device: Device) {
        let o = TensorOptions::default().device(device);
        let ramp = Tensor::from_values(
            [0.0, 1.0, 2.0, 3.0].map(Scalar::Float).to_vec(),
            vec![1, 1, 2, 2],
            &o,
        )
        .unwrap();
        let nearest = ramp
            .upsample2d([4, 4], Some([2.0, 2.0]), UpsampleMode::Nearest)
            .unwrap();
        assert_eq!(
            &vec_of(&nearest)[..8],
            &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]
        );
        let half_pixel = UpsampleMode::Bilinear {
            align_corners: false,
        };
        let bilinear = ramp.upsample2d([2, 4], None, half_pixel).unwrap();
        // PyTorch: F.interpolate(x, size=(2, 4), mode="bilinear")[0, 0, 0] = [0, .25, .75, 1].
        assert_close(
            &vec_of(&bilinear)[..4],
            &[0.0, 0.25, 0.75, 1.0],
            1e-6,
            "half-pixel",
        );
        let corners = UpsampleMode::Bilinear {
            align_corners: true,
        };
        let aligned = ramp.upsample2d([2, 3], None, corners).unwrap();
        assert_close(
            &vec_of(&aligned)[..3],
            &[0.0, 0.5, 1.0],
            1e-6,
            "align_corners",
        );
        for mode in [UpsampleMode::Nearest, half_pixel, corners] {
            check_gradients(device, &[&[1, 2, 3, 5]], |t| {
                t[0].upsample2d([5, 7], None, mode).unwrap()
            });
            check_gradients(device, &[&[1, 1, 6, 4]], |t| {
                t[0].upsample2d([3, 3], None, mode).unwrap()
            });
        }
    }
);

device_test!(
    fn gradient_norms_and_the_scaler_kernels(device: Device) {
        let o = TensorOptions::default().device(device);
        let a = Tensor::from_values(vec![Scalar::Float(3.0), Scalar::Float(-4.0)], vec![2], &o)
            .unwrap();
        let b = Tensor::from_values(vec![Scalar::Float(12.0)], vec![1], &o).unwrap();
        let norms = foreach_norm(&[a.clone(), b.clone()], 2.0).unwrap();
        assert_eq!(
            norms.iter().map(|n| vec_of(n)[0]).collect::<Vec<_>>(),
            vec![5.0, 12.0]
        );
        let total = Tensor::stack(&norms, 0).unwrap().vector_norm(2.0).unwrap();
        assert_eq!(vec_of(&total), vec![13.0]);
        assert_eq!(vec_of(&a.vector_norm(f64::INFINITY).unwrap()), vec![4.0]);

        let found = Tensor::zeros(&[], &o).unwrap();
        let inv = Tensor::full(&[], Scalar::Float(0.5), &o).unwrap();
        unscale_and_check(&[a.clone()], &found, &inv).unwrap();
        assert_eq!((vec_of(&a), vec_of(&found)), (vec![1.5, -2.0], vec![0.0]));
        let inf = Tensor::full(&[1], Scalar::Float(f64::INFINITY), &o).unwrap();
        unscale_and_check(&[inf], &found, &inv).unwrap();
        assert_eq!(vec_of(&found), vec![1.0]);

        let scale = Tensor::full(&[], Scalar::Float(1024.0), &o).unwrap();
        let tracker = Tensor::zeros(&[], &o.clone().dtype(DType::I32)).unwrap();
        let how = ScaleUpdate {
            growth: 2.0,
            backoff: 0.5,
            interval: 2,
        };
        update_scale(&scale, &tracker, &found, how).unwrap();
        assert_eq!((vec_of(&scale), vec_of(&tracker)), (vec![512.0], vec![0.0]));
        found.fill_(Scalar::Float(0.0)).unwrap();
        update_scale(&scale, &tracker, &found, how).unwrap();
        assert_eq!((vec_of(&scale), vec_of(&tracker)), (vec![512.0], vec![1.0]));
        update_scale(&scale, &tracker, &found, how).unwrap();
        assert_eq!(
            (vec_of(&scale), vec_of(&tracker)),
            (vec![1024.0], vec![0.0])
        );
    }
);

#[test]
fn bad_arguments_get_pytorchs_errors() {
    let o = TensorOptions::default();
    let x = Tensor::zeros(&[2, 6, 4], &o).unwrap();
    let e = |r: torchlet_core::tensor::Result<Tensor>| r.unwrap_err().to_string();
    assert!(e(x.group_norm(4, None, None, 1e-5))
        .contains("Expected number of channels in input to be divisible by num_groups"));
    let w = Tensor::ones(&[5], &o).unwrap();
    assert!(e(x.group_norm(3, Some(&w), None, 1e-5))
        .contains("Expected weight to be a vector of size equal to the number of channels"));
    assert!(e(x.constant_pad(&[1, 2, 3], 0.0)).contains("Padding length must be divisible by 2"));
    assert!(e(x.constant_pad(&[0, 0, 0, 0, 0, 0, 0, 0], 0.0))
        .contains("Padding length should be less than or equal to two times the input dimension"));
    assert!(e(x.constant_pad(&[-3, -2], 0.0)).contains("resulted in a negative output size"));
    assert!(e(x.upsample2d([2, 2], None, UpsampleMode::Nearest)).contains("needs a 4-D input"));
    let ints = Tensor::zeros(&[3], &o.clone().dtype(DType::I64)).unwrap();
    assert!(e(ints.vector_norm(2.0)).contains("Expected a floating point or complex tensor"));
}
