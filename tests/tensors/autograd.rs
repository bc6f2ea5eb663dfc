//! Autograd: every op's gradient against finite differences in f64, and PyTorch's graph semantics.
use crate::common;
use common::{device_test, opts, sample_values};

use torchlet_core::autograd::{self, enable_grad, inference_mode, is_grad_enabled, no_grad};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Result, Scalar, Tensor, TensorOptions};

fn leaf(vals: &[f64], shape: &[usize], device: Device) -> Tensor {
    let v = vals.iter().map(|&x| Scalar::Float(x)).collect();
    Tensor::from_values(
        v,
        shape.to_vec(),
        &opts(DType::F64, device).requires_grad(true),
    )
    .unwrap()
}

/// Check d(sum f(inputs))/d(input) against central differences, for every input.
fn check_grad(
    device: Device,
    name: &str,
    shapes: &[&[usize]],
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) {
    let vals: Vec<Vec<f64>> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| sample_values(s.iter().product(), k + 1))
        .collect();
    let inputs: Vec<Tensor> = vals
        .iter()
        .zip(shapes)
        .map(|(v, s)| leaf(v, s, device))
        .collect();
    let y = f(&inputs).unwrap().sum(None, false).unwrap();
    y.backward(false).unwrap();
    let _g = no_grad();
    let eval = |k: usize, i: usize, delta: f64| -> f64 {
        let moved: Vec<Tensor> = vals
            .iter()
            .zip(shapes)
            .enumerate()
            .map(|(j, (v, s))| {
                let mut v = v.clone();
                if j == k {
                    v[i] += delta;
                }
                leaf(&v, s, device)
            })
            .collect();
        f(&moved)
            .unwrap()
            .sum(None, false)
            .unwrap()
            .item()
            .unwrap()
            .to_f64()
    };
    for (k, input) in inputs.iter().enumerate() {
        let grad = input
            .grad()
            .unwrap_or_else(|| panic!("{name}: input {k} got no grad"));
        assert_eq!(grad.shape(), input.shape(), "{name}: grad shape");
        let g = grad.to_vec_f64().unwrap();
        for (i, gi) in g.iter().enumerate() {
            let eps = 1e-6;
            let num = (eval(k, i, eps) - eval(k, i, -eps)) / (2.0 * eps);
            assert!(
                (gi - num).abs() <= 1e-5 * num.abs().max(1.0),
                "{name} on {device}: d/dinput{k}[{i}] = {gi}, finite differences give {num}"
            );
        }
    }
}

device_test!(
    fn elementwise_gradients(device: Device) {
        check_grad(device, "add", &[&[2, 3], &[3]], |t| t[0].add(&t[1]));
        check_grad(device, "sub", &[&[2, 3], &[2, 1]], |t| t[0].sub(&t[1]));
        check_grad(device, "mul", &[&[2, 3], &[2, 3]], |t| t[0].mul(&t[1]));
        check_grad(device, "div", &[&[4], &[4]], |t| t[0].div(&t[1]));
        check_grad(device, "pow", &[&[3], &[3]], |t| {
            t[0].abs()?
                .add_scalar(Scalar::Float(0.5))?
                .pow(&t[1].div_scalar(Scalar::Int(3))?)
        });
        check_grad(device, "scalars", &[&[5]], |t| {
            t[0].add_scalar(Scalar::Int(1))?
                .mul_scalar(Scalar::Float(1.5))?
                .sub_scalar(Scalar::Int(2))?
                .div_scalar(Scalar::Int(3))
        });
        check_grad(device, "rsub rdiv", &[&[5]], |t| {
            t[0].rsub_scalar(Scalar::Int(1))?
                .rdiv_scalar(Scalar::Int(2))
        });
        check_grad(device, "neg", &[&[3]], |t| t[0].neg());
        check_grad(device, "exp", &[&[6]], |t| {
            t[0].div_scalar(Scalar::Int(2))?.exp()
        });
        check_grad(device, "log sqrt", &[&[6]], |t| {
            t[0].abs()?.log()?.add(&t[0].abs()?.sqrt()?)
        });
        check_grad(device, "relu abs", &[&[8]], |t| {
            t[0].relu()?.mul(&t[0].abs()?)
        });
        check_grad(device, "sigmoid tanh", &[&[6]], |t| {
            t[0].sigmoid()?.add(&t[0].tanh()?)
        });
        check_grad(device, "sin cos", &[&[6]], |t| {
            t[0].sin()?.mul(&t[0].cos()?)
        });
        check_grad(device, "clamp", &[&[10]], |t| {
            t[0].clamp(Some(-1.0), Some(2.0))
        });
        check_grad(device, "clamp min", &[&[10]], |t| {
            t[0].clamp(Some(-1.0), None)
        });
        check_grad(device, "clamp max", &[&[10]], |t| {
            t[0].clamp(None, Some(2.0))
        });
        check_grad(device, "pow_scalar", &[&[5]], |t| t[0].pow_scalar(3.0));
        check_grad(device, "gelu", &[&[10]], |t| t[0].gelu("none"));
        check_grad(device, "gelu tanh", &[&[10]], |t| t[0].gelu("tanh"));
        check_grad(device, "silu", &[&[10]], |t| t[0].silu());
    }
);

