//! Convolutions, pooling and batch norm on every device: values against references written out
//! here in f64, float64 gradients against finite differences, PyTorch's errors, and the allocator
//! events of PyTorch's own recording script (`tests/data/record_conv.py`, run by torchlet shapes
//! only) against what PyTorch 2.11 allocated (`tests/data/torch_conv.json`).
use crate::common;
use common::device_test;

use serde_json::Value;
use torchlet_core::device::Device;
use torchlet_core::tensor::conv::ConvOptions;
use torchlet_core::tensor::conv_transpose::ConvTransposeOptions;
use torchlet_core::tensor::pool::{PoolOptions, Running};
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

/// Deterministic values in [-1, 1) of `shape`.
pub(crate) fn values(
    shape: &[usize],
    seed: usize,
    dtype: DType,
    device: Device,
    grad: bool,
) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n)
        .map(|i| Scalar::Float(((i * 7919 + seed * 104729) % 2000) as f64 / 1000.0 - 1.0))
        .collect();
    let o = TensorOptions::default()
        .dtype(dtype)
        .device(device)
        .requires_grad(grad);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

pub(crate) fn vec_of(t: &Tensor) -> Vec<f64> {
    t.to_vec_f64().unwrap()
}

pub(crate) fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

/// A convolution in f64 on the host, straight from the definition.
fn reference_conv(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    b: Option<&[f64]>,
    o: &ConvOptions,
) -> Vec<f64> {
    let [n, c, h, wd] = xs;
    let [k, cg, r, s] = ws;
    let out = |a: usize, size: usize, taps: usize| {
        (size + 2 * o.padding[a] - o.dilation[a] * (taps - 1) - 1) / o.stride[a] + 1
    };
    let (ho, wo) = (out(0, h, r), out(1, wd, s));
    let mut y = vec![0.0; n * k * ho * wo];
    for (i, v) in y.iter_mut().enumerate() {
        let (ow, oh, kk, nn) = (i % wo, i / wo % ho, i / (wo * ho) % k, i / (wo * ho * k));
        let first = kk / (k / o.groups) * cg;
        let mut acc = b.map_or(0.0, |b| b[kk]);
        for ci in 0..cg {
            for rr in 0..r {
                for ss in 0..s {
                    let ih =
                        (oh * o.stride[0] + rr * o.dilation[0]) as isize - o.padding[0] as isize;
                    let iw =
                        (ow * o.stride[1] + ss * o.dilation[1]) as isize - o.padding[1] as isize;
                    if ih < 0 || iw < 0 || ih >= h as isize || iw >= wd as isize {
                        continue;
                    }
                    let xi = ((nn * c + first + ci) * h + ih as usize) * wd + iw as usize;
                    acc += x[xi] * w[((kk * cg + ci) * r + rr) * s + ss];
                }
            }
        }
        *v = acc;
    }
    let _ = c;
    y
}

/// The geometries the value tests cover: stride, padding, dilation and groups.
fn geometries() -> Vec<([usize; 4], [usize; 4], ConvOptions)> {
    let o = |stride, padding, dilation, groups| ConvOptions {
        stride,
        padding,
        dilation,
        groups,
    };
    vec![
        ([2, 3, 6, 5], [4, 3, 3, 3], o([1, 1], [0, 0], [1, 1], 1)),
        ([1, 2, 7, 7], [3, 2, 3, 2], o([2, 1], [1, 2], [1, 1], 1)),
        ([2, 4, 6, 6], [4, 2, 3, 3], o([1, 1], [1, 1], [2, 1], 2)),
        ([1, 4, 5, 5], [8, 1, 3, 3], o([1, 1], [1, 1], [1, 1], 4)),
    ]
}

