//! Index and mask ops (where, masked_fill, triu/tril, index_select, gather, embedding, randint)
//! on every device and float dtype, and PyTorch's errors, checked before any kernel runs.
use crate::common;
use common::{device_test, iota, opts, outcome, values_of};

use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor};
use torchlet_session::Session;

const FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

fn ints(v: &[i64], shape: &[usize], device: Device) -> Tensor {
    let v = v.iter().map(|&i| Scalar::Int(i)).collect();
    Tensor::from_values(v, shape.to_vec(), &opts(DType::I64, device)).unwrap()
}

fn bools(v: &[bool], shape: &[usize], device: Device) -> Tensor {
    let v = v.iter().map(|&b| Scalar::Bool(b)).collect();
    Tensor::from_values(v, shape.to_vec(), &opts(DType::Bool, device)).unwrap()
}

device_test!(
    fn where_masked_fill_and_triangles(device: Device) {
        let _gpu = common::exclusive();
        for dtype in FLOATS {
            let a = iota(&[2, 3], dtype, device);
            let b = Tensor::full(&[3], Scalar::Int(-1), &opts(dtype, device)).unwrap();
            let c = bools(&[true, false, true, false, true, false], &[2, 3], device);
            let w = Tensor::where_(&c, &a, &b).unwrap();
            assert_eq!(
                values_of(&w),
                [0., -1., 2., -1., 4., -1.],
                "{device} {dtype:?}"
            );
            let row = bools(&[false, true, false], &[3], device);
            let f = a
                .masked_fill(&row, Scalar::Float(f64::NEG_INFINITY))
                .unwrap();
            assert_eq!(values_of(&f)[1], f64::NEG_INFINITY);
            assert_eq!(values_of(&f)[3], 3.0);
            let sq = iota(&[2, 3, 3], dtype, device);
            let up = sq.triangle(1, true).unwrap();
            assert_eq!(values_of(&up)[9..], [0., 10., 11., 0., 0., 14., 0., 0., 0.]);
            let low = sq.triangle(-1, false).unwrap();
            assert_eq!(values_of(&low)[..9], [0., 0., 0., 3., 0., 0., 6., 7., 0.]);
        }
        let x = iota(&[2, 2], DType::F32, device);
        let w = Tensor::where_scalar(
            &bools(&[true, false], &[2], device),
            &x,
            Scalar::Float(0.5),
            true,
        );
        assert_eq!(values_of(&w.unwrap()), [0., 0.5, 2., 0.5]);
        x.masked_fill_(&bools(&[true, false], &[2], device), Scalar::Int(7))
            .unwrap();
        assert_eq!(values_of(&x), [7., 1., 7., 3.]);
    }
);

device_test!(
    fn a_zero_dim_cpu_mask_fills_all_or_nothing_on_every_device(device: Device) {
        let _gpu = common::exclusive();
        // A 0-d mask may stay on the CPU; on the H200 its host pointer once reached the fill
        // kernel and lost the CUDA context for the rest of the session.
        let x = iota(&[2, 3], DType::F32, device);
        let yes = bools(&[true], &[], Device::Cpu);
        let no = bools(&[false], &[], Device::Cpu);
        assert_eq!(
            values_of(&x.masked_fill(&yes, Scalar::Int(5)).unwrap()),
            [5.0; 6]
        );
        assert_eq!(
            values_of(&x.masked_fill(&no, Scalar::Int(5)).unwrap()),
            [0., 1., 2., 3., 4., 5.]
        );
        x.masked_fill_(&yes, Scalar::Int(-1)).unwrap();
        assert_eq!(values_of(&x), [-1.0; 6], "{device}");
        let sum = (x.sum(None, false).unwrap()).item().unwrap();
        assert_eq!(
            sum,
            Scalar::Float(-6.0),
            "{device}: the device still computes"
        );
    }
);

device_test!(
    fn index_select_gather_and_embedding(device: Device) {
        let _gpu = common::exclusive();
        for dtype in FLOATS {
            let t = iota(&[3, 4], dtype, device);
            let rows = t.index_select(0, &ints(&[2, 0, 2], &[3], device)).unwrap();
            assert_eq!(
                values_of(&rows)[..4],
                [8., 9., 10., 11.],
                "{device} {dtype:?}"
            );
            let cols = t.index_select(-1, &ints(&[3, 1], &[2], device)).unwrap();
            assert_eq!(values_of(&cols), [3., 1., 7., 5., 11., 9.]);
            let g = t
                .gather(1, &ints(&[0, 3, 1, 1, 2, 0], &[3, 2], device))
                .unwrap();
            assert_eq!(values_of(&g), [0., 3., 5., 5., 10., 8.]);
            let e = Tensor::embedding(&ints(&[2, 2, 0, 1], &[2, 2], device), &t).unwrap();
            assert_eq!(e.shape(), vec![2, 2, 4]);
            assert_eq!(values_of(&e)[4..8], [8., 9., 10., 11.]);
        }
    }
);