device_test!(
    fn reduction_and_softmax_gradients(device: Device) {
        check_grad(device, "sum dim", &[&[3, 4]], |t| {
            t[0].sum(Some(1), false)?.pow_scalar(2.0)
        });
        check_grad(device, "mean", &[&[3, 4]], |t| {
            t[0].mean(None, false)?.mul(&t[0].mean(Some(0), true)?)
        });
        check_grad(device, "max min", &[&[3, 4]], |t| {
            t[0].max(None, false)?
                .add(&t[0].min(Some(0), false)?.sum(None, false)?)
        });
        check_grad(device, "max dim", &[&[3, 4]], |t| {
            t[0].max(Some(1), true)?.pow_scalar(2.0)
        });
        check_grad(device, "softmax", &[&[2, 5]], |t| {
            t[0].softmax(1)?.pow_scalar(2.0)
        });
        check_grad(device, "log_softmax", &[&[2, 5]], |t| {
            t[0].log_softmax(0)?.mul_scalar(Scalar::Float(0.3))?.exp()
        });
    }
);

device_test!(
    fn matmul_and_view_gradients(device: Device) {
        check_grad(device, "mm", &[&[2, 3], &[3, 4]], |t| t[0].matmul(&t[1]));
        check_grad(device, "mv", &[&[2, 3], &[3]], |t| t[0].matmul(&t[1]));
        check_grad(device, "vm", &[&[3], &[3, 2]], |t| t[0].matmul(&t[1]));
        check_grad(device, "dot", &[&[4], &[4]], |t| t[0].matmul(&t[1]));
        check_grad(device, "bmm broadcast", &[&[2, 2, 3], &[3, 2]], |t| {
            t[0].matmul(&t[1])
        });
        check_grad(device, "views", &[&[2, 3, 4]], |t| {
            let x = t[0].permute(&[2, 0, 1])?.reshape(&[4, 6])?.t()?;
            let y = x.unsqueeze(0)?.squeeze(None)?.transpose(0, 1)?.flatten()?;
            y.mul(&t[0].view(&[-1])?)
        });
        check_grad(device, "index narrow expand", &[&[3, 4]], |t| {
            let row = t[0].index(1)?.mul_scalar(Scalar::Int(3))?;
            let cols = t[0].narrow(1, 1, 2)?.sum(Some(1), false)?;
            row.expand(&[2, 4])?
                .sum(None, false)?
                .add(&cols.pow_scalar(2.0)?.sum(None, false)?)
        });
        check_grad(device, "clone contiguous", &[&[2, 3]], |t| {
            t[0].t()?.contiguous()?.clone_tensor()?.exp()
        });
    }
);