device_test!(
    fn conv2d_computes_the_definition(device: Device) {
        for (xs, ws, o) in geometries() {
            let x = values(&xs, 1, DType::F32, device, false);
            let w = values(&ws, 2, DType::F32, device, false);
            let b = values(&[ws[0]], 3, DType::F32, device, false);
            let y = x.conv2d(&w, Some(&b), &o).unwrap();
            let want = reference_conv(&vec_of(&x), xs, &vec_of(&w), ws, Some(&vec_of(&b)), &o);
            assert_close(
                &vec_of(&y),
                &want,
                1e-5,
                &format!("conv2d {xs:?} {ws:?} {o:?} on {device}"),
            );
        }
    }
);

/// `sum(f(inputs)²)`'s gradient against central differences, for every input, in float64.
pub(crate) fn check_gradients(
    device: Device,
    shapes: &[&[usize]],
    f: impl Fn(&[Tensor]) -> Tensor,
) {
    let inputs: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| values(s, i + 11, DType::F64, device, true))
        .collect();
    let loss_of = |ts: &[Tensor]| {
        let y = f(ts);
        y.mul(&y).unwrap().sum(None, false).unwrap()
    };
    loss_of(&inputs).backward(false).unwrap();
    for (which, t) in inputs.iter().enumerate() {
        let analytic = vec_of(&t.grad().unwrap());
        let base = vec_of(t);
        for i in 0..base.len() {
            let nudged = |delta: f64| {
                let mut vals = base.clone();
                vals[i] += delta;
                let o = TensorOptions::default().dtype(DType::F64).device(device);
                let moved = Tensor::from_values(
                    vals.into_iter().map(Scalar::Float).collect(),
                    t.shape(),
                    &o,
                )
                .unwrap();
                let mut ts: Vec<Tensor> = inputs.iter().map(|x| x.detach().unwrap()).collect();
                ts[which] = moved;
                vec_of(&loss_of(&ts))[0]
            };
            let eps = 1e-6;
            let numeric = (nudged(eps) - nudged(-eps)) / (2.0 * eps);
            assert!(
                (numeric - analytic[i]).abs() < 1e-5 * (1.0 + numeric.abs()),
                "input {which} [{i}]: {numeric} vs {} on {device}",
                analytic[i]
            );
        }
    }
}

device_test!(
    fn conv2d_gradients_match_finite_differences(device: Device) {
        for (xs, ws, o) in geometries().into_iter().take(3) {
            check_gradients(device, &[&xs, &ws, &[ws[0]]], |t| {
                t[0].conv2d(&t[1], Some(&t[2]), &o).unwrap()
            });
        }
    }
);

device_test!(
    fn conv1d_is_conv2d_over_a_height_of_one(device: Device) {
        let x = values(&[2, 3, 9], 1, DType::F32, device, false);
        let w = values(&[4, 3, 3], 2, DType::F32, device, false);
        let y = x.conv1d(&w, None, 2, 1, 1, 1).unwrap();
        assert_eq!(y.shape(), vec![2, 4, 5]);
        let o = ConvOptions {
            stride: [1, 2],
            padding: [0, 1],
            ..Default::default()
        };
        let want = reference_conv(
            &vec_of(&x),
            [2, 3, 1, 9],
            &vec_of(&w),
            [4, 3, 1, 3],
            None,
            &o,
        );
        assert_close(&vec_of(&y), &want, 1e-5, "conv1d");
    }
);

fn pool_options(k: usize, stride: usize, padding: usize) -> PoolOptions {
    PoolOptions {
        kernel: [k, k],
        stride: [stride, stride],
        padding: [padding, padding],
        dilation: [1, 1],
        ceil_mode: false,
    }
}

