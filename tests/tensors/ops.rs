//! Tensor ops against values computed in f64, one body per behaviour run on every device.
use crate::common;
use common::{device_test, opts, sample_values};

use torchlet_core::device::{BinaryOp, Device};
use torchlet_core::tensor::{DType, Scalar, Tensor};

fn tensor(vals: &[f64], shape: &[usize], dtype: DType, device: Device) -> Tensor {
    let v = vals.iter().map(|&x| Scalar::Float(x)).collect();
    Tensor::from_values(v, shape.to_vec(), &opts(dtype, device)).unwrap()
}

/// A float32 tensor of `shape` with `sample_values(.., salt)`, and those values as the tensor holds them.
fn data(shape: &[usize], salt: usize, device: Device) -> (Tensor, Vec<f64>) {
    let n = shape.iter().product();
    let t = tensor(&sample_values(n, salt), shape, DType::F32, device);
    let v = t.to_vec_f64().unwrap();
    (t, v)
}

fn assert_close(actual: &Tensor, expected: &[f64], rtol: f64, what: &str) {
    let a = actual.to_vec_f64().unwrap();
    assert_eq!(a.len(), expected.len(), "{what}: element count");
    for (i, (x, y)) in a.iter().zip(expected).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= rtol * y.abs().max(1.0);
        assert!(
            ok,
            "{what}: element {i} is {x}, expected {y} (device {})",
            actual.device()
        );
    }
}

/// Row-major index → broadcast source index.
fn bindex(i: usize, out: &[usize], src: &[usize]) -> usize {
    let mut rest = i;
    let mut idx = 0;
    let mut stride = 1;
    let extra = out.len() - src.len();
    let mut coords = vec![0; out.len()];
    for d in (0..out.len()).rev() {
        coords[d] = rest % out[d];
        rest /= out[d];
    }
    for d in (0..src.len()).rev() {
        let c = if src[d] == 1 { 0 } else { coords[d + extra] };
        idx += c * stride;
        stride *= src[d];
    }
    idx
}

device_test!(
    fn binary_ops_broadcast_and_match_f64(device: Device) {
        let (a, av) = data(&[4, 1, 3], 1, device);
        let (b, bv) = data(&[5, 3], 2, device);
        let out = [4usize, 5, 3];
        let n = 60;
        let pick = |f: fn(f64, f64) -> f64| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    f(
                        av[bindex(i, &out, &[4, 1, 3])],
                        bv[bindex(i, &out, &[5, 3])],
                    )
                })
                .collect()
        };
        let r = a.add(&b).unwrap();
        assert_eq!(r.shape(), out.to_vec());
        assert_close(&r, &pick(|x, y| x + y), 1e-6, "add");
        assert_close(&a.sub(&b).unwrap(), &pick(|x, y| x - y), 1e-6, "sub");
        assert_close(&a.mul(&b).unwrap(), &pick(|x, y| x * y), 1e-6, "mul");
        assert_close(&a.div(&b).unwrap(), &pick(|x, y| x / y), 1e-6, "div");
        let pa = a.abs().unwrap();
        assert_close(
            &pa.pow(&b).unwrap(),
            &pick(|x, y| x.abs().powf(y)),
            1e-5,
            "pow",
        );
    }
);

device_test!(
    fn row_broadcasts_of_every_stride_pattern(device: Device) {
        for (sa, sb) in [
            ([3usize, 4], [3usize, 1]),
            ([3, 1], [3, 4]),
            ([600, 300], [600, 1]),
            ([1, 300], [600, 300]),
        ] {
            let (a, av) = data(&sa, 18, device);
            let (b, bv) = data(&sb, 19, device);
            let out = [sa[0].max(sb[0]), sa[1].max(sb[1])];
            let n = out[0] * out[1];
            let expected: Vec<f64> = (0..n)
                .map(|i| av[bindex(i, &out, &sa)] * bv[bindex(i, &out, &sb)])
                .collect();
            assert_close(&a.mul(&b).unwrap(), &expected, 1e-6, "broadcast mul");
        }
        let (a, av) = data(&[4, 6], 20, device);
        let (b, bv) = data(&[6, 4], 21, device);
        let expected: Vec<f64> = (0..24).map(|i| av[(i % 4) * 6 + i / 4] - bv[i]).collect();
        assert_close(
            &a.t().unwrap().sub(&b).unwrap(),
            &expected,
            1e-6,
            "transposed operand",
        );
    }
);

device_test!(
    fn large_and_strided_operands_take_every_kernel_path(device: Device) {
        let (a, av) = data(&[512, 300], 3, device);
        let (b, bv) = data(&[512, 300], 4, device);
        assert_close(
            &a.add(&b).unwrap(),
            &av.iter().zip(&bv).map(|(x, y)| x + y).collect::<Vec<_>>(),
            1e-6,
            "large add",
        );
        assert_close(
            &a.exp().unwrap(),
            &av.iter().map(|x| x.exp()).collect::<Vec<_>>(),
            1e-6,
            "large exp",
        );
        let at = a.t().unwrap();
        assert!(!at.is_contiguous());
        let expected: Vec<f64> = (0..300 * 512)
            .map(|i| av[(i % 512) * 300 + i / 512] * 2.0)
            .collect();
        assert_close(
            &at.mul_scalar(Scalar::Int(2)).unwrap(),
            &expected,
            1e-6,
            "strided mul",
        );
        assert_close(
            &at.contiguous().unwrap(),
            &expected.iter().map(|x| x / 2.0).collect::<Vec<_>>(),
            0.0,
            "contiguous",
        );
        let total: f64 = av.iter().sum();
        assert_close(&a.sum(None, false).unwrap(), &[total], 1e-6, "large sum");
    }
);