device_test!(
    fn shape_op_gradients(device: Device) {
        check_grad(device, "cat", &[&[2, 3], &[2, 2]], |t| {
            Tensor::cat(&[t[0].clone(), t[1].clone()], -1)?.exp()
        });
        check_grad(device, "stack", &[&[3], &[3]], |t| {
            Tensor::stack(&[t[0].clone(), t[1].clone()], 1)?.exp()
        });
        check_grad(device, "split", &[&[5, 2]], |t| {
            let p = t[0].split(2, 0)?;
            p[0].exp()?
                .sum(None, false)?
                .add(&p[2].mul(&p[2])?.sum(None, false)?)
        });
        check_grad(device, "chunk", &[&[2, 6]], |t| t[0].chunk(3, 1)?[1].exp());
        check_grad(device, "expand", &[&[1, 3]], |t| {
            t[0].expand(&[4, 3])?.exp()
        });
        check_grad(device, "repeat", &[&[2, 3]], |t| {
            t[0].repeat(&[2, 2, 1])?.exp()
        });
        // Repeat's gradient is no view, so the input's second gradient is added into it in place.
        check_grad(device, "repeat then another use", &[&[2, 3]], |t| {
            t[0].repeat(&[2, 3])?
                .exp()?
                .sum(None, false)?
                .add(&t[0].sin()?.sum(None, false)?)
        });
    }
);

device_test!(
    fn index_op_gradients(device: Device) {
        // Conditions and indices are made on the CPU and moved to each input's device.
        let cond_on_cpu = || {
            let v = [true, false, false, true, true, false].map(Scalar::Bool);
            let opts = TensorOptions::default().dtype(DType::Bool);
            Tensor::from_values(v.to_vec(), vec![2, 3], &opts).unwrap()
        };
        let cond = cond_on_cpu();
        let idx = |v: &[i64], shape: &[usize]| {
            let opts = TensorOptions::default().dtype(DType::I64);
            let v = v.iter().map(|&i| Scalar::Int(i)).collect();
            Tensor::from_values(v, shape.to_vec(), &opts).unwrap()
        };
        let on = |x: &Tensor, like: &Tensor| x.to_device(like.device());
        let (i1, i2) = (idx(&[2, 0, 2], &[3]), idx(&[1, 1, 0, 2], &[2, 2]));
        let c = cond.clone();
        check_grad(device, "where", &[&[2, 3], &[3]], move |t| {
            Tensor::where_(&on(&c, &t[0])?, &t[0], &t[1])?.exp()
        });
        check_grad(device, "masked_fill", &[&[2, 3]], move |t| {
            t[0].masked_fill(&on(&cond, &t[0])?, Scalar::Int(2))?.exp()
        });
        let c = cond_on_cpu();
        check_grad(device, "masked_fill_", &[&[2, 3]], move |t| {
            let x = t[0].mul_scalar(Scalar::Int(3))?;
            x.masked_fill_(&on(&c, &t[0])?, Scalar::Int(2))?;
            x.mul(&t[0])
        });
        check_grad(device, "triu", &[&[3, 3]], |t| {
            t[0].triangle(0, true)?.exp()
        });
        check_grad(device, "tril", &[&[2, 3, 3]], |t| {
            t[0].triangle(-1, false)?.exp()
        });
        check_grad(device, "index_select", &[&[3, 2]], move |t| {
            t[0].index_select(0, &on(&i1, &t[0])?)?.exp()
        });
        let i = i2.clone();
        check_grad(device, "gather", &[&[2, 3]], move |t| {
            t[0].gather(1, &on(&i, &t[0])?)?.exp()
        });
        check_grad(device, "embedding", &[&[3, 2]], move |t| {
            Tensor::embedding(&on(&i2, &t[0])?, &t[0])?.exp()
        });
    }
);

device_test!(
    fn loss_gradients(device: Device) {
        check_grad(device, "mse_loss", &[&[3, 2], &[3, 2]], |t| {
            t[0].mse_loss(&t[1])
        });
        check_grad(device, "cross_entropy", &[&[3, 4]], |t| {
            let targets = Tensor::from_values(
                vec![Scalar::Int(1), Scalar::Int(3), Scalar::Int(0)],
                vec![3],
                &TensorOptions::default()
                    .dtype(DType::I64)
                    .device(t[0].device()),
            )?;
            t[0].cross_entropy(&targets, -100)
        });
        // A target equal to ignore_index adds nothing, to the mean or to the gradient.
        check_grad(device, "cross_entropy with ignore_index", &[&[3, 4]], |t| {
            let targets = Tensor::from_values(
                vec![Scalar::Int(1), Scalar::Int(-100), Scalar::Int(0)],
                vec![3],
                &TensorOptions::default()
                    .dtype(DType::I64)
                    .device(t[0].device()),
            )?;
            t[0].cross_entropy(&targets, -100)
        });
        check_grad(device, "in-place on a non-leaf", &[&[4], &[4]], |t| {
            let y = t[0].mul_scalar(Scalar::Int(2))?;
            y.add_(&t[1])?;
            y.mul_(&t[1])?;
            y.mul_scalar_(Scalar::Int(3))?;
            Ok(y)
        });
    }
);

