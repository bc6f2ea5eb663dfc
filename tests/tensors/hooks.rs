//! Backward hooks: tensor gradient hooks, nodes whose backward the caller gives, callbacks at the
//! end of a pass, and storage that is freed and allocated again under saved tensors.
use std::sync::{Arc, Mutex};

use crate::common;
use common::{device_test, opts};

use torchlet_core::autograd::hooks::{self, GradHook};
use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Scalar, Tensor};

fn leaf(values: &[f64], device: Device) -> Tensor {
    let v = values.iter().map(|&x| Scalar::Float(x)).collect();
    Tensor::from_values(
        v,
        vec![values.len()],
        &opts(DType::F32, device).requires_grad(true),
    )
    .unwrap()
}

device_test!(
    fn a_hook_sees_its_gradient_and_may_replace_it(device: Device) {
        let x = leaf(&[1.0, 2.0, 3.0], device);
        let y = x.mul_scalar(Scalar::Float(2.0)).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let watch: GradHook = Arc::new(move |g: &Tensor| {
            log.lock().unwrap().push(g.to_vec_f64()?);
            Ok(None)
        });
        let triple: GradHook = Arc::new(|g: &Tensor| Ok(Some(g.mul_scalar(Scalar::Float(3.0))?)));
        y.register_hook(watch).unwrap();
        let removed = y.register_hook(triple.clone()).unwrap();
        y.remove_hook(removed);
        x.register_hook(triple).unwrap();
        y.sum(None, false).unwrap().backward(false).unwrap();
        // y's hook saw ones; x's leaf hook tripled its gradient 2 before accumulation.
        assert_eq!(*seen.lock().unwrap(), vec![vec![1.0, 1.0, 1.0]]);
        assert_eq!(x.grad().unwrap().to_vec_f64().unwrap(), vec![6.0, 6.0, 6.0]);
        let plain = Tensor::ones(&[2], &opts(DType::F32, device)).unwrap();
        let error = plain
            .register_hook(Arc::new(|_: &Tensor| Ok(None)))
            .unwrap_err();
        assert!(
            error.message().contains("doesn't require gradient"),
            "{error}"
        );
    }
);

device_test!(
    fn a_custom_node_runs_its_backward_and_aliases_outputs_that_are_inputs(device: Device) {
        let x = leaf(&[1.0, 2.0], device);
        let calls = Arc::new(Mutex::new(0));
        let count = calls.clone();
        let outs = hooks::record_custom(
            "PassBackward",
            &[x.clone()],
            &[x.clone()],
            Box::new(move |grads: &[Option<Tensor>], _: &[bool]| {
                *count.lock().unwrap() += 1;
                Ok(vec![Some(
                    grads[0].clone().unwrap().mul_scalar(Scalar::Float(5.0))?,
                )])
            }),
        )
        .unwrap();
        let alias = &outs[0];
        assert!(!alias.same_tensor(&x) && alias.storage_id() == x.storage_id());
        assert_eq!(alias.grad_fn_name().as_deref(), Some("PassBackward"));
        alias.sum(None, false).unwrap().backward(false).unwrap();
        assert_eq!(*calls.lock().unwrap(), 1);
        assert_eq!(x.grad().unwrap().to_vec_f64().unwrap(), vec![5.0, 5.0]);
    }
);

device_test!(
    fn final_callbacks_run_once_the_graph_is_done(device: Device) {
        let x = leaf(&[1.0, 2.0], device);
        let y = x.mul_scalar(Scalar::Float(2.0)).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let (log, x2) = (order.clone(), x.clone());
        y.register_hook(Arc::new(move |_: &Tensor| {
            log.lock().unwrap().push("hook");
            let (log, x) = (log.clone(), x2.clone());
            hooks::queue_callback(Box::new(move || {
                // The leaf's gradient is in: the graph ran before the callback.
                log.lock().unwrap().push(if x.grad().is_some() {
                    "callback after"
                } else {
                    "callback before"
                });
                Ok(())
            }))?;
            Ok(None)
        }))
        .unwrap();
        y.sum(None, false).unwrap().backward(false).unwrap();
        assert_eq!(*order.lock().unwrap(), vec!["hook", "callback after"]);
        let outside = hooks::queue_callback(Box::new(|| Ok(()))).unwrap_err();
        assert!(
            outside.message().contains("during backward pass"),
            "{outside}"
        );
    }
);

device_test!(
    fn a_storage_resized_to_zero_frees_it_under_saved_tensors(device: Device) {
        let w = leaf(&[1.0, 2.0, 3.0, 4.0], device);
        let x = leaf(&[0.5, 0.5, 0.5, 0.5], device);
        // The product saves w for x's gradient; w's memory goes and comes back before backward.
        let y = x.mul(&w).unwrap();
        let view = w.view(&[2, 2]).unwrap();
        w.resize_storage(0).unwrap();
        assert_eq!((view.storage_nbytes(), view.storage_ptr()), (0, 0));
        w.resize_storage(16).unwrap();
        assert_eq!(view.storage_nbytes(), 16);
        {
            // Refilled as FSDP2 refills it: a write autograd is not to see.
            let version = w.storage().version();
            let _mode = torchlet_core::autograd::no_grad();
            let values = [1.0, 2.0, 3.0, 4.0]
                .iter()
                .map(|&v| Scalar::Float(v))
                .collect();
            let again = Tensor::from_values(values, vec![4], &opts(DType::F32, device)).unwrap();
            w.detach().unwrap().copy_(&again).unwrap();
            w.storage().set_version(version);
        }
        let error = w.resize_storage(8).unwrap_err();
        assert!(error.message().contains("resize it to 0 first"), "{error}");
        y.sum(None, false).unwrap().backward(false).unwrap();
        assert_eq!(
            x.grad().unwrap().to_vec_f64().unwrap(),
            vec![1.0, 2.0, 3.0, 4.0]
        );
    }
);

device_test!(
    fn a_post_accumulate_hook_sees_the_accumulated_gradient(device: Device) {
        let w = leaf(&[1.0, 2.0], device);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let id = w
            .register_post_accumulate_grad_hook(Arc::new(move |p: &Tensor| {
                log.lock().unwrap().push(p.grad().unwrap().to_vec_f64()?);
                Ok(())
            }))
            .unwrap();
        for _ in 0..2 {
            w.mul_scalar(Scalar::Float(3.0))
                .unwrap()
                .sum(None, false)
                .unwrap()
                .backward(false)
                .unwrap();
        }
        // The second pass accumulated onto the first: the hook saw .grad after each.
        assert_eq!(*seen.lock().unwrap(), vec![vec![3.0, 3.0], vec![6.0, 6.0]]);
        w.remove_post_accumulate_grad_hook(id);
        w.mul_scalar(Scalar::Float(3.0))
            .unwrap()
            .sum(None, false)
            .unwrap()
            .backward(false)
            .unwrap();
        assert_eq!(seen.lock().unwrap().len(), 2);
        let y = w.mul_scalar(Scalar::Float(2.0)).unwrap();
        let error = y
            .register_post_accumulate_grad_hook(Arc::new(|_: &Tensor| Ok(())))
            .unwrap_err();
        assert!(error.message().contains("non-leaf"), "{error}");
    }
);