device_test!(
    fn pooling_takes_maxima_and_means(device: Device) {
        // One plane 0..16 as 4×4: 2×2 windows.
        let x = common::tensors::iota(&[1, 1, 4, 4], DType::F32, device);
        let (y, idx) = x.max_pool2d(&pool_options(2, 2, 0), true).unwrap();
        assert_eq!(vec_of(&y), vec![5.0, 7.0, 13.0, 15.0]);
        assert_eq!(vec_of(&idx.unwrap()), vec![5.0, 7.0, 13.0, 15.0]);
        let a = x.avg_pool2d(&pool_options(2, 2, 0), true, None).unwrap();
        assert_eq!(vec_of(&a), vec![2.5, 4.5, 10.5, 12.5]);
        // Padding 1 with a 3×3 window: count_include_pad divides by 9, else by the cells covered.
        let p = x.avg_pool2d(&pool_options(3, 2, 1), true, None).unwrap();
        assert_close(
            &vec_of(&p)[..1],
            &[(0.0 + 1.0 + 4.0 + 5.0) / 9.0],
            1e-6,
            "count_include_pad",
        );
        let q = x.avg_pool2d(&pool_options(3, 2, 1), false, None).unwrap();
        assert_eq!(vec_of(&q)[0], (0.0 + 1.0 + 4.0 + 5.0) / 4.0);
        // Adaptive to 3×3 of a 4×4 plane: windows [0,2), [1,3), [2,4) on each axis.
        let ad = x.adaptive_avg_pool2d([3, 3]).unwrap();
        assert_eq!(vec_of(&ad)[0], (0.0 + 1.0 + 4.0 + 5.0) / 4.0);
        assert_eq!(vec_of(&ad)[4], (5.0 + 6.0 + 9.0 + 10.0) / 4.0);
        let one = x.adaptive_avg_pool2d([1, 1]).unwrap();
        assert_eq!((one.shape(), vec_of(&one)), (vec![1, 1, 1, 1], vec![7.5]));
    }
);

device_test!(
    fn pooling_gradients_match_finite_differences(device: Device) {
        let shape: &[usize] = &[1, 2, 5, 5];
        check_gradients(device, &[shape], |t| {
            t[0].max_pool2d(&pool_options(3, 2, 1), false).unwrap().0
        });
        check_gradients(device, &[shape], |t| {
            t[0].avg_pool2d(&pool_options(3, 2, 1), false, None)
                .unwrap()
        });
        check_gradients(device, &[shape], |t| {
            t[0].adaptive_avg_pool2d([3, 2]).unwrap()
        });
    }
);

device_test!(
    fn batch_norm_normalises_each_channel_and_updates_the_running_statistics(device: Device) {
        let x = values(&[4, 3, 2, 2], 5, DType::F32, device, false);
        let o = TensorOptions::default().device(device);
        let (mean, var) = (
            Tensor::zeros(&[3], &o).unwrap(),
            Tensor::ones(&[3], &o).unwrap(),
        );
        let running = Running {
            mean: &mean,
            var: &var,
            momentum: 0.1,
        };
        let y = x.batch_norm(Some(running), None, None, true, 1e-5).unwrap();
        let (xv, yv) = (vec_of(&x), vec_of(&y));
        for c in 0..3 {
            let of = |v: &[f64]| -> Vec<f64> {
                (0..16).map(|i| v[(i / 4 * 3 + c) * 4 + i % 4]).collect()
            };
            let (xc, yc) = (of(&xv), of(&yv));
            let mu = xc.iter().sum::<f64>() / 16.0;
            let var_b = xc.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / 16.0;
            let want: Vec<f64> = xc
                .iter()
                .map(|v| (v - mu) / (var_b + 1e-5).sqrt())
                .collect();
            assert_close(&yc, &want, 1e-5, &format!("channel {c}"));
            assert_close(
                &[vec_of(&mean)[c], vec_of(&var)[c]],
                &[0.1 * mu, 0.9 + 0.1 * var_b * 16.0 / 15.0],
                1e-5,
                "running",
            );
        }
        // Evaluation normalises with the running statistics and leaves them alone.
        let before = vec_of(&mean);
        let e = x
            .batch_norm(
                Some(Running {
                    mean: &mean,
                    var: &var,
                    momentum: 0.1,
                }),
                None,
                None,
                false,
                1e-5,
            )
            .unwrap();
        assert_eq!(vec_of(&mean), before);
        let want0 = (xv[0] - before[0]) / (vec_of(&var)[0] + 1e-5).sqrt();
        assert_close(&vec_of(&e)[..1], &[want0], 1e-5, "evaluation");
    }
);