device_test!(
    fn strided_copies_of_half_precision_keep_every_value(device: Device) {
        // A transposed copy to the same dtype moves elements, so each one (subnormals, -0.0, ±inf and
        // NaN too) must come out as it went in.
        let specials = [
            0.0,
            -0.0,
            6.0e-8,
            -6.0e-8,
            1.0e-40,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let (a, _) = data(&[64, 48], 6, device);
        let mut v = a.to_vec_f64().unwrap();
        v[..specials.len()].copy_from_slice(&specials);
        v[specials.len()] = f64::NAN;
        for dtype in [DType::F16, DType::BF16] {
            let x = tensor(&v, &[64, 48], DType::F32, device)
                .to_dtype(dtype)
                .unwrap();
            let xv = x.to_vec_f64().unwrap();
            let expected: Vec<f64> = (0..64 * 48).map(|i| xv[(i % 64) * 48 + i / 64]).collect();
            let copied = x.t().unwrap().contiguous().unwrap();
            assert_eq!(copied.dtype(), dtype);
            let got = copied.to_vec_f64().unwrap();
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                assert!(
                    g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan()),
                    "{dtype:?} element {i}: {g} after the copy, {e} before (device {device})"
                );
            }
        }
    }
);

/// `v` (dense over `shape`) read through the view that `permute(perm)` makes, in row-major order.
fn permuted(v: &[f64], shape: &[usize], perm: &[usize]) -> Vec<f64> {
    let dense: Vec<usize> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    let (out_shape, out_strides): (Vec<usize>, Vec<usize>) =
        perm.iter().map(|&d| (shape[d], dense[d])).unzip();
    (0..v.len())
        .map(|i| {
            let (mut rest, mut offset) = (i, 0);
            for d in (0..out_shape.len()).rev() {
                offset += rest % out_shape[d] * out_strides[d];
                rest /= out_shape[d];
            }
            v[offset]
        })
        .collect()
}

device_test!(
    fn transposed_copies_of_every_shape_and_dtype_move_each_element(device: Device) {
        // Transposes of at least 32x32 go through the GPU's shared-memory tiles: sizes that are not
        // whole tiles, batches, a source row pitch wider than the rows, and every element size.
        let dtypes = [
            DType::F32,
            DType::F64,
            DType::F16,
            DType::I64,
            DType::I32,
            DType::U8,
            DType::Bool,
        ];
        for dtype in dtypes {
            let modulus = if dtype == DType::Bool { 2 } else { 251 };
            let make = |shape: &[usize]| {
                let n: usize = shape.iter().product();
                let v: Vec<f64> = (0..n).map(|i| (i * 7919 % modulus) as f64).collect();
                (tensor(&v, shape, dtype, device), v)
            };
            let check = |got: Tensor, expected: Vec<f64>, what: &str| {
                assert!(
                    got.is_contiguous(),
                    "{what} {dtype:?} on {device}: not contiguous"
                );
                assert_eq!(got.dtype(), dtype);
                let g = got.to_vec_f64().unwrap();
                let wrong = g.iter().zip(&expected).position(|(a, b)| a != b);
                assert_eq!(
                    wrong, None,
                    "{what} {dtype:?} on {device}: first wrong element"
                );
            };
            let (x, v) = make(&[33, 70]);
            check(
                x.t().unwrap().contiguous().unwrap(),
                permuted(&v, &[33, 70], &[1, 0]),
                "33x70 .t()",
            );
            let (x, v) = make(&[97, 129]);
            check(
                x.t().unwrap().contiguous().unwrap(),
                permuted(&v, &[97, 129], &[1, 0]),
                "97x129 .t()",
            );
            let (x, v) = make(&[3, 45, 100]);
            let expected = permuted(&v, &[3, 45, 100], &[0, 2, 1]);
            check(
                x.permute(&[0, 2, 1]).unwrap().contiguous().unwrap(),
                expected,
                "permute(0, 2, 1)",
            );
            let (x, v) = make(&[64, 200]);
            let columns: Vec<f64> = (0..64 * 40).map(|i| v[i / 40 * 200 + 7 + i % 40]).collect();
            let narrowed = x
                .narrow(1, 7, 40)
                .unwrap()
                .t()
                .unwrap()
                .contiguous()
                .unwrap();
            check(
                narrowed,
                permuted(&columns, &[64, 40], &[1, 0]),
                "narrow(1, 7, 40).t()",
            );
        }
    }
);

device_test!(
    fn contiguous_ops_reach_every_element_of_every_block_shape(device: Device) {
        // The GPU's contiguous kernels give each block 256 threads of one 16-byte vector (1024
        // elements a block of 4-byte dtypes, 512 of 8-byte, 2048 of 2-byte and 4096 of uint8), and the
        // last block the elements past the last vector: sizes below one vector, at and either side of a
        // block's share, and with a partial last block.
        // Every dtype but bool: the expected values below are integer arithmetic.
        let dtypes = DType::ALL.into_iter().filter(|&d| d != DType::Bool);
        let sizes = [
            1,
            7,
            9,
            511,
            513,
            1023,
            1024,
            1025,
            2047,
            2049,
            4095,
            4096,
            4111,
            3 * 4096 + 8 + 3,
        ];
        for dtype in dtypes.clone() {
            for n in sizes {
                let what = format!("{dtype:?} n={n}");
                // Small integers, exact in every dtype and in uint8 after the ops below.
                let av: Vec<f64> = (0..n).map(|i| ((i * 37) % 50) as f64).collect();
                let bv: Vec<f64> = (0..n).map(|i| ((i * 11 + 5) % 50) as f64).collect();
                let a = tensor(&av, &[n], dtype, device);
                let b = tensor(&bv, &[n], dtype, device);
                let sum: Vec<f64> = av.iter().zip(&bv).map(|(x, y)| x + y).collect();
                assert_close(&a.add(&b).unwrap(), &sum, 0.0, &format!("{what} add"));
                let tripled: Vec<f64> = av.iter().map(|x| x * 3.0).collect();
                let scaled = a.mul_scalar(Scalar::Int(3)).unwrap();
                assert_close(&scaled, &tripled, 0.0, &format!("{what} mul_scalar"));
                let less: Vec<f64> = av
                    .iter()
                    .zip(&bv)
                    .map(|(x, y)| (x < y) as u8 as f64)
                    .collect();
                let lt = a.compare(&b, BinaryOp::Lt).unwrap();
                assert_eq!(lt.dtype(), DType::Bool, "{what} lt dtype");
                assert_close(&lt, &less, 0.0, &format!("{what} lt"));
                if dtype != DType::U8 {
                    let neg: Vec<f64> = av.iter().map(|x| -x).collect();
                    assert_close(&a.neg().unwrap(), &neg, 0.0, &format!("{what} neg"));
                }
                // In place: the output is an input, read before it is written.
                a.add_(&b).unwrap();
                assert_close(&a, &sum, 0.0, &format!("{what} add_"));
            }
        }
    }
);

