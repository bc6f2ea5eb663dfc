//! Shape ops (cat, stack, split, chunk, expand, repeat) on every device and float dtype, their
//! views and copies, and PyTorch's errors from scripts, after which the session goes on.
use crate::common;
use common::{device_test, iota, outcome, values_of};

use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor, TensorOptions};
use torchlet_session::Session;

const FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

device_test!(
    fn cat_and_stack_copy_along_any_dim(device: Device) {
        for dtype in FLOATS {
            let a = iota(&[2, 3], dtype, device);
            let b = iota(&[2, 1], dtype, device)
                .add_scalar(Scalar::Int(10))
                .unwrap();
            let c = Tensor::cat(&[a.clone(), b.clone()], -1).unwrap();
            assert_eq!(c.shape(), vec![2, 4]);
            assert_eq!(
                values_of(&c),
                [0., 1., 2., 10., 3., 4., 5., 11.],
                "{device} {dtype:?}"
            );
            let r = Tensor::cat(&[a.clone(), a.clone()], 0).unwrap();
            assert_eq!(values_of(&r)[6..], values_of(&a)[..]);
            let s = Tensor::stack(&[a.clone(), a.clone()], 2).unwrap();
            assert_eq!(s.shape(), vec![2, 3, 2]);
            assert_eq!(values_of(&s)[..4], [0., 0., 1., 1.]);
            assert_ne!(s.storage_id(), a.storage_id());
        }
        // Mixed dtypes promote, as torch.cat does.
        let i = iota(&[2], DType::I64, device);
        let f = iota(&[2], DType::F32, device);
        assert_eq!(Tensor::cat(&[i, f], 0).unwrap().dtype(), DType::F32);
    }
);

device_test!(
    fn split_chunk_and_expand_are_views(device: Device) {
        let t = iota(&[5, 4], DType::F32, device);
        let parts = t.split(2, 0).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].shape(), vec![1, 4]);
        assert_eq!(values_of(&parts[1]), [8., 9., 10., 11., 12., 13., 14., 15.]);
        assert!(parts.iter().all(|p| p.storage_id() == t.storage_id()));
        let sized = t.split_with_sizes(&[1, 3], -1).unwrap();
        assert_eq!(values_of(&sized[0]), [0., 4., 8., 12., 16.]);
        let chunks = t.chunk(3, 1).unwrap();
        assert_eq!(chunks.len(), 2, "chunk takes ceil(4 / 3) = 2 columns each");
        assert_eq!(values_of(&chunks[1])[..2], [2., 3.]);
        let e = t.narrow(0, 1, 1).unwrap().expand(&[3, 4]).unwrap();
        assert_eq!(e.storage_id(), t.storage_id());
        assert_eq!(values_of(&e)[8..], [4., 5., 6., 7.]);
    }
);

device_test!(
    fn repeat_tiles_every_dim_and_adds_leading_ones(device: Device) {
        for dtype in FLOATS {
            let t = iota(&[2, 2], dtype, device);
            let r = t.repeat(&[2, 1, 2]).unwrap();
            assert_eq!(r.shape(), vec![2, 2, 4]);
            let expected = [0., 1., 0., 1., 2., 3., 2., 3.];
            assert_eq!(values_of(&r)[..8], expected, "{device} {dtype:?}");
            assert_eq!(values_of(&r)[8..], expected);
            assert_eq!(t.repeat(&[0, 3]).unwrap().numel(), 0);
        }
    }
);

device_test!(
    fn gradients_of_split_parts_meet_in_one_node(device: Device) {
        let opts = TensorOptions::default().device(device).requires_grad(true);
        let x = Tensor::ones(&[4, 2], &opts).unwrap();
        let parts = x.chunk(2, 0).unwrap();
        assert_eq!(parts[0].grad_fn_name().as_deref(), Some("SplitBackward0"));
        // Only the second part is used: the first part's gradient is zeros.
        parts[1]
            .mul_scalar(Scalar::Int(3))
            .unwrap()
            .sum(None, false)
            .unwrap()
            .backward(false)
            .unwrap();
        assert_eq!(
            values_of(&x.grad().unwrap()),
            [0., 0., 0., 0., 3., 3., 3., 3.]
        );
    }
);

device_test!(
    fn script_errors_are_pytorchs_and_the_session_goes_on(device: &str) {
        let (mut s, _) = Session::captured("<shape_ops>");
        let setup = format!(
        "let a = randn(4, 256, #{{device: \"{device}\"}}); let b = randn(4, 128, #{{device: \"{device}\"}});"
    );
        outcome(&mut s, &setup).unwrap();
        let cases = [
        ("cat([a, b], 0)", "RuntimeError", "Sizes of tensors must match except in dimension 0. Expected size 256 but got size 128 for tensor number 1 in the list."),
        ("cat([], 0)", "RuntimeError", "torch.cat(): expected a non-empty list of Tensors"),
        ("cat([a, 1], 0)", "TypeError", "cat(): argument 'tensors' must be a list of Tensors, not containing i64"),
        ("stack([a, b])", "RuntimeError", "stack expects each tensor to be equal size, but got [4, 256] at entry 0 and [4, 128] at entry 1"),
        ("a.split([1, 2], 0)", "RuntimeError", "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 0), but got split_sizes=[1, 2]"),
        ("a.expand(-1, 4, 256)", "RuntimeError", "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
        ("a.repeat(2)", "RuntimeError", "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
        ("a.chunk(0)", "RuntimeError", "chunk expects `chunks` to be greater than 0, got: 0"),
    ];
        for (code, kind, message) in cases {
            let (k, m) = outcome(&mut s, code).unwrap_err();
            assert_eq!(
                (k.as_str(), m.as_str()),
                (kind, message),
                "{code} on {device}"
            );
        }
        assert_eq!(outcome(&mut s, "cat([a, b], 1).shape").unwrap(), "[4, 384]");
        assert_eq!(
            outcome(&mut s, "a.expand(2, -1, -1).shape").unwrap(),
            "[2, 4, 256]"
        );
        assert_eq!(
            outcome(&mut s, "b.split(100, #{dim: 1}).len()").unwrap(),
            "2"
        );
    }
);
