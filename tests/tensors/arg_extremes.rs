//! `argmin` and `argmax` on every device: first index of the extreme, NaN as the extreme, whole
//! and along a dim (negative dims, keepdim, strided views, every dtype), and the empty errors.
use crate::common;
use common::device_test;

use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn tensor(vals: &[f64], shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let v = vals.iter().map(|&x| Scalar::Float(x)).collect();
    let o = TensorOptions::default().dtype(dtype).device(device);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

/// The indices a result holds, checking it is int64.
fn idx(t: Tensor) -> Vec<i64> {
    assert_eq!(t.dtype(), DType::I64, "arg reductions write int64");
    t.to_vec_f64()
        .unwrap()
        .into_iter()
        .map(|v| v as i64)
        .collect()
}

/// argmin (`min`) or argmax of `t`, over all elements or along `dim`.
fn arg(t: &Tensor, min: bool, dim: Option<isize>, keepdim: bool) -> Tensor {
    let r = if min {
        t.argmin(dim, keepdim)
    } else {
        t.argmax(dim, keepdim)
    };
    r.unwrap()
}

device_test!(
    fn ties_give_the_first_index_and_nan_counts_as_the_extreme(device: Device) {
        for (min, ties) in [(true, [3.0, 1.0, 2.0, 1.0]), (false, [1.0, 3.0, 2.0, 3.0])] {
            let t = tensor(&ties, &[4], DType::F32, device);
            assert_eq!(
                idx(arg(&t, min, None, false)),
                [1],
                "ties, min={min} on {device}"
            );
            assert_eq!(
                idx(arg(&t, min, Some(0), false)),
                [1],
                "ties dim, min={min} on {device}"
            );
            let nan = tensor(
                &[2.0, f64::NAN, -9.0, f64::NAN, 9.0],
                &[5],
                DType::F32,
                device,
            );
            assert_eq!(
                idx(arg(&nan, min, None, false)),
                [1],
                "NaN, min={min} on {device}"
            );
        }
        // A NaN in one row only: the other row keeps its smallest.
        let rows = tensor(
            &[5.0, f64::NAN, 0.0, 4.0, -1.0, -1.0],
            &[2, 3],
            DType::F64,
            device,
        );
        assert_eq!(
            idx(rows.argmin(Some(1), false).unwrap()),
            [1, 1],
            "rows on {device}"
        );
        assert_eq!(
            idx(rows.argmin(Some(0), false).unwrap()),
            [1, 0, 1],
            "cols on {device}"
        );
    }
);

device_test!(
    fn argmin_along_dims_of_every_sign_with_and_without_keepdim(device: Device) {
        // [[4, 1, 1], [0, 5, 0]]
        let t = tensor(&[4.0, 1.0, 1.0, 0.0, 5.0, 0.0], &[2, 3], DType::F32, device);
        let whole = t.argmin(None, false).unwrap();
        assert_eq!(whole.shape(), Vec::<usize>::new());
        assert_eq!(
            whole.item().unwrap(),
            Scalar::Int(3),
            "flat index on {device}"
        );
        assert_eq!(t.argmin(None, true).unwrap().shape(), vec![1, 1]);
        for (d, want) in [
            (1, vec![1, 0]),
            (-1, vec![1, 0]),
            (0, vec![1, 0, 1]),
            (-2, vec![1, 0, 1]),
        ] {
            assert_eq!(
                idx(t.argmin(Some(d), false).unwrap()),
                want,
                "dim {d} on {device}"
            );
            let kept = t.argmin(Some(d), true).unwrap();
            let mut shape = vec![2, 3];
            shape[d.rem_euclid(2) as usize] = 1;
            assert_eq!(kept.shape(), shape, "keepdim {d} on {device}");
            assert_eq!(idx(kept), want, "keepdim {d} values on {device}");
        }
        // Through a transposed view: the rows of t are the columns of t.t().
        let tt = t.t().unwrap();
        assert_eq!(
            idx(tt.argmin(Some(0), false).unwrap()),
            [1, 0],
            "strided on {device}"
        );
        assert_eq!(
            idx(tt.argmin(None, false).unwrap()),
            [1],
            "strided flat on {device}"
        );
        // A 0-d tensor has one element, at index 0, along dim 0 or -1 too.
        let s = tensor(&[7.0], &[], DType::F32, device);
        for dim in [None, Some(0), Some(-1)] {
            assert_eq!(
                idx(s.argmin(dim, false).unwrap()),
                [0],
                "0-d {dim:?} on {device}"
            );
        }
        assert!(
            t.argmin(Some(2), false).is_err(),
            "dim out of range on {device}"
        );
    }
);

device_test!(
    fn argmin_and_argmax_of_every_dtype(device: Device) {
        for dtype in DType::ALL {
            let vals: &[f64] = if dtype == DType::Bool {
                &[1.0, 0.0, 1.0, 0.0]
            } else if dtype == DType::U8 {
                &[3.0, 0.0, 250.0, 0.0]
            } else {
                &[3.0, -2.0, 100.0, -2.0]
            };
            let t = tensor(vals, &[2, 2], dtype, device);
            let what = format!("{dtype:?} on {device}");
            assert_eq!(idx(t.argmin(None, false).unwrap()), [1], "argmin {what}");
            assert_eq!(
                idx(t.argmin(Some(1), false).unwrap()),
                [1, 1],
                "argmin(1) {what}"
            );
            assert_eq!(
                idx(t.argmin(Some(0), false).unwrap()),
                [0, 0],
                "argmin(0) {what}"
            );
            let max_at = if dtype == DType::Bool { 0 } else { 2 };
            assert_eq!(
                idx(t.argmax(None, false).unwrap()),
                [max_at],
                "argmax {what}"
            );
        }
    }
);

device_test!(
    fn argmin_of_nothing_is_an_error_that_says_to_give_a_dim(device: Device) {
        let o = TensorOptions::default().device(device);
        let empty = Tensor::zeros(&[0], &o).unwrap();
        let e = empty.argmin(None, false).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "argmin(): Expected reduction dim to be specified for input.numel() == 0"
            ),
            "{e} on {device}"
        );
        let e = empty.argmax(None, false).unwrap_err().to_string();
        assert!(e.starts_with("argmax(): "), "{e} on {device}");
        let rows = Tensor::zeros(&[2, 0], &o).unwrap();
        assert!(
            rows.argmin(Some(1), false).is_err(),
            "empty dim on {device}"
        );
    }
);