device_test!(
    fn scalar_ops_on_either_side(device: Device) {
        let (a, av) = data(&[2, 3], 5, device);
        let m = |f: &dyn Fn(f64) -> f64| av.iter().map(|&x| f(x)).collect::<Vec<_>>();
        assert_close(
            &a.add_scalar(Scalar::Float(1.5)).unwrap(),
            &m(&|x| x + 1.5),
            1e-6,
            "add_scalar",
        );
        assert_close(
            &a.sub_scalar(Scalar::Int(2)).unwrap(),
            &m(&|x| x - 2.0),
            1e-6,
            "sub_scalar",
        );
        assert_close(
            &a.mul_scalar(Scalar::Float(-3.0)).unwrap(),
            &m(&|x| x * -3.0),
            1e-6,
            "mul_scalar",
        );
        assert_close(
            &a.div_scalar(Scalar::Int(4)).unwrap(),
            &m(&|x| x / 4.0),
            1e-6,
            "div_scalar",
        );
        assert_close(
            &a.rsub_scalar(Scalar::Int(1)).unwrap(),
            &m(&|x| 1.0 - x),
            1e-6,
            "rsub",
        );
        assert_close(
            &a.rdiv_scalar(Scalar::Int(2)).unwrap(),
            &m(&|x| 2.0 / x),
            1e-6,
            "rdiv",
        );
        assert_close(&a.neg().unwrap(), &m(&|x| -x), 0.0, "neg");
    }
);

device_test!(
    fn unary_ops_match_f64(device: Device) {
        let (a, av) = data(&[3, 7], 6, device);
        let pos = a.abs().unwrap().add_scalar(Scalar::Float(0.1)).unwrap();
        let pv = pos.to_vec_f64().unwrap();
        let m = |v: &[f64], f: &dyn Fn(f64) -> f64| v.iter().map(|&x| f(x)).collect::<Vec<_>>();
        assert_close(&a.exp().unwrap(), &m(&av, &f64::exp), 1e-6, "exp");
        assert_close(&pos.log().unwrap(), &m(&pv, &f64::ln), 1e-6, "log");
        assert_close(&pos.sqrt().unwrap(), &m(&pv, &f64::sqrt), 1e-6, "sqrt");
        assert_close(&a.abs().unwrap(), &m(&av, &f64::abs), 0.0, "abs");
        assert_close(&a.relu().unwrap(), &m(&av, &|x| x.max(0.0)), 0.0, "relu");
        assert_close(
            &a.sigmoid().unwrap(),
            &m(&av, &|x| 1.0 / (1.0 + (-x).exp())),
            1e-6,
            "sigmoid",
        );
        assert_close(&a.tanh().unwrap(), &m(&av, &f64::tanh), 1e-6, "tanh");
        assert_close(&a.sin().unwrap(), &m(&av, &f64::sin), 1e-6, "sin");
        assert_close(&a.cos().unwrap(), &m(&av, &f64::cos), 1e-6, "cos");
        assert_close(
            &a.clamp(Some(-1.0), Some(2.0)).unwrap(),
            &m(&av, &|x| x.clamp(-1.0, 2.0)),
            0.0,
            "clamp",
        );
        assert_close(
            &a.clamp(None, Some(0.5)).unwrap(),
            &m(&av, &|x| x.min(0.5)),
            0.0,
            "clamp max",
        );
        assert_close(
            &a.pow_scalar(3.0).unwrap(),
            &m(&av, &|x| x.powi(3)),
            1e-6,
            "pow_scalar",
        );
        assert_close(
            &pos.pow_scalar(-0.5).unwrap(),
            &m(&pv, &|x| x.powf(-0.5)),
            1e-6,
            "pow_scalar neg",
        );
        assert!(a.clamp(None, None).is_err());
    }
);

device_test!(
    fn reductions_whole_and_along_a_dim(device: Device) {
        let (a, av) = data(&[3, 4], 7, device);
        let row = |r: usize| &av[r * 4..r * 4 + 4];
        let col = |c: usize| (0..3).map(|r| av[r * 4 + c]).collect::<Vec<_>>();
        let total: f64 = av.iter().sum();
        assert_close(&a.sum(None, false).unwrap(), &[total], 1e-6, "sum");
        assert_close(&a.mean(None, false).unwrap(), &[total / 12.0], 1e-6, "mean");
        let s1 = a.sum(Some(1), false).unwrap();
        assert_eq!(s1.shape(), vec![3]);
        assert_close(
            &s1,
            &(0..3).map(|r| row(r).iter().sum()).collect::<Vec<f64>>(),
            1e-6,
            "sum dim 1",
        );
        let s0 = a.sum(Some(0), true).unwrap();
        assert_eq!(s0.shape(), vec![1, 4]);
        assert_close(
            &s0,
            &(0..4).map(|c| col(c).iter().sum()).collect::<Vec<f64>>(),
            1e-6,
            "sum dim 0",
        );
        let mx = av.iter().cloned().fold(f64::MIN, f64::max);
        let mn = av.iter().cloned().fold(f64::MAX, f64::min);
        assert_close(&a.max(None, false).unwrap(), &[mx], 0.0, "max");
        assert_close(&a.min(None, false).unwrap(), &[mn], 0.0, "min");
        let m1 = a.max(Some(-1), false).unwrap();
        assert_close(
            &m1,
            &(0..3)
                .map(|r| row(r).iter().cloned().fold(f64::MIN, f64::max))
                .collect::<Vec<_>>(),
            0.0,
            "max dim",
        );
        let argmax = av
            .iter()
            .enumerate()
            .fold(0, |b, (i, &x)| if x > av[b] { i } else { b });
        assert_eq!(
            a.argmax(None, false).unwrap().item().unwrap(),
            Scalar::Int(argmax as i64)
        );
        let am = a.argmax(Some(0), false).unwrap();
        assert_eq!(am.dtype(), DType::I64);
        let expected: Vec<f64> = (0..4)
            .map(|c| {
                let v = col(c);
                v.iter()
                    .enumerate()
                    .fold(0, |b, (i, &x)| if x > v[b] { i } else { b }) as f64
            })
            .collect();
        assert_close(&am, &expected, 0.0, "argmax dim");
        let ints = Tensor::arange(1.0, 5.0, 1.0, &opts(DType::I64, device)).unwrap();
        let s = ints.sum(None, false).unwrap();
        assert_eq!(
            (s.dtype(), s.item().unwrap()),
            (DType::I64, Scalar::Int(10))
        );
        assert!(ints
            .mean(None, false)
            .unwrap_err()
            .to_string()
            .contains("Got: Long"));
    }
);