device_test!(
    fn gradients_flow_back_across_dtypes_and_devices(device: Device) {
        let x = leaf(&[1.0, 2.0], &[2], device);
        let y = x
            .to_dtype(DType::F32)
            .unwrap()
            .to_device(Device::Cpu)
            .unwrap()
            .mul_scalar(Scalar::Int(3))
            .unwrap();
        assert_eq!(y.grad_fn_name().as_deref(), Some("MulBackward0"));
        y.sum(None, false).unwrap().backward(false).unwrap();
        let g = x.grad().unwrap();
        assert_eq!((g.dtype(), g.device()), (DType::F64, device));
        assert_eq!(g.to_vec_f64().unwrap(), vec![3.0, 3.0]);
    }
);

device_test!(
    fn gradients_accumulate_and_graphs_are_freed(device: Device) {
        let x = leaf(&[1.0, 2.0, 3.0], &[3], device);
        let y = x.mul(&x).unwrap().sum(None, false).unwrap();
        y.backward(true).unwrap();
        y.backward(false).unwrap();
        assert_eq!(
            x.grad().unwrap().to_vec_f64().unwrap(),
            vec![4.0, 8.0, 12.0]
        );
        let e = y.backward(false).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Trying to backward through the graph a second time"),
            "{e}"
        );
        // A graph that saved no tensors can be walked again, as in PyTorch.
        let z = x
            .add_scalar(Scalar::Int(1))
            .unwrap()
            .sum(None, false)
            .unwrap();
        z.backward(false).unwrap();
        z.backward(false).unwrap();
        assert_eq!(
            x.grad().unwrap().to_vec_f64().unwrap(),
            vec![6.0, 10.0, 14.0]
        );
        x.set_grad(None).unwrap();
        assert!(x.grad().is_none());
        let e = x
            .mul_scalar(Scalar::Int(2))
            .unwrap()
            .backward(false)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "grad can be implicitly created only for scalar outputs"
        );
    }
);

#[test]
fn grad_fn_names_and_leaves() {
    let x = leaf(&[1.0, 2.0], &[2], Device::Cpu);
    let names = [
        (x.mul_scalar(Scalar::Int(2)).unwrap(), "MulBackward0"),
        (x.add_scalar(Scalar::Int(2)).unwrap(), "AddBackward0"),
        (x.rsub_scalar(Scalar::Int(2)).unwrap(), "RsubBackward1"),
        (x.rdiv_scalar(Scalar::Int(2)).unwrap(), "MulBackward0"),
        (x.exp().unwrap(), "ExpBackward0"),
        (x.relu().unwrap(), "ReluBackward0"),
        (x.sum(None, false).unwrap(), "SumBackward0"),
        (x.sum(Some(0), false).unwrap(), "SumBackward1"),
        (x.mean(None, false).unwrap(), "MeanBackward0"),
        (x.max(None, false).unwrap(), "MaxBackward1"),
        (x.view(&[2, 1]).unwrap(), "ViewBackward0"),
        (x.unsqueeze(0).unwrap().t().unwrap(), "TBackward0"),
        (x.matmul(&x).unwrap(), "DotBackward0"),
        (x.pow_scalar(2.0).unwrap(), "PowBackward0"),
        (x.clone_tensor().unwrap(), "CloneBackward0"),
        (x.softmax(0).unwrap(), "SoftmaxBackward0"),
        (x.index(0).unwrap(), "SelectBackward0"),
    ];
    for (t, name) in names {
        assert_eq!(t.grad_fn_name().as_deref(), Some(name));
        assert!(t.requires_grad() && !t.is_leaf());
    }
    assert!(x.is_leaf() && x.grad_fn_name().is_none());
    let d = x.detach().unwrap();
    assert!(!d.requires_grad() && d.storage_id() == x.storage_id());
    let e = x
        .mul_scalar(Scalar::Int(2))
        .unwrap()
        .set_requires_grad(false)
        .unwrap_err();
    assert!(e
        .to_string()
        .starts_with("you can only change requires_grad flags of leaf variables"));
    let ints = Tensor::ones(&[2], &TensorOptions::default().dtype(DType::I64)).unwrap();
    assert_eq!(
        ints.set_requires_grad(true).unwrap_err().to_string(),
        "only Tensors of floating point and complex dtype can require gradients"
    );
}

