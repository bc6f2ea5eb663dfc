//! 3-D convolutions and their transposed form on every device: values against a reference
//! written out here in f64, the transposed one as the convolution's adjoint, float64 gradients
//! against finite differences, PyTorch's errors, and the allocator events of PyTorch's recording
//! script (`tests/data/record_conv.py conv3d,conv_transpose3d`, run by torchlet shapes only)
//! against what PyTorch 2.11 allocated (`tests/data/torch_conv3d.json`).
use crate::common;
use common::device_test;

use super::conv::{assert_close, check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::conv::ConvOptions;
use torchlet_core::tensor::conv_transpose::ConvTransposeOptions;
use torchlet_core::tensor::{DType, Tensor};

/// The flat index of `[a, b, d, h, w]` in a contiguous tensor of `shape`.
fn flat(shape: [usize; 5], [a, b, d, h, w]: [usize; 5]) -> usize {
    (((a * shape[1] + b) * shape[2] + d) * shape[3] + h) * shape[4] + w
}

/// A 3-D convolution in f64 on the host, straight from the definition; its output and shape.
fn reference_conv3d(
    x: &[f64],
    xs: [usize; 5],
    w: &[f64],
    ws: [usize; 5],
    o: &ConvOptions<3>,
) -> (Vec<f64>, [usize; 5]) {
    let out = |a: usize| {
        (xs[2 + a] + 2 * o.padding[a] - o.dilation[a] * (ws[2 + a] - 1) - 1) / o.stride[a] + 1
    };
    let ys = [xs[0], ws[0], out(0), out(1), out(2)];
    let mut y = vec![0.0; ys.iter().product()];
    let input = |oc: usize, t: usize, a: usize| {
        let i = (oc * o.stride[a] + t * o.dilation[a]) as isize - o.padding[a] as isize;
        (i >= 0 && (i as usize) < xs[2 + a]).then_some(i as usize)
    };
    for n in 0..ys[0] {
        for k in 0..ys[1] {
            let first = k / (ws[0] / o.groups) * ws[1];
            for (od, oh, ow) in cube([ys[2], ys[3], ys[4]]) {
                let mut acc = 0.0;
                for c in 0..ws[1] {
                    for (td, th, tw) in cube([ws[2], ws[3], ws[4]]) {
                        let (Some(d), Some(h), Some(wi)) =
                            (input(od, td, 0), input(oh, th, 1), input(ow, tw, 2))
                        else {
                            continue;
                        };
                        acc +=
                            x[flat(xs, [n, first + c, d, h, wi])] * w[flat(ws, [k, c, td, th, tw])];
                    }
                }
                y[flat(ys, [n, k, od, oh, ow])] = acc;
            }
        }
    }
    (y, ys)
}

/// Every (d, h, w) of a box.
fn cube(s: [usize; 3]) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..s[0]).flat_map(move |d| (0..s[1]).flat_map(move |h| (0..s[2]).map(move |w| (d, h, w))))
}

/// The geometries the tests cover: per-axis kernels, strides, padding, dilation and groups.
fn geometries() -> Vec<([usize; 5], [usize; 5], ConvOptions<3>)> {
    let o = |stride, padding, dilation, groups| ConvOptions {
        stride,
        padding,
        dilation,
        groups,
    };
    vec![
        (
            [2, 2, 4, 5, 4],
            [3, 2, 3, 2, 3],
            o([1, 1, 1], [0, 1, 0], [1, 1, 1], 1),
        ),
        (
            [1, 4, 5, 5, 5],
            [4, 2, 3, 3, 3],
            o([2, 1, 2], [1, 1, 1], [1, 2, 1], 2),
        ),
        (
            [1, 2, 3, 4, 4],
            [2, 2, 1, 1, 1],
            o([1, 1, 1], [0, 0, 0], [1, 1, 1], 1),
        ),
    ]
}