device_test!(
    fn softmax_and_log_softmax_rows_match_f64(device: Device) {
        let (a, av) = data(&[2, 5], 8, device);
        let mut sm = Vec::new();
        let mut lsm = Vec::new();
        for r in 0..2 {
            let row = &av[r * 5..r * 5 + 5];
            let z: f64 = row.iter().map(|x| x.exp()).sum();
            sm.extend(row.iter().map(|x| x.exp() / z));
            lsm.extend(row.iter().map(|x| x - z.ln()));
        }
        assert_close(&a.softmax(-1).unwrap(), &sm, 1e-6, "softmax");
        assert_close(&a.log_softmax(1).unwrap(), &lsm, 1e-6, "log_softmax");
        let col = a.softmax(0).unwrap().sum(Some(0), false).unwrap();
        assert_close(&col, &[1.0; 5], 1e-6, "softmax dim 0 sums to 1");
    }
);

fn naive_matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    out
}

device_test!(
    fn matmul_follows_pytorch_shapes_and_values(device: Device) {
        let (a, av) = data(&[3, 4], 9, device);
        let (b, bv) = data(&[4, 5], 10, device);
        let c = a.matmul(&b).unwrap();
        assert_eq!(c.shape(), vec![3, 5]);
        assert_close(&c, &naive_matmul(&av, &bv, 3, 4, 5), 1e-5, "mm");
        let (v, vv) = data(&[4], 11, device);
        assert_close(
            &a.matmul(&v).unwrap(),
            &naive_matmul(&av, &vv, 3, 4, 1),
            1e-5,
            "mv",
        );
        assert_close(
            &v.matmul(&b).unwrap(),
            &naive_matmul(&vv, &bv, 1, 4, 5),
            1e-5,
            "vm",
        );
        let dot: f64 = vv.iter().map(|x| x * x).sum();
        let d = v.matmul(&v).unwrap();
        assert_eq!(d.dim(), 0);
        assert_close(&d, &[dot], 1e-5, "dot");
        // A transposed operand and a broadcast batch.
        let bt = b.t().unwrap().contiguous().unwrap().t().unwrap();
        assert_close(
            &a.matmul(&bt).unwrap(),
            &naive_matmul(&av, &bv, 3, 4, 5),
            1e-5,
            "mm strided",
        );
        let (batch, batchv) = data(&[2, 3, 4], 12, device);
        let r = batch.matmul(&b).unwrap();
        assert_eq!(r.shape(), vec![2, 3, 5]);
        let mut expected = naive_matmul(&batchv[..12], &bv, 3, 4, 5);
        expected.extend(naive_matmul(&batchv[12..], &bv, 3, 4, 5));
        assert_close(&r, &expected, 1e-5, "batched");
        let f64s = a.to_dtype(DType::F64).unwrap();
        assert_close(
            &f64s.matmul(&b.to_dtype(DType::F64).unwrap()).unwrap(),
            &naive_matmul(&av, &bv, 3, 4, 5),
            1e-12,
            "mm f64",
        );
        let e = a.matmul(&a).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x4)"
        );
    }
);

device_test!(
    fn views_share_memory_and_index_correctly(device: Device) {
        let (a, av) = data(&[2, 3, 4], 13, device);
        let p = a.permute(&[2, 0, 1]).unwrap();
        assert_eq!(p.shape(), vec![4, 2, 3]);
        let expected: Vec<f64> = (0..24)
            .map(|i| {
                let (k, rest) = (i / 6, i % 6);
                let (x, y) = (rest / 3, rest % 3);
                av[x * 12 + y * 4 + k]
            })
            .collect();
        assert_close(&p.contiguous().unwrap(), &expected, 0.0, "permute");
        assert_eq!(p.storage_id(), a.storage_id());
        assert_close(
            &a.index(1).unwrap().index(-1).unwrap(),
            &av[20..24],
            0.0,
            "index",
        );
        assert_close(
            &a.narrow(2, 1, 2)
                .unwrap()
                .index(0)
                .unwrap()
                .index(0)
                .unwrap(),
            &av[1..3],
            0.0,
            "narrow",
        );
        assert_eq!(a.unsqueeze(1).unwrap().shape(), vec![2, 1, 3, 4]);
        assert_eq!(a.unsqueeze(-1).unwrap().shape(), vec![2, 3, 4, 1]);
        assert_eq!(
            a.unsqueeze(0).unwrap().squeeze(None).unwrap().shape(),
            vec![2, 3, 4]
        );
        assert_eq!(a.squeeze(Some(0)).unwrap().shape(), vec![2, 3, 4]);
        assert_eq!(a.flatten().unwrap().shape(), vec![24]);
        assert_eq!(a.reshape(&[-1, 4]).unwrap().shape(), vec![6, 4]);
        assert_eq!(a.transpose(0, 2).unwrap().shape(), vec![4, 3, 2]);
        let err = a.transpose(0, 1).unwrap().view(&[-1]).unwrap_err();
        assert!(err.to_string().starts_with("view size is not compatible"));
        let copied = a.transpose(0, 1).unwrap().reshape(&[-1]).unwrap();
        assert_ne!(copied.storage_id(), a.storage_id());
        assert_eq!(a.index(2).unwrap_err().kind(), "IndexError");
        assert_eq!(
            a.index(2).unwrap_err().to_string(),
            "index 2 is out of bounds for dimension 0 with size 2"
        );
        assert!(a
            .narrow(0, 1, 5)
            .unwrap_err()
            .to_string()
            .contains("exceeds dimension size"));
        assert_eq!(a.unsqueeze(4).unwrap_err().kind(), "IndexError");
        assert!(a.t().is_err());
    }
);

