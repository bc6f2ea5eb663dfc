//! `unfold`/`fold` (im2col/col2im) and `masked_scatter` on every device: values against
//! references written out here, float64 gradients against finite differences, PyTorch's errors,
//! and the block a result keeps when it is made like its input.
use crate::common;
use crate::conv::{assert_close, check_gradients, values, vec_of};
use common::device_test;

use torchlet_core::device::Device;
use torchlet_core::tensor::fold::Window;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn window(k: [usize; 2], d: [usize; 2], p: [usize; 2], s: [usize; 2]) -> Window {
    Window {
        kernel: k,
        dilation: d,
        padding: p,
        stride: s,
    }
}

/// im2col from the definition, in f64: rows (c, ki, kj), columns (bi, bj), zeros in the padding.
fn reference_unfold(x: &[f64], [n, c, h, w]: [usize; 4], win: &Window) -> Vec<f64> {
    let blocks = |a: usize, size: usize| {
        (size + 2 * win.padding[a] - win.dilation[a] * (win.kernel[a] - 1) - 1) / win.stride[a] + 1
    };
    let (bh, bw) = (blocks(0, h), blocks(1, w));
    let [kh, kw] = win.kernel;
    let mut out = Vec::with_capacity(n * c * kh * kw * bh * bw);
    for b in 0..n {
        for ch in 0..c {
            for ki in 0..kh {
                for kj in 0..kw {
                    for bi in 0..bh {
                        for bj in 0..bw {
                            let i = (bi * win.stride[0] + ki * win.dilation[0]) as isize
                                - win.padding[0] as isize;
                            let j = (bj * win.stride[1] + kj * win.dilation[1]) as isize
                                - win.padding[1] as isize;
                            let inside = i >= 0 && j >= 0 && (i as usize) < h && (j as usize) < w;
                            out.push(match inside {
                                true => x[((b * c + ch) * h + i as usize) * w + j as usize],
                                false => 0.0,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

fn windows() -> Vec<([usize; 4], Window)> {
    vec![
        ([2, 3, 5, 6], window([3, 3], [1, 1], [1, 1], [1, 1])),
        ([1, 2, 7, 7], window([2, 3], [2, 1], [0, 2], [2, 3])),
        ([2, 1, 4, 4], window([2, 2], [1, 1], [0, 0], [2, 2])),
    ]
}

device_test!(
    fn unfold_takes_each_block_as_a_column_and_fold_sums_them_back(device: Device) {
        for (xs, win) in windows() {
            let x = values(&xs, 1, DType::F32, device, false);
            let cols = x.im2col(win).unwrap();
            let want = reference_unfold(&vec_of(&x), xs, &win);
            assert_close(&vec_of(&cols), &want, 1e-6, "unfold");
            // fold(unfold(x)) multiplies each element by how many blocks cover it: fold(unfold(1)).
            let ones = Tensor::full(
                &xs,
                Scalar::Float(1.0),
                &TensorOptions::default().device(device),
            )
            .unwrap();
            let cover = ones
                .im2col(win)
                .unwrap()
                .col2im([xs[2], xs[3]], win)
                .unwrap();
            let back = cols.col2im([xs[2], xs[3]], win).unwrap();
            assert_eq!(back.shape(), xs.to_vec());
            let want: Vec<f64> = vec_of(&x)
                .iter()
                .zip(vec_of(&cover))
                .map(|(v, k)| v * k)
                .collect();
            assert_close(&vec_of(&back), &want, 1e-5, "fold");
        }
    }
);

device_test!(
    fn unfold_and_fold_gradients_match_finite_differences(device: Device) {
        for (xs, win) in windows().into_iter().take(2) {
            check_gradients(device, &[&xs], |t| t[0].im2col(win).unwrap());
            let cols = values(&xs, 3, DType::F64, device, false)
                .im2col(win)
                .unwrap()
                .shape();
            let plane = [xs[2], xs[3]];
            check_gradients(device, &[&cols], |t| t[0].col2im(plane, win).unwrap());
        }
    }
);

device_test!(
    fn a_smaller_result_keeps_the_block_it_was_made_in(device: Device) {
        // PyTorch's col2im makes its output like its input, then resizes it down.
        let win = window([3, 3], [2, 2], [1, 1], [2, 2]);
        let cols = values(&[2, 2 * 9, 31 * 31], 2, DType::F32, device, false);
        let folded = cols.col2im([64, 64], win).unwrap();
        assert_eq!(folded.shape(), vec![2, 2, 64, 64]);
        assert_eq!(folded.storage_nbytes(), cols.nbytes());
        let grown = values(&[1, 2, 8, 8], 2, DType::F32, device, false)
            .im2col(window([3, 3], [1, 1], [1, 1], [1, 1]))
            .unwrap();
        assert_eq!(grown.storage_nbytes(), grown.nbytes());
    }
);

#[test]
fn bad_windows_are_pytorchs_errors() {
    let x = values(&[1, 2, 4, 4], 1, DType::F32, Device::Cpu, false);
    let err = x
        .im2col(window([5, 5], [1, 1], [0, 0], [1, 1]))
        .unwrap_err();
    assert!(err.to_string().contains("calculated shape of the array of sliding blocks as (0, 0), but its components must be at least one"), "{err}");
    let err = x
        .im2col(window([0, 2], [1, 1], [0, 0], [1, 1]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("kernel size should be greater than zero"),
        "{err}"
    );
    let cols = values(&[1, 18, 1024], 1, DType::F32, Device::Cpu, false);
    let err = cols
        .col2im([64, 64], window([3, 3], [2, 2], [1, 1], [2, 2]))
        .unwrap_err();
    assert!(err.to_string().contains("expected size of input's dimension 2 to match the calculated number of sliding blocks 31 * 31 = 961, but got input.size(2)=1024."), "{err}");
    let err = values(&[1, 10, 4], 1, DType::F32, Device::Cpu, false)
        .col2im([3, 3], window([3, 3], [1, 1], [0, 0], [1, 1]))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("divisible by the product of kernel_size"),
        "{err}"
    );
}

fn mask(flags: &[bool], shape: &[usize], device: Device) -> Tensor {
    let o = TensorOptions::default().dtype(DType::Bool).device(device);
    Tensor::from_values(
        flags.iter().map(|&b| Scalar::Bool(b)).collect(),
        shape.to_vec(),
        &o,
    )
    .unwrap()
}

const FLAGS: [bool; 6] = [true, false, true, true, false, false];

device_test!(
    fn masked_scatter_fills_the_masks_places_in_order(device: Device) {
        let x = values(&[2, 3], 1, DType::F32, device, false);
        let src = values(&[4], 2, DType::F32, device, false);
        let scattered = x
            .masked_scatter(&mask(&FLAGS, &[2, 3], device), &src)
            .unwrap();
        let y = scattered.clone();
        let (xv, sv) = (vec_of(&x), vec_of(&src));
        let want = vec![sv[0], xv[1], sv[1], sv[2], xv[4], xv[5]];
        assert_close(&vec_of(&y), &want, 0.0, "masked_scatter");
        // A row mask broadcasts over the columns.
        let rows = mask(&[false, true], &[2, 1], device);
        let y = x.masked_scatter(&rows, &src).unwrap();
        let want = vec![xv[0], xv[1], xv[2], sv[0], sv[1], sv[2]];
        assert_close(&vec_of(&y), &want, 0.0, "masked_scatter with a row mask");
        x.masked_scatter_(&mask(&FLAGS, &[2, 3], device), &src)
            .unwrap();
        assert_close(&vec_of(&x), &vec_of(&scattered), 0.0, "in place");
    }
);

device_test!(
    fn masked_scatter_and_masked_select_gradients_match_finite_differences(device: Device) {
        let m = mask(&FLAGS, &[2, 3], device);
        check_gradients(device, &[&[2, 3], &[5]], |t| {
            t[0].masked_scatter(&m, &t[1]).unwrap()
        });
        check_gradients(device, &[&[2, 3]], |t| t[0].masked_select(&m).unwrap());
        let rows = mask(&[true, false], &[2, 1], device);
        check_gradients(device, &[&[1, 3]], |t| t[0].masked_select(&rows).unwrap());
    }
);

#[test]
fn masked_scatter_refuses_what_pytorch_refuses_and_keeps_its_inputs() {
    let x = values(&[2, 3], 1, DType::F32, Device::Cpu, false);
    let before = vec_of(&x);
    let short = values(&[2], 2, DType::F32, Device::Cpu, false);
    let err = x
        .masked_scatter_(&mask(&FLAGS, &[2, 3], Device::Cpu), &short)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("at least as many elements as the ones in mask"),
        "{err}"
    );
    let doubles = values(&[6], 2, DType::F64, Device::Cpu, false);
    let err = x
        .masked_scatter(&mask(&FLAGS, &[2, 3], Device::Cpu), &doubles)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("expected self and source to have same dtypes but got Float and Double"),
        "{err}"
    );
    let floats = values(&[2, 3], 3, DType::F32, Device::Cpu, false);
    let err = x.masked_scatter(&floats, &short).unwrap_err();
    assert!(
        err.to_string().contains("only supports boolean masks"),
        "{err}"
    );
    assert_eq!(vec_of(&x), before);
}