device_test!(
    fn conv3d_computes_the_definition(device: Device) {
        for (xs, ws, o) in geometries() {
            let x = values(&xs, 1, DType::F32, device, false);
            let w = values(&ws, 2, DType::F32, device, false);
            let b = values(&[ws[0]], 3, DType::F32, device, false);
            let y = x.conv3d(&w, Some(&b), &o).unwrap();
            let (mut want, shape) = reference_conv3d(&vec_of(&x), xs, &vec_of(&w), ws, &o);
            let per: usize = shape[2..].iter().product();
            let bias = vec_of(&b);
            for (i, v) in want.iter_mut().enumerate() {
                *v += bias[i / per % ws[0]];
            }
            assert_eq!(y.shape(), shape.to_vec(), "{o:?}");
            assert_close(
                &vec_of(&y),
                &want,
                1e-5,
                &format!("conv3d {xs:?} {ws:?} on {device}"),
            );
        }
    }
);

device_test!(
    fn conv3d_of_depth_one_is_conv2d(device: Device) {
        let x = values(&[2, 3, 1, 6, 5], 1, DType::F32, device, false);
        let w = values(&[4, 3, 1, 3, 2], 2, DType::F32, device, false);
        let o3 = ConvOptions {
            stride: [1, 2, 1],
            padding: [0, 1, 1],
            ..Default::default()
        };
        let o2 = ConvOptions {
            stride: [2, 1],
            padding: [1, 1],
            ..Default::default()
        };
        let y3 = x.conv3d(&w, None, &o3).unwrap();
        let y2 = x
            .squeeze(Some(2))
            .unwrap()
            .conv2d(&w.squeeze(Some(2)).unwrap(), None, &o2)
            .unwrap();
        assert_eq!(y3.shape()[2], 1);
        assert_close(&vec_of(&y3), &vec_of(&y2), 1e-6, "depth 1");
    }
);

/// The transposed convolution of the same weight and geometry whose output has `xs`'s size.
fn adjoint(
    xs: [usize; 5],
    ws: [usize; 5],
    o: &ConvOptions<3>,
    ys: [usize; 5],
) -> ConvTransposeOptions<3> {
    let reach = |a: usize| {
        (ys[2 + a] - 1) * o.stride[a] + o.dilation[a] * (ws[2 + a] - 1) + 1 - 2 * o.padding[a]
    };
    ConvTransposeOptions {
        conv: *o,
        output_padding: std::array::from_fn(|a| xs[2 + a] - reach(a)),
    }
}

device_test!(
    fn conv_transpose3d_is_the_adjoint_of_conv3d(device: Device) {
        // <conv3d(x, w), y> = <x, conv_transpose3d(y, w)> for the same weight and geometry.
        for (xs, ws, o) in geometries() {
            let x = values(&xs, 1, DType::F64, device, false);
            let w = values(&ws, 2, DType::F64, device, false);
            let y = x.conv3d(&w, None, &o).unwrap();
            let shape: Vec<usize> = y.shape();
            let ys = <[usize; 5]>::try_from(shape.as_slice()).unwrap();
            let probe = values(&ys, 4, DType::F64, device, false);
            let back = probe
                .conv_transpose3d(&w, None, &adjoint(xs, ws, &o, ys))
                .unwrap();
            assert_eq!(back.shape(), xs.to_vec(), "{o:?}");
            let dot = |a: &Tensor, b: &Tensor| {
                vec_of(a)
                    .iter()
                    .zip(vec_of(b))
                    .map(|(p, q)| p * q)
                    .sum::<f64>()
            };
            let (lhs, rhs) = (dot(&y, &probe), dot(&x, &back));
            assert!(
                (lhs - rhs).abs() < 1e-9 * (1.0 + lhs.abs()),
                "{lhs} vs {rhs} for {o:?} on {device}"
            );
        }
    }
);