device_test!(
    fn type_promotion_follows_pytorch(device: Device) {
        let i = Tensor::arange(1.0, 4.0, 1.0, &opts(DType::I64, device)).unwrap();
        let i32s = Tensor::arange(1.0, 4.0, 1.0, &opts(DType::I32, device)).unwrap();
        let f = Tensor::ones(&[3], &opts(DType::F32, device)).unwrap();
        let h = Tensor::ones(&[3], &opts(DType::F16, device)).unwrap();
        let bf = Tensor::ones(&[3], &opts(DType::BF16, device)).unwrap();
        let b = Tensor::ones(&[3], &opts(DType::Bool, device)).unwrap();
        assert_eq!(
            i.add_scalar(Scalar::Float(0.5)).unwrap().dtype(),
            DType::F32
        );
        assert_eq!(i.add_scalar(Scalar::Int(2)).unwrap().dtype(), DType::I64);
        assert_eq!(i32s.mul_scalar(Scalar::Int(2)).unwrap().dtype(), DType::I32);
        assert_eq!(i.div(&i).unwrap().dtype(), DType::F32);
        assert_eq!(i.add(&i32s).unwrap().dtype(), DType::I64);
        assert_eq!(i.add(&f).unwrap().dtype(), DType::F32);
        assert_eq!(h.add(&f).unwrap().dtype(), DType::F32);
        assert_eq!(h.add(&bf).unwrap().dtype(), DType::F32);
        assert_eq!(
            h.mul_scalar(Scalar::Float(2.0)).unwrap().dtype(),
            DType::F16
        );
        assert_eq!(b.add(&b).unwrap().dtype(), DType::Bool);
        assert_eq!(b.add_scalar(Scalar::Int(1)).unwrap().dtype(), DType::I64);
        assert!(b.sub(&b).is_err() && b.neg().is_err());
        assert_eq!(i.exp().unwrap().dtype(), DType::F32);
        let zero_dim_f64 =
            Tensor::full(&[], Scalar::Float(0.5), &opts(DType::F64, device)).unwrap();
        assert_eq!(i.add(&zero_dim_f64).unwrap().dtype(), DType::F64);
        assert_eq!(f.add(&zero_dim_f64).unwrap().dtype(), DType::F32);
        assert_close(
            &i.div(&i32s.add_scalar(Scalar::Int(1)).unwrap()).unwrap(),
            &[0.5, 2.0 / 3.0, 0.75],
            1e-6,
            "int div",
        );
    }
);

device_test!(
    fn creation_functions_fill_as_pytorch(device: Device) {
        // Holds the GPU lock so the seeding test's generators are not drawn from meanwhile.
        let (_g, _) = common::gpu();
        let o = opts(DType::F32, device);
        assert_close(
            &Tensor::full(&[2, 2], Scalar::Float(2.5), &o).unwrap(),
            &[2.5; 4],
            0.0,
            "full",
        );
        assert_close(&Tensor::ones(&[3], &o).unwrap(), &[1.0; 3], 0.0, "ones");
        assert_close(
            &Tensor::arange(1.0, 2.0, 0.25, &o).unwrap(),
            &[1.0, 1.25, 1.5, 1.75],
            0.0,
            "arange",
        );
        assert_close(
            &Tensor::arange(5.0, 0.0, -2.0, &o).unwrap(),
            &[5.0, 3.0, 1.0],
            0.0,
            "arange down",
        );
        assert!(Tensor::arange(0.0, 1.0, 0.0, &o).is_err());
        assert_close(
            &Tensor::linspace(-1.0, 1.0, 5, &o).unwrap(),
            &[-1.0, -0.5, 0.0, 0.5, 1.0],
            0.0,
            "linspace",
        );
        assert_close(
            &Tensor::eye(2, Some(3), &o).unwrap(),
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0],
            0.0,
            "eye",
        );
        let u = Tensor::rand(&[100_000], &o).unwrap().to_vec_f64().unwrap();
        assert!(u.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = u.iter().sum::<f64>() / u.len() as f64;
        assert!((mean - 0.5).abs() < 0.01, "uniform mean {mean}");
        let n = Tensor::randn(&[200_000], &o).unwrap().to_vec_f64().unwrap();
        let mean = n.iter().sum::<f64>() / n.len() as f64;
        let var = n.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n.len() as f64;
        assert!(
            mean.abs() < 0.01 && (var - 1.0).abs() < 0.02,
            "normal mean {mean} var {var}"
        );
        assert!(Tensor::randn(&[2], &opts(DType::I64, device)).is_err());
        let like = Tensor::zeros(&[2, 3], &opts(DType::F64, device))
            .unwrap()
            .ones_like()
            .unwrap();
        assert_eq!(
            (like.shape(), like.dtype(), like.device()),
            (vec![2, 3], DType::F64, device)
        );
    }
);