device_test!(
    fn batch_norm_gradients_match_finite_differences(device: Device) {
        check_gradients(device, &[&[3, 2, 2, 2], &[2], &[2]], |t| {
            t[0].batch_norm(None, Some(&t[1]), Some(&t[2]), true, 1e-5)
                .unwrap()
        });
    }
);

#[test]
fn bad_shapes_are_pytorchs_errors() {
    let o = TensorOptions::default();
    let t = |s: &[usize]| Tensor::zeros(s, &o).unwrap();
    let e = |r: torchlet_core::tensor::Result<Tensor>| r.unwrap_err().to_string();
    let d = ConvOptions::default();
    assert!(e(t(&[8, 3, 28, 28]).conv2d(&t(&[32, 1, 3, 3]), None, &d)).contains(
        "Given groups=1, weight of size [32, 1, 3, 3], expected input[8, 3, 28, 28] to have 1 channels, but got 3 channels instead"
    ));
    assert!(e(t(&[28, 28]).conv2d(&t(&[32, 1, 3, 3]), None, &d))
        .contains("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [28, 28]"));
    assert!(e(t(&[1, 1, 2, 2]).conv2d(&t(&[1, 1, 3, 3]), None, &d)).contains(
        "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't be greater than actual input size"
    ));
    assert!(e(t(&[1, 4, 5, 5]).conv2d(&t(&[3, 2, 3, 3]), None, &ConvOptions { groups: 2, ..d }))
        .contains("Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3, 3] instead"));
    assert!(
        e(t(&[1, 3, 5, 5]).conv2d(&t(&[4, 3, 3, 3]), Some(&t(&[2])), &d)).contains(
            "expected bias to be 1-dimensional with 4 elements, but got bias of size [2] instead"
        )
    );
    let half = Tensor::zeros(&[4, 3, 3, 3], &o.clone().dtype(DType::F16)).unwrap();
    assert!(e(t(&[1, 3, 5, 5]).conv2d(&half, None, &d)).contains(
        "Input type (torch.FloatTensor) and weight type (torch.HalfTensor) should be the same"
    ));
    assert!(e(t(&[1, 1, 4, 4]).max_pool2d(&pool_options(2, 2, 2), false).map(|p| p.0))
        .contains("pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"));
    assert!(e(t(&[1, 1, 1, 1])
        .max_pool2d(&pool_options(2, 2, 0), false)
        .map(|p| p.0))
    .contains(
        "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too small"
    ));
    assert!(e(t(&[1, 3]).batch_norm(None, None, None, true, 1e-5))
        .contains("Expected more than 1 value per channel when training"));
}

/// The recorded document.
fn recorded() -> Value {
    serde_json::from_str(include_str!("../data/torch_conv.json")).expect("recorded JSON parses")
}

/// The ops torchlet runs of the recording script.
const OPS: &str = "conv2d,max_pool2d,avg_pool2d,adaptive_avg_pool2d,batch_norm_train,group_norm,\
interpolate_nearest,interpolate_bilinear,rms_norm,rms_norm_weight,pad";

/// A record's events without segment allocations (which depend on what was cached before).
fn events(phase: &Value) -> Vec<(String, u64)> {
    phase
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e[0].as_str().unwrap().to_owned(), e[1].as_u64().unwrap()))
        .filter(|(a, _)| a != "segment_alloc")
        .collect()
}

#[test]
fn pytorchs_recording_script_records_pytorchs_events_under_torchlet() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("conv.json");
    let run = common::binary::torchlet()
        .args(["fit", "--gpu", "H100-80GB", "tests/data/record_conv.py"])
        .arg(&out)
        .arg(OPS)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{text}");
    let ours: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("the script wrote its output"))
            .unwrap();
    let doc = recorded();
    let want: Vec<&Value> = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| OPS.split(',').any(|op| r["case"]["op"] == op))
        .collect();
    let got = ours["records"].as_array().unwrap();
    assert_eq!(got.len(), want.len(), "one record per case");
    assert!(got.len() >= 57, "{} cases", got.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g["case"], w["case"]);
        assert_eq!(
            g["out"], w["out"],
            "output shape and strides of {}",
            w["case"]
        );
        assert_eq!(
            events(&g["forward"]),
            events(&w["forward"]),
            "forward of {}",
            w["case"]
        );
        assert_eq!(
            events(&g["backward"]),
            events(&w["backward"]),
            "backward of {}",
            w["case"]
        );
    }
}