device_test!(
    fn conv3d_gradients_match_finite_differences(device: Device) {
        for (xs, ws, o) in geometries().into_iter().skip(1) {
            check_gradients(device, &[&xs, &ws, &[ws[0]]], |t| {
                t[0].conv3d(&t[1], Some(&t[2]), &o).unwrap()
            });
        }
    }
);

device_test!(
    fn conv_transpose3d_gradients_match_finite_differences(device: Device) {
        let o = ConvTransposeOptions {
            conv: ConvOptions {
                stride: [2, 1, 2],
                padding: [1, 0, 0],
                groups: 2,
                ..Default::default()
            },
            output_padding: [1, 0, 0],
        };
        check_gradients(device, &[&[1, 4, 2, 3, 2], &[4, 1, 3, 2, 2], &[2]], |t| {
            t[0].conv_transpose3d(&t[1], Some(&t[2]), &o).unwrap()
        });
    }
);

#[test]
fn bad_3d_convolutions_are_pytorchs_errors() {
    let e = |r: torchlet_core::tensor::Result<Tensor>| r.unwrap_err().to_string();
    let cpu = |s: &[usize]| values(s, 1, DType::F32, Device::Cpu, false);
    let o = ConvOptions::<3>::default();
    assert_eq!(
        e(cpu(&[2, 3, 4]).conv3d(&cpu(&[1, 3, 1, 1, 1]), None, &o)),
        "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: [2, 3, 4]"
    );
    assert_eq!(
        e(cpu(&[1, 3, 4, 4, 4]).conv3d(&cpu(&[2, 3, 3, 3]), None, &o)),
        "Expected 4-dimensional input for 4-dimensional weight [2, 3, 3, 3], but got 5-dimensional input of size [1, 3, 4, 4, 4] instead"
    );
    assert_eq!(
        e(cpu(&[1, 3, 2, 4, 4]).conv3d(&cpu(&[2, 3, 3, 3, 3]), None, &o)),
        "Calculated padded input size per channel: (2 x 4 x 4). Kernel size: (3 x 3 x 3). Kernel size can't be greater than actual input size"
    );
    let t = ConvTransposeOptions::<3> {
        output_padding: [0, 2, 0],
        ..Default::default()
    };
    assert!(
        e(cpu(&[1, 2, 2, 2, 2]).conv_transpose3d(&cpu(&[2, 2, 2, 2, 2]), None, &t))
            .contains("output_padding_height: 2")
    );
}

#[test]
fn a_3d_convolution_torchlet_has_no_recording_of_says_its_workspace_is_estimated() {
    // no GPU lock: `fit` runs the program shapes only, in a child process, on no real GPU.
    let code = "import torch\nimport torch.nn as nn\nnet = nn.Sequential(nn.Conv3d(4, 16, 3, padding=1), nn.ConvTranspose3d(16, 4, 2, stride=2)).cuda()\nv = torch.randn(2, 4, 16, 32, 32, device='cuda')\nnet(v).sum().backward()\nw = torch.randn(8, 4, 3, 3, 3, device='cuda')\ny = torch.nn.functional.conv3d(torch.randn(1, 4, 9, 9, 9, device='cuda'), w)\n";
    let (ok, text) = super::conv::torchlet_py(&["fit", "--gpu", "H200"], code);
    assert!(ok, "{text}");
    // The first convolution is recorded (tests/parity/py_conv_more.py); the others are not.
    assert!(
        text.contains("note: cuDNN's workspace is estimated for 2 convolution shape(s)"),
        "{text}"
    );
    assert!(
        text.contains("conv3d F32 input [1, 4, 9, 9, 9] weight [8, 4, 3, 3, 3]"),
        "{text}"
    );
    assert!(
        text.contains("conv_transpose3d F32 input [2, 16, 16, 32, 32]"),
        "{text}"
    );
    assert!(!text.contains("input [2, 4, 16, 32, 32]"), "{text}");
}