device_test!(
    fn manual_seed_makes_random_tensors_repeat(device: Device) {
        // Serialised with every other user of the generators through the GPU lock.
        let (_g, _) = common::gpu();
        let o = opts(DType::F32, device);
        torchlet_core::tensor::manual_seed(7);
        let a = Tensor::randn(&[300], &o).unwrap().to_vec_f64().unwrap();
        let b = Tensor::randn(&[300], &o).unwrap().to_vec_f64().unwrap();
        torchlet_core::tensor::manual_seed(7);
        let c = Tensor::randn(&[300], &o).unwrap().to_vec_f64().unwrap();
        assert_eq!(a, c);
        assert_ne!(a, b);
    }
);

device_test!(
    fn dtype_conversions_round_and_truncate(device: Device) {
        let t = tensor(&[1.7, -2.7, 0.1], &[3], DType::F32, device);
        assert_close(
            &t.to_dtype(DType::I64).unwrap(),
            &[1.0, -2.0, 0.0],
            0.0,
            "to int64",
        );
        let h = t.to_dtype(DType::F16).unwrap();
        assert_eq!(h.element_size(), 2);
        assert_close(
            &h,
            &[1.7001953125, -2.69921875, 0.0999755859375],
            0.0,
            "to float16",
        );
        assert_close(
            &t.to_dtype(DType::Bool).unwrap(),
            &[1.0, 1.0, 1.0],
            0.0,
            "to bool",
        );
        assert_eq!(
            t.index(0).unwrap().item().unwrap(),
            Scalar::Float(1.7f32 as f64)
        );
        assert!(t
            .item()
            .unwrap_err()
            .to_string()
            .contains("a Tensor with 3 elements cannot be converted to Scalar"));
        assert_eq!(t.to_dtype(DType::F32).unwrap().storage_id(), t.storage_id());
    }
);

device_test!(
    fn in_place_ops_write_through_views(device: Device) {
        let (a, av) = data(&[2, 3], 14, device);
        let (b, bv) = data(&[3], 15, device);
        let ptr = a.data_ptr();
        a.add_(&b).unwrap();
        assert_eq!(a.data_ptr(), ptr);
        let expect: Vec<f64> = (0..6).map(|i| av[i] + bv[i % 3]).collect();
        assert_close(&a, &expect, 1e-6, "add_");
        a.mul_scalar_(Scalar::Int(2)).unwrap();
        assert_close(
            &a,
            &expect.iter().map(|x| x * 2.0).collect::<Vec<_>>(),
            1e-6,
            "mul_scalar_",
        );
        a.index(1).unwrap().fill_(Scalar::Float(7.0)).unwrap();
        assert_close(&a.index(1).unwrap(), &[7.0; 3], 0.0, "fill_ through a view");
        a.zero_().unwrap();
        assert_close(&a, &[0.0; 6], 0.0, "zero_");
        let e = b.add_(&a).unwrap_err();
        assert_eq!(
            e.to_string(),
            "output with shape [3] doesn't match the broadcast shape [2, 3]"
        );
        let ints = Tensor::ones(&[3], &opts(DType::I64, device)).unwrap();
        assert_eq!(
            ints.add_(&b).unwrap_err().to_string(),
            "result type Float can't be cast to the desired output type Long"
        );
    }
);

device_test!(
    fn losses_match_f64(device: Device) {
        let (x, xv) = data(&[4, 3], 16, device);
        let (y, yv) = data(&[4, 3], 17, device);
        let mse = xv
            .iter()
            .zip(&yv)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            / 12.0;
        assert_close(&x.mse_loss(&y).unwrap(), &[mse], 1e-6, "mse_loss");
        let targets = Tensor::from_values(
            vec![
                Scalar::Int(2),
                Scalar::Int(0),
                Scalar::Int(1),
                Scalar::Int(2),
            ],
            vec![4],
            &opts(DType::I64, device),
        )
        .unwrap();
        let t = [2usize, 0, 1, 2];
        let ce = (0..4)
            .map(|r| {
                let row = &xv[r * 3..r * 3 + 3];
                let z: f64 = row.iter().map(|v| v.exp()).sum();
                z.ln() - row[t[r]]
            })
            .sum::<f64>()
            / 4.0;
        assert_close(
            &x.cross_entropy(&targets, -100).unwrap(),
            &[ce],
            1e-6,
            "cross_entropy",
        );
        // Row 1 ignored (its target is ignore_index): the mean of the other three.
        let some_ignored = Tensor::from_values(
            [2, 7, 1, 2].map(Scalar::Int).to_vec(),
            vec![4],
            &opts(DType::I64, device),
        )
        .unwrap();
        let ce_rows: Vec<f64> = (0..4)
            .map(|r| {
                let row = &xv[r * 3..r * 3 + 3];
                let z: f64 = row.iter().map(|v| v.exp()).sum();
                z.ln() - row[[2, 0, 1, 2][r]]
            })
            .collect();
        let ce_counted = (ce_rows[0] + ce_rows[2] + ce_rows[3]) / 3.0;
        assert_close(
            &x.cross_entropy(&some_ignored, 7).unwrap(),
            &[ce_counted],
            1e-6,
            "cross_entropy with ignore_index",
        );
        let bad = Tensor::full(&[4], Scalar::Int(3), &opts(DType::I64, device)).unwrap();
        let e = x.cross_entropy(&bad, -100).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            ("IndexError", "Target 3 is out of bounds.")
        );
    }
);

#[test]
fn errors_read_like_pytorch() {
    let devices = common::devices();
    let (gpu, cpu) = (devices[1], devices[0]);
    let a = Tensor::ones(&[2, 3], &opts(DType::F32, gpu)).unwrap();
    let b = Tensor::ones(&[2, 3], &opts(DType::F32, cpu)).unwrap();
    let e = a.add(&b).unwrap_err();
    assert_eq!(e.to_string(), "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!");
    assert_eq!(b.mul(&a).unwrap_err().to_string(), e.to_string());
    let c = Tensor::ones(&[2, 4], &opts(DType::F32, cpu)).unwrap();
    assert_eq!(
        b.add(&c).unwrap_err().to_string(),
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"
    );
    let m1 = Tensor::ones(&[2, 3], &opts(DType::F32, cpu)).unwrap();
    let m2 = Tensor::ones(&[4, 5], &opts(DType::F32, cpu)).unwrap();
    assert_eq!(
        m1.matmul(&m2).unwrap_err().to_string(),
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    );
    // A CPU scalar tensor acts as a number next to a GPU tensor.
    let s = Tensor::full(&[], Scalar::Float(2.0), &opts(DType::F32, cpu)).unwrap();
    assert_close(&a.mul(&s).unwrap(), &[2.0; 6], 0.0, "gpu * cpu scalar");
    assert_eq!(a.mul(&s).unwrap().device(), gpu);
}