device_test!(
    fn grad_modes_nest_and_restore_even_on_error(device: Device) {
        let x = leaf(&[1.0, 2.0], &[2], device);
        {
            let _a = no_grad();
            let y = x.mul_scalar(Scalar::Int(2)).unwrap();
            assert!(!y.requires_grad() && y.grad_fn_name().is_none());
            let e = y.sum(None, false).unwrap().backward(false).unwrap_err();
            assert_eq!(
                e.to_string(),
                "element 0 of tensors does not require grad and does not have a grad_fn"
            );
            {
                let _b = enable_grad();
                let z = x
                    .mul_scalar(Scalar::Int(2))
                    .unwrap()
                    .sum(None, false)
                    .unwrap();
                assert_eq!(z.grad_fn_name().as_deref(), Some("SumBackward0"));
            }
            assert!(!is_grad_enabled());
        }
        assert!(is_grad_enabled());
        fn fails_inside_no_grad(x: &Tensor) -> Result<Tensor> {
            let _g = no_grad();
            x.matmul(&x.unsqueeze(0)?)
        }
        assert!(fails_inside_no_grad(&x).is_err());
        assert!(
            is_grad_enabled(),
            "the guard restored the mode on the error path"
        );
        {
            let _g = autograd::set_grad_enabled(false);
            assert!(!x.exp().unwrap().requires_grad());
        }
    }
);

device_test!(
    fn in_place_rules_match_pytorch(device: Device) {
        let w = leaf(&[1.0, 2.0], &[2], device);
        let e = w.add_scalar_(Scalar::Int(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a leaf Variable that requires grad is being used in an in-place operation."
        );
        {
            // The optimiser's update: allowed under no_grad, and w stays a leaf.
            let _g = no_grad();
            w.sub_(&w.mul_scalar(Scalar::Float(0.5)).unwrap()).unwrap();
        }
        assert!(w.is_leaf() && w.requires_grad());
        assert_eq!(w.to_vec_f64().unwrap(), vec![0.5, 1.0]);
        // Modifying a tensor that backward needs is caught at backward time.
        let y = w.exp().unwrap();
        y.add_scalar_(Scalar::Int(1)).unwrap();
        let e = y.sum(None, false).unwrap().backward(false).unwrap_err();
        assert!(e.to_string().starts_with("one of the variables needed for gradient computation has been modified by an inplace operation"), "{e}");
    }
);

device_test!(
    fn inference_mode_makes_inference_tensors(device: Device) {
        let w = leaf(&[1.0, 2.0], &[2], device);
        let t = {
            let _g = inference_mode();
            assert!(autograd::is_inference_mode());
            let t = w.mul_scalar(Scalar::Int(2)).unwrap();
            assert!(!t.requires_grad() && t.is_inference());
            t
        };
        assert!(!autograd::is_inference_mode());
        let e = w.mul(&t).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Inference tensors cannot be saved for backward"),
            "{e}"
        );
        assert!(t
            .add_scalar_(Scalar::Int(1))
            .unwrap_err()
            .to_string()
            .starts_with("Inplace update to inference tensor outside InferenceMode"));
    }
);