device_test!(
    fn backwards_add_up_repeated_indices(device: Device) {
        let _gpu = common::exclusive();
        for dtype in FLOATS {
            let w = iota(&[4, 2], dtype, device);
            w.set_requires_grad(true).unwrap();
            let idx = ints(&[3, 0, 3, 3], &[2, 2], device);
            let e = Tensor::embedding(&idx, &w).unwrap();
            let sel = w.index_select(0, &ints(&[1, 1], &[2], device)).unwrap();
            let gat = w.gather(0, &ints(&[2, 2], &[1, 2], device)).unwrap();
            let loss = e
                .sum(None, false)
                .unwrap()
                .add(&sel.sum(None, false).unwrap())
                .unwrap();
            let loss = loss.add(&gat.sum(None, false).unwrap()).unwrap();
            loss.backward(false).unwrap();
            assert_eq!(
                values_of(&w.grad().unwrap()),
                [1., 1., 2., 2., 1., 1., 3., 3.],
                "{device} {dtype:?}"
            );
        }
    }
);

device_test!(
    fn zero_dim_inputs_pick_their_one_element(device: Device) {
        let _gpu = common::exclusive();
        let x = Tensor::full(&[], Scalar::Float(2.5), &opts(DType::F64, device)).unwrap();
        x.set_requires_grad(true).unwrap();
        let zero = ints(&[0], &[], device);
        let g = x.gather(0, &zero).unwrap();
        let s = x.index_select(0, &zero).unwrap();
        assert_eq!((values_of(&g), values_of(&s)), (vec![2.5], vec![2.5]));
        g.add(&s).unwrap().backward(false).unwrap();
        assert_eq!(values_of(&x.grad().unwrap()), [2.0]);
    }
);

device_test!(
    fn randint_stays_in_range(device: Device) {
        let _gpu = common::exclusive();
        let t = Tensor::randint(-3, 5, &[1000], &opts(DType::I64, device)).unwrap();
        assert_eq!(t.dtype(), DType::I64);
        let v = values_of(&t);
        assert!(v.iter().all(|&x| (-3.0..5.0).contains(&x)));
        assert!(v.contains(&-3.0) && v.contains(&4.0));
    }
);

device_test!(
    fn script_errors_are_pytorchs_and_the_session_goes_on(device: &str) {
        // It compares cuda:0's total before and after, so every test here takes the lock: none may
        // allocate meanwhile (on the H200 a neighbour's 3584 B showed up as a leak).
        let _gpu = common::exclusive();
        let (mut s, _) = Session::captured("<index_ops>");
        let setup = format!(
        "let d = #{{device: \"{device}\"}}; let w = randn(10, 4, #{{device: \"{device}\", requires_grad: true}}); \
             let i = tensor([1, 10], #{{device: \"{device}\", dtype: \"int64\"}}); let m = w > 0;"
    );
        outcome(&mut s, &setup).unwrap();
        let ftype = if device == "cpu" {
            "torch.FloatTensor"
        } else {
            "torch.cuda.FloatTensor"
        };
        let wrong_dtype = format!("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {ftype} instead (while checking arguments for embedding)");
        let cases = [
        ("embedding(i, w)", "IndexError", "index out of range in self".to_string()),
        ("embedding(i.float(), w)", "RuntimeError", wrong_dtype),
        ("index_select(w, 0, i)", "IndexError", "index out of range in self".to_string()),
        ("index_select(w, 0, i.float())", "RuntimeError", "index_select(): Expected dtype int32 or int64 for index".to_string()),
        ("gather(w, 0, i.unsqueeze(1))", "IndexError", "index 10 is out of bounds for dimension 0 with size 10".to_string()),
        ("gather(w, 0, i.to(\"int32\").unsqueeze(1))", "RuntimeError", "gather(): Expected dtype int64 for index".to_string()),
        ("where(w, w, w)", "RuntimeError", "where expected condition to be a boolean tensor, but got a tensor with dtype Float".to_string()),
        ("w.masked_fill(w, 0)", "RuntimeError", "masked_fill_ only supports boolean masks, but got mask with dtype Float".to_string()),
        ("triu(w[0])", "RuntimeError", "triu: input tensor must have at least 2 dimensions".to_string()),
    ];
        let before = outcome(&mut s, "[w.tolist(), i.tolist(), cuda::memory_allocated()]").unwrap();
        for (code, kind, message) in &cases {
            let (k, m) = outcome(&mut s, code).unwrap_err();
            assert_eq!(
                (k.as_str(), m.as_str()),
                (*kind, message.as_str()),
                "{code} on {device}"
            );
        }
        let after = outcome(&mut s, "[w.tolist(), i.tolist(), cuda::memory_allocated()]").unwrap();
        assert_eq!(
            before, after,
            "every tensor alive before an error is alive after it"
        );
        outcome(&mut s, "embedding(i - 1, w).sum().backward();").unwrap();
        assert_eq!(outcome(&mut s, "w.grad.sum().item()").unwrap(), "8.0");
        assert_eq!(
            outcome(&mut s, "where(m, w, 0.0).shape").unwrap(),
            "[10, 4]"
        );
    }
);