/// Run `code` as a `.py` file with `torchlet` and `args` before it, on the test's GPU (real or
/// simulated); (success, stdout + stderr).
pub(crate) fn torchlet_py(args: &[&str], code: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.py");
    std::fs::write(&file, code).unwrap();
    let mut command = common::binary::torchlet();
    if !common::real_gpu() {
        command.env("TORCHLET_SIMULATE_CUDA", common::SIMULATED_GPU);
    }
    let run = command.args(args).arg(&file).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    (run.status.success(), text)
}

#[test]
fn pytorchs_mnist_example_trains_under_torchlet_run() {
    // The parity program (pytorch/examples' network at batch 64), as a user runs it.
    let mut command = common::binary::torchlet();
    if !common::real_gpu() {
        command.env("TORCHLET_SIMULATE_CUDA", common::SIMULATED_GPU);
    }
    let run = command
        .args(["run", "py_mnist_cnn.py"])
        .current_dir(common::binary::repo().join("tests/parity"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{text}");
    // Its shapes are recorded: no estimated workspace, so no note.
    assert!(!text.contains("estimated"), "{text}");
    let code = "import torch.nn as nn\nprint(nn.Conv2d(1, 32, 3, 1))\nprint(nn.BatchNorm2d(8))\n";
    let (ok, text) = torchlet_py(&["run"], code);
    assert!(ok, "{text}");
    assert!(
        text.contains("Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1))"),
        "{text}"
    );
    assert!(
        text.contains(
            "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
        ),
        "{text}"
    );
}

#[test]
fn a_convolution_torchlet_has_no_recording_of_says_its_workspace_is_estimated() {
    let code = "import torch\nimport torch.nn.functional as F\nx = torch.randn(3, 5, 17, 17, device='cuda')\nw = torch.randn(6, 5, 3, 3, device='cuda')\ny = F.conv2d(x, w)\n";
    let (ok, text) = torchlet_py(&["fit", "--gpu", "H200"], code);
    assert!(ok, "{text}");
    assert!(
        text.contains("note: cuDNN's workspace is estimated for 1 convolution shape(s)"),
        "{text}"
    );
    assert!(
        text.contains("conv2d F32 input [3, 5, 17, 17] weight [6, 5, 3, 3]"),
        "{text}"
    );
}

/// A transposed convolution in f64 from its definition: each input element spreads over the
/// output through the weight (`w` [C, K/g, R, S]).
fn reference_conv_transpose(
    x: &[f64],
    [n, c, h, w]: [usize; 4],
    wt: &[f64],
    [_, kg, r, s]: [usize; 4],
    o: &ConvTransposeOptions,
) -> (Vec<f64>, [usize; 4]) {
    let g = o.conv.groups;
    let (cg, k) = (c / g, kg * g);
    let size = |a: usize, i: usize, kk: usize| {
        (i - 1) * o.conv.stride[a] + o.conv.dilation[a] * (kk - 1) + o.output_padding[a] + 1
            - 2 * o.conv.padding[a]
    };
    let (ho, wo) = (size(0, h, r), size(1, w, s));
    let mut out = vec![0.0; n * k * ho * wo];
    for b in 0..n {
        for ch in 0..c {
            let group = ch / cg;
            for i in 0..h {
                for j in 0..w {
                    let v = x[((b * c + ch) * h + i) * w + j];
                    for kk in 0..kg {
                        for a in 0..r {
                            for bb in 0..s {
                                let oh = (i * o.conv.stride[0] + a * o.conv.dilation[0]) as isize
                                    - o.conv.padding[0] as isize;
                                let ow = (j * o.conv.stride[1] + bb * o.conv.dilation[1]) as isize
                                    - o.conv.padding[1] as isize;
                                if oh < 0 || ow < 0 || oh as usize >= ho || ow as usize >= wo {
                                    continue;
                                }
                                let ko = group * kg + kk;
                                out[((b * k + ko) * ho + oh as usize) * wo + ow as usize] +=
                                    v * wt[((ch * kg + kk) * r + a) * s + bb];
                            }
                        }
                    }
                }
            }
        }
    }
    (out, [n, k, ho, wo])
}

fn transposed_geometries() -> Vec<([usize; 4], [usize; 4], ConvTransposeOptions)> {
    let o =
        |stride: usize, padding: usize, output_padding: usize, dilation: usize, groups: usize| {
            ConvTransposeOptions {
                conv: ConvOptions {
                    stride: [stride, stride],
                    padding: [padding, padding],
                    dilation: [dilation, dilation],
                    groups,
                },
                output_padding: [output_padding, output_padding],
            }
        };
    vec![
        ([2, 3, 4, 5], [3, 2, 3, 3], o(1, 0, 0, 1, 1)),
        ([1, 4, 3, 3], [4, 3, 4, 4], o(2, 1, 0, 1, 1)),
        ([2, 4, 3, 4], [4, 1, 3, 3], o(2, 1, 1, 1, 2)),
        ([1, 2, 3, 3], [2, 2, 2, 2], o(1, 0, 0, 2, 1)),
    ]
}

device_test!(
    fn conv_transpose2d_computes_the_definition(device: Device) {
        for (xs, ws, o) in transposed_geometries() {
            let x = values(&xs, 1, DType::F32, device, false);
            let w = values(&ws, 2, DType::F32, device, false);
            let channels = ws[1] * o.conv.groups;
            let b = values(&[channels], 3, DType::F32, device, false);
            let y = x.conv_transpose2d(&w, Some(&b), &o).unwrap();
            let (mut want, shape) = reference_conv_transpose(&vec_of(&x), xs, &vec_of(&w), ws, &o);
            let per = shape[2] * shape[3];
            let bias = vec_of(&b);
            for (i, v) in want.iter_mut().enumerate() {
                *v += bias[i / per % channels];
            }
            assert_eq!(y.shape(), shape.to_vec(), "{o:?}");
            assert_close(&vec_of(&y), &want, 1e-5, "conv_transpose2d");
        }
    }
);

device_test!(
    fn conv_transpose2d_gradients_match_finite_differences(device: Device) {
        for (xs, ws, o) in transposed_geometries().into_iter().take(3) {
            let channels = ws[1] * o.conv.groups;
            check_gradients(device, &[&xs, &ws, &[channels]], |t| {
                t[0].conv_transpose2d(&t[1], Some(&t[2]), &o).unwrap()
            });
        }
        let o = ConvTransposeOptions {
            conv: ConvOptions {
                stride: [1, 2],
                padding: [0, 1],
                ..Default::default()
            },
            ..Default::default()
        };
        check_gradients(device, &[&[2, 3, 5], &[3, 2, 4]], |t| {
            t[0].conv_transpose1d(&t[1], None, &o).unwrap()
        });
    }
);

#[test]
fn bad_transposed_convolutions_are_pytorchs_errors() {
    let x = values(&[1, 4, 3, 3], 1, DType::F32, Device::Cpu, false);
    let w = values(&[3, 2, 3, 3], 2, DType::F32, Device::Cpu, false);
    let e = |r: torchlet_core::tensor::Result<Tensor>| r.unwrap_err().to_string();
    let o = ConvTransposeOptions::default();
    assert!(e(x.conv_transpose2d(&w, None, &o))
        .contains("expected input[1, 4, 3, 3] to have 3 channels"));
    let bad = ConvTransposeOptions {
        output_padding: [1, 1],
        ..ConvTransposeOptions::default()
    };
    let w4 = values(&[4, 2, 3, 3], 2, DType::F32, Device::Cpu, false);
    assert!(e(x.conv_transpose2d(&w4, None, &bad))
        .contains("output padding must be smaller than either stride or dilation"));
}