device_test!(
    fn linear_and_batched_matmul_gradients(device: Device) {
        check_grad(device, "linear 2-D", &[&[3, 4], &[5, 4], &[5]], |t| {
            t[0].linear(&t[1], Some(&t[2]))
        });
        check_grad(device, "linear no bias", &[&[3, 4], &[5, 4]], |t| {
            t[0].linear(&t[1], None)
        });
        check_grad(
            device,
            "linear 3-D folded",
            &[&[2, 3, 4], &[5, 4], &[5]],
            |t| t[0].linear(&t[1], Some(&t[2])),
        );
        check_grad(
            device,
            "linear strided 3-D",
            &[&[3, 2, 4], &[5, 4], &[5]],
            |t| t[0].transpose(0, 1)?.linear(&t[1], Some(&t[2])),
        );
        check_grad(
            device,
            "linear column-major",
            &[&[4, 3], &[4, 5], &[5]],
            |t| t[0].t()?.linear(&t[1].t()?, Some(&t[2])),
        );
        check_grad(device, "bmm", &[&[2, 3, 4], &[2, 4, 2]], |t| {
            t[0].bmm(&t[1])
        });
        check_grad(
            device,
            "4-D by 3-D broadcast",
            &[&[2, 2, 3, 4], &[2, 4, 3]],
            |t| t[0].matmul(&t[1]),
        );
        check_grad(device, "2-D by 3-D", &[&[3, 4], &[2, 4, 2]], |t| {
            t[0].matmul(&t[1])
        });
        check_grad(device, "1-D by 3-D", &[&[4], &[2, 4, 3]], |t| {
            t[0].matmul(&t[1])
        });
        check_grad(device, "3-D by 1-D", &[&[2, 3, 4], &[4]], |t| {
            t[0].matmul(&t[1])
        });
        check_grad(
            device,
            "transposed 3-D by 2-D",
            &[&[2, 4, 3], &[4, 2]],
            |t| t[0].transpose(1, 2)?.matmul(&t[1]),
        );
    }
);

device_test!(
    fn layer_norm_dropout_and_in_place_activation_gradients(device: Device) {
        check_grad(
            device,
            "layer_norm affine",
            &[&[2, 3, 4], &[4], &[4]],
            |t| {
                t[0].layer_norm(&[4], Some(&t[1]), Some(&t[2]), 1e-5)?
                    .pow_scalar(3.0)
            },
        );
        check_grad(device, "layer_norm two dims", &[&[2, 3, 4]], |t| {
            t[0].layer_norm(&[3, 4], None, None, 1e-5)?.pow_scalar(3.0)
        });
        check_grad(device, "layer_norm of a view", &[&[4, 3], &[4]], |t| {
            t[0].t()?
                .layer_norm(&[4], Some(&t[1]), None, 1e-5)?
                .pow_scalar(3.0)
        });
        check_grad(device, "dropout", &[&[40]], |t| {
            // The same mask for every evaluation: reseed before drawing it.
            torchlet_core::tensor::manual_seed(7);
            t[0].dropout(0.3, true)?.pow_scalar(2.0)
        });
        check_grad(device, "relu_", &[&[8]], |t| {
            t[0].mul_scalar(Scalar::Int(2))?.relu_()
        });
        check_grad(device, "gelu of a transposed view", &[&[3, 4]], |t| {
            t[0].t()?.gelu("none")?.mul(&t[0].t()?)
        });
    }
);

device_test!(
    fn relu_on_a_leaf_is_refused_and_rebases_a_non_leaf(device: Device) {
        let w = leaf(&sample_values(4, 3), &[4], device);
        let e = w.relu_().unwrap_err();
        assert_eq!(
            e.to_string(),
            "a leaf Variable that requires grad is being used in an in-place operation."
        );
        let h = w.mul_scalar(Scalar::Int(1)).unwrap();
        let a = h.relu_().unwrap();
        assert_eq!(a.grad_fn_name().as_deref(), Some("ReluBackward0"));
        assert_eq!(h.grad_fn_name().as_deref(), Some("ReluBackward0"));
        // The result is saved: changing it again makes backward refuse, as PyTorch does.
        let two = Tensor::full(&[4], Scalar::Int(2), &opts(DType::F64, device)).unwrap();
        h.mul_(&two).unwrap();
        let err = h.sum(None, false).unwrap().backward(false).unwrap_err();
        assert!(
            err.to_string().contains("modified by an inplace operation"),
            "{err}"
        );
    }
);