#[test]
fn a_pending_interrupt_stops_ops_and_clears() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let devices = common::devices();
    // Interrupt flags are per thread: this test's flag cannot stop the other tests.
    let handle = std::thread::spawn(move || {
        let flag = Arc::new(AtomicBool::new(false));
        torchlet_core::tensor::set_interrupt_flag(flag.clone());
        for device in devices {
            let x = Tensor::ones(&[4], &opts(DType::F32, device)).unwrap();
            flag.store(true, Ordering::SeqCst);
            let e = x.mul_scalar(Scalar::Int(2)).unwrap_err();
            assert_eq!(e.kind(), "KeyboardInterrupt");
            assert!(Tensor::zeros(&[2], &opts(DType::F32, device)).is_err());
            flag.store(false, Ordering::SeqCst);
            assert_close(
                &x.mul_scalar(Scalar::Int(2)).unwrap(),
                &[2.0; 4],
                0.0,
                "after the interrupt",
            );
        }
    });
    handle.join().unwrap();
}

// GELU (both forms) and SiLU against values computed independently in float64 with Python's
// math module, in f32 and f64, contiguous and strided; integer input is refused as PyTorch does.
device_test!(
    fn gelu_and_silu_match_reference_values(device: Device) {
        // python3 -c "import math; g=lambda x: 0.5*x*(1+math.erf(x/math.sqrt(2))); print([g(x) for x in (-3.0,-0.5,0.25,1.0,4.0)])"
        let erf = [
            -0.00404969409489031,
            -0.15426876936299344,
            0.14967658142073093,
            0.8413447460685429,
            3.9998733150326675,
        ];
        // ... 0.5*x*(1+math.tanh(math.sqrt(2/math.pi)*(x+0.044715*x**3))) ...
        let tanh = [
            -0.0036373920817729943,
            -0.15428599017485606,
            0.149675350701685,
            0.8411919906082768,
            3.9999297540518075,
        ];
        // ... x/(1+math.exp(-x)) ...
        let silu = [
            -0.14227761953270035,
            -0.1887703343990727,
            0.14054412522144952,
            0.7310585786300049,
            3.928055160151634,
        ];
        let xs = [-3.0, -0.5, 0.25, 1.0, 4.0];
        for (dtype, rtol) in [(DType::F32, 1e-6), (DType::F64, 1e-12)] {
            let x = tensor(&xs, &[5], dtype, device);
            assert_close(&x.gelu("none").unwrap(), &erf, rtol, "gelu");
            assert_close(&x.gelu("tanh").unwrap(), &tanh, rtol, "gelu tanh");
            assert_close(&x.silu().unwrap(), &silu, rtol, "silu");
            // A strided view (every other element of a longer tensor) takes the general path.
            let mut long = Vec::new();
            for v in xs {
                long.extend([v, 100.0]);
            }
            let strided = tensor(&long, &[5, 2], dtype, device).select(1, 0).unwrap();
            assert_close(&strided.gelu("none").unwrap(), &erf, rtol, "strided gelu");
            assert_close(&strided.silu().unwrap(), &silu, rtol, "strided silu");
        }
        let ints =
            Tensor::from_values(vec![Scalar::Int(1)], vec![1], &opts(DType::I64, device)).unwrap();
        let err = ints.gelu("none").unwrap_err().to_string();
        assert_eq!(err, "\"GeluKernelImpl\" not implemented for 'Long'");
        let err = ints.silu().unwrap_err().to_string();
        assert_eq!(err, "\"silu\" not implemented for 'Long'");
        let x = tensor(&xs, &[5], DType::F32, device);
        let err = x.gelu("fast").unwrap_err().to_string();
        assert!(
            err.contains("approximate argument must be either none or tanh"),
            "{err}"
        );
    }
);

/// Layer norm of each row of `x` [rows, n] in f64, with optional weight and bias.
fn naive_layer_norm(x: &[f64], n: usize, w: Option<&[f64]>, b: Option<&[f64]>) -> Vec<f64> {
    x.chunks(n)
        .flat_map(|row| {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let rstd = 1.0 / (var + 1e-5).sqrt();
            row.iter()
                .enumerate()
                .map(|(j, v)| (v - mean) * rstd * w.map_or(1.0, |w| w[j]) + b.map_or(0.0, |b| b[j]))
                .collect::<Vec<_>>()
        })
        .collect()
}

