//! Sorting, selection, running sums, scatter and sampling (sort, argsort, topk, cumsum, flip,
//! scatter, multinomial) on every device: values against orders computed here, float64
//! gradients against finite differences, and PyTorch's errors. Their allocator events are
//! checked against PyTorch's by `py_sampling.py` (tests/memory/parity_python.rs) and by
//! `device_memory_is_pytorchs` below.
use crate::common;
use common::device_test;

use super::conv::{check_gradients, values, vec_of};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};

fn ints(v: &[i64], shape: &[usize], device: Device) -> Tensor {
    let v = v.iter().map(|&i| Scalar::Int(i)).collect();
    let o = TensorOptions::default().dtype(DType::I64).device(device);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

fn floats(v: &[f64], shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let v = v.iter().map(|&x| Scalar::Float(x)).collect();
    let o = TensorOptions::default().dtype(dtype).device(device);
    Tensor::from_values(v, shape.to_vec(), &o).unwrap()
}

device_test!(
    fn sort_orders_each_row_and_keeps_ties_in_input_order(device: Device) {
        let _gpu = common::exclusive();
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            let x = floats(
                &[3., 1., 2., 1., f64::NAN, -4., 0., 5.],
                &[2, 4],
                dtype,
                device,
            );
            let (v, i) = x.sort(-1, false).unwrap();
            let got = vec_of(&v);
            assert_eq!(&got[..4], &[1., 1., 2., 3.], "{device} {dtype:?}");
            assert_eq!(&got[4..7], &[-4., 0., 5.], "{device} {dtype:?}");
            assert!(got[7].is_nan(), "NaN sorts last ascending: {got:?}");
            assert_eq!(
                vec_of(&i),
                [1., 3., 2., 0., 1., 2., 3., 0.],
                "{device} {dtype:?}"
            );
            let (v, i) = x.sort(1, true).unwrap();
            assert!(vec_of(&v)[4].is_nan(), "NaN sorts first descending");
            assert_eq!(vec_of(&i)[..4], [0., 2., 1., 3.], "{device} {dtype:?}");
            // Along dim 0 of a [2, 4]: each column's two values.
            let (v, _) = x.sort(0, false).unwrap();
            let v = vec_of(&v);
            assert_eq!(v[..4], [3., -4., 0., 1.], "{device} {dtype:?}");
            assert!(v[4].is_nan() && v[5..] == [1., 2., 5.], "{v:?}");
            assert_eq!(x.argsort(-1, false).unwrap().dtype(), DType::I64);
        }
        let x = ints(&[5, -2, 9, 0], &[4], device);
        assert_eq!(vec_of(&x.sort(0, true).unwrap().0), [9., 5., 0., -2.]);
    }
);

device_test!(
    fn topk_picks_the_k_largest_or_smallest_first(device: Device) {
        let _gpu = common::exclusive();
        let x = floats(
            &[0.5, 3., -1., 3., 2., 7., 7., 0.],
            &[2, 4],
            DType::F32,
            device,
        );
        let (v, i) = x.topk(2, -1, true, true).unwrap();
        assert_eq!(v.shape(), vec![2, 2]);
        assert_eq!(vec_of(&v), [3., 3., 7., 7.]);
        assert_eq!(vec_of(&i), [1., 3., 1., 2.]);
        let (v, i) = x.topk(1, 0, false, true).unwrap();
        assert_eq!(vec_of(&v), [0.5, 3., -1., 0.]);
        assert_eq!(vec_of(&i), [0., 0., 0., 1.]);
        let (v, _) = x.topk(0, -1, true, true).unwrap();
        assert_eq!(v.shape(), vec![2, 0]);
        let err = x.topk(5, -1, true, true).unwrap_err();
        assert_eq!(err.to_string(), "selected index k out of range");
        // Every element of a long row, largest first.
        let long = values(&[3, 30000], 3, DType::F32, device, false);
        let (v, _) = long.topk(5, -1, true, true).unwrap();
        let row: Vec<f64> = vec_of(&long)[..30000].to_vec();
        let mut want = row.clone();
        want.sort_by(|a, b| b.partial_cmp(a).unwrap());
        assert_eq!(vec_of(&v)[..5], want[..5]);
    }
);