device_test!(
    fn linear_and_batched_products_match_f64(device: Device) {
        let (x, xv) = data(&[3, 4], 21, device);
        let (w, wv) = data(&[5, 4], 22, device);
        let (b, bv) = data(&[5], 23, device);
        let wt: Vec<f64> = (0..20).map(|i| wv[(i % 5) * 4 + i / 5]).collect();
        let mut expected = naive_matmul(&xv, &wt, 3, 4, 5);
        let plain = expected.clone();
        for (i, e) in expected.iter_mut().enumerate() {
            *e += bv[i % 5];
        }
        assert_close(&x.linear(&w, Some(&b)).unwrap(), &expected, 1e-5, "linear");
        assert_close(
            &x.linear(&w, None).unwrap(),
            &plain,
            1e-5,
            "linear without bias",
        );
        // 3-D input: folded when contiguous, matmul then add_ when not.
        let x3 = x.reshape(&[1, 3, 4]).unwrap();
        let y3 = x3.linear(&w, Some(&b)).unwrap();
        assert_eq!(y3.shape(), vec![1, 3, 5]);
        assert_close(&y3, &expected, 1e-5, "linear 3-D");
        let xt = x3.transpose(0, 1).unwrap();
        assert_close(
            &xt.linear(&w, Some(&b)).unwrap(),
            &expected,
            1e-5,
            "linear strided",
        );
        // bmm, and a 4-D batch times a broadcast 3-D one.
        let (a, av) = data(&[2, 3, 4], 24, device);
        let (c, cv) = data(&[2, 4, 2], 25, device);
        let mut bmm = naive_matmul(&av[..12], &cv[..8], 3, 4, 2);
        bmm.extend(naive_matmul(&av[12..], &cv[8..], 3, 4, 2));
        assert_close(&a.bmm(&c).unwrap(), &bmm, 1e-5, "bmm");
        let q = a
            .reshape(&[1, 2, 3, 4])
            .unwrap()
            .expand(&[3, 2, 3, 4])
            .unwrap();
        let r = q.matmul(&c).unwrap();
        assert_eq!(r.shape(), vec![3, 2, 3, 2]);
        assert_close(&r, &bmm.repeat(3), 1e-5, "4-D by 3-D");
        let v = c
            .matmul(&tensor(&[1.0, 2.0], &[2], DType::F32, device))
            .unwrap();
        assert_eq!(v.shape(), vec![2, 4]);
    }
);

device_test!(
    fn linear_and_bmm_errors_say_what_pytorch_says(device: Device) {
        let x = Tensor::zeros(&[256, 512], &opts(DType::F32, device)).unwrap();
        let w = Tensor::zeros(&[1024, 256], &opts(DType::F32, device)).unwrap();
        let b = Tensor::zeros(&[1024], &opts(DType::F32, device)).unwrap();
        let e = x.linear(&w, Some(&b)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mat1 and mat2 shapes cannot be multiplied (256x512 and 256x1024)"
        );
        let e = x.linear(&w, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "mat1 and mat2 shapes cannot be multiplied (256x512 and 256x1024)"
        );
        let a3 = Tensor::zeros(&[2, 3, 4], &opts(DType::F32, device)).unwrap();
        let e = a3.bmm(&a3).unwrap_err();
        assert_eq!(
        e.to_string(),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."
    );
        assert_eq!(
            x.bmm(&a3).unwrap_err().to_string(),
            "batch1 must be a 3D tensor"
        );
    }
);

device_test!(
    fn layer_norm_matches_f64_and_checks_its_shape(device: Device) {
        let (x, xv) = data(&[2, 3, 4], 31, device);
        let (w, wv) = data(&[4], 32, device);
        let (b, bv) = data(&[4], 33, device);
        let y = x.layer_norm(&[4], Some(&w), Some(&b), 1e-5).unwrap();
        assert_close(
            &y,
            &naive_layer_norm(&xv, 4, Some(&wv), Some(&bv)),
            1e-4,
            "affine",
        );
        let y = x.layer_norm(&[3, 4], None, None, 1e-5).unwrap();
        assert_close(&y, &naive_layer_norm(&xv, 12, None, None), 1e-4, "two dims");
        let half = x.to_dtype(DType::F16).unwrap();
        let y = half.layer_norm(&[4], None, None, 1e-5).unwrap();
        assert_eq!(y.dtype(), DType::F16);
        assert_close(&y, &naive_layer_norm(&xv, 4, None, None), 1e-2, "float16");
        let e = x.layer_norm(&[3], None, None, 1e-5).unwrap_err();
        assert_eq!(
        e.to_string(),
        "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 3, 4]"
    );
        let e = x.layer_norm(&[4], Some(&b.reshape(&[2, 2]).unwrap()), None, 1e-5);
        assert_eq!(
        e.unwrap_err().to_string(),
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [2, 2] and normalized_shape = [4]"
    );
    }
);

device_test!(
    fn dropout_keeps_a_fraction_scaled_and_is_the_input_when_off(device: Device) {
        let x = Tensor::ones(&[100, 100], &opts(DType::F32, device)).unwrap();
        let d = x.dropout(0.25, true).unwrap();
        let v = d.to_vec_f64().unwrap();
        let kept = v.iter().filter(|&&e| e != 0.0).count();
        assert!(v.iter().all(|&e| e == 0.0 || (e - 1.0 / 0.75).abs() < 1e-6));
        assert!((7000..8000).contains(&kept), "kept {kept} of 10000");
        let off = x.dropout(0.25, false).unwrap();
        assert_eq!(off.data_ptr(), x.data_ptr());
        let all = x.dropout(1.0, true).unwrap();
        assert!(all.to_vec_f64().unwrap().iter().all(|&e| e == 0.0));
        let e = x.dropout(1.5, true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "dropout probability has to be between 0 and 1, but got 1.5"
        );
    }
);

device_test!(
    fn in_place_relu_and_gelu_of_views(device: Device) {
        let (x, xv) = data(&[3, 4], 41, device);
        let ptr = x.data_ptr();
        let r = x.relu_().unwrap();
        assert_eq!(r.data_ptr(), ptr);
        let expected: Vec<f64> = xv.iter().map(|v| v.max(0.0)).collect();
        assert_close(&x, &expected, 0.0, "relu_");
        let (y, _) = data(&[3, 4], 42, device);
        // As TensorIterator lays results out: a dense view's result keeps its stride order (the
        // transpose stays transposed), a view with gaps gives a contiguous result.
        let transposed = y.t().unwrap();
        let laid_out = [
            (transposed.clone(), transposed.stride().to_vec()),
            (y.narrow(1, 1, 2).unwrap(), vec![2, 1]),
        ];
        for (view, strides) in laid_out {
            let g = view.gelu("none").unwrap();
            assert_eq!(g.stride(), strides.as_slice());
            let want = view.contiguous().unwrap().gelu("none").unwrap();
            assert_close(&g, &want.to_vec_f64().unwrap(), 1e-6, "gelu of a view");
        }
    }
);