device_test!(
    fn sort_and_topk_gradients_go_back_to_the_picked_positions(device: Device) {
        check_gradients(device, &[&[3, 5]], |t| t[0].sort(1, true).unwrap().0);
        check_gradients(device, &[&[4, 6]], |t| {
            t[0].topk(3, -1, true, true).unwrap().0
        });
        check_gradients(device, &[&[4, 6]], |t| {
            t[0].topk(2, 0, false, true).unwrap().0
        });
    }
);

device_test!(
    fn cumsum_runs_along_a_dim_and_flip_reverses(device: Device) {
        let _gpu = common::exclusive();
        let x = floats(&[1., 2., 3., 4., 5., 6.], &[2, 3], DType::F32, device);
        assert_eq!(
            vec_of(&x.cumsum(1, None).unwrap()),
            [1., 3., 6., 4., 9., 15.]
        );
        assert_eq!(
            vec_of(&x.cumsum(0, None).unwrap()),
            [1., 2., 3., 5., 7., 9.]
        );
        assert_eq!(vec_of(&x.flip(&[-1]).unwrap()), [3., 2., 1., 6., 5., 4.]);
        assert_eq!(vec_of(&x.flip(&[0, 1]).unwrap()), [6., 5., 4., 3., 2., 1.]);
        let b = Tensor::from_values(
            [true, false, true]
                .iter()
                .map(|&v| Scalar::Bool(v))
                .collect(),
            vec![3],
            &TensorOptions::default().dtype(DType::Bool).device(device),
        )
        .unwrap();
        let c = b.cumsum(0, None).unwrap();
        assert_eq!((c.dtype(), vec_of(&c)), (DType::I64, vec![1., 1., 2.]));
        check_gradients(device, &[&[3, 4]], |t| t[0].cumsum(1, None).unwrap());
        check_gradients(device, &[&[3, 4]], |t| t[0].flip(&[0]).unwrap());
    }
);

device_test!(
    fn scatter_writes_src_at_the_index(device: Device) {
        let _gpu = common::exclusive();
        let x = Tensor::zeros(&[2, 3], &TensorOptions::default().device(device)).unwrap();
        let src = floats(&[1., 2., 3., 4., 5., 6.], &[2, 3], DType::F32, device);
        let index = ints(&[2, 0, 1, 0, 1, 2], &[2, 3], device);
        assert_eq!(
            vec_of(&x.scatter(1, &index, &src).unwrap()),
            [2., 3., 1., 4., 5., 6.]
        );
        let v = x
            .scatter_value(1, &ints(&[1], &[1, 1], device), Scalar::Float(9.))
            .unwrap();
        assert_eq!(vec_of(&v), [0., 9., 0., 0., 0., 0.]);
        let bad = ints(&[3], &[1, 1], device);
        let err = x.scatter(1, &bad, &src).unwrap_err().to_string();
        assert_eq!(err, "index 3 is out of bounds for dimension 1 with size 3");
        check_gradients(device, &[&[2, 3], &[2, 3]], |t| {
            let index = ints(&[2, 0, 1, 0, 1, 2], &[2, 3], t[0].device());
            t[0].scatter(1, &index, &t[1]).unwrap()
        });
    }
);

device_test!(
    fn multinomial_draws_only_categories_with_probability(device: Device) {
        let _gpu = common::exclusive();
        let p = floats(
            &[0., 0., 1., 0., 0.5, 0.5, 0., 0.],
            &[2, 4],
            DType::F32,
            device,
        );
        for _ in 0..5 {
            let s = vec_of(&p.multinomial(1, false).unwrap());
            assert_eq!(s[0], 2.);
            assert!(s[1] == 0. || s[1] == 1., "{s:?}");
        }
        let two = p.multinomial(2, false).unwrap();
        assert_eq!(two.shape(), vec![2, 2]);
        let mut row: Vec<f64> = vec_of(&two)[2..].to_vec();
        row.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(row, [0., 1.]);
        let bad = floats(&[0.5, -0.1], &[2], DType::F32, device);
        let err = bad.multinomial(1, false).unwrap_err().to_string();
        assert_eq!(
            err,
            "probability tensor contains either `inf`, `nan` or element < 0"
        );
        let zero = floats(&[0., 0.], &[1, 2], DType::F32, device);
        let err = zero.multinomial(1, false).unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid multinomial distribution (sum of probabilities <= 0)"
        );
        let err = p.multinomial(5, false).unwrap_err().to_string();
        assert_eq!(
            err,
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
        );
    }
);
