//! Several CUDA devices: one allocator per device, moves between devices, the mixing error and the
//! collectives. Runs on two simulated GPUs (16 GiB and 8 GiB), or on the real GPUs with
//! TORCHLET_TEST_DEVICE=cuda when there are two or more (and says it skipped otherwise).

use common::real_gpu;
use torchlet_core::device::collective::AllReduceOp;
use torchlet_core::device::{self, Device};
use torchlet_core::tensor::{collective, DType, Scalar, Tensor, TensorOptions};
use torchlet_session::Session;

mod common;

/// Exclusive use of the devices' numbers, or `None` (after saying so) without two devices.
fn two_devices(test: &str) -> Option<common::Exclusive> {
    let guard = common::exclusive_simulating("16GiB,8GiB");
    if device::cuda_device_count() < 2 {
        assert!(real_gpu(), "the simulated spec gives two devices");
        println!("{test}: skipped, needs two CUDA devices");
        return None;
    }
    for i in 0..2 {
        device::cuda_allocator(i).unwrap().empty_cache();
    }
    device::set_device(0).unwrap();
    Some(guard)
}

fn on(device: usize) -> TensorOptions {
    TensorOptions::default().device(Device::Cuda(device))
}

fn allocated(device: usize) -> u64 {
    device::cuda_allocator(device).unwrap().memory_allocated()
}

fn filled(device: usize, values: &[f64], dtype: DType) -> Tensor {
    let scalars = values.iter().map(|&v| Scalar::Float(v)).collect();
    Tensor::from_values(scalars, vec![values.len()], &on(device).dtype(dtype)).unwrap()
}

#[test]
fn each_device_has_its_own_allocator() {
    let Some(_g) = two_devices("each_device_has_its_own_allocator") else {
        return;
    };
    for i in 0..2 {
        assert_eq!(device::cuda_allocator(i).unwrap().device_index(), i);
    }
    if !real_gpu() {
        assert_eq!(device::cuda_device_count(), 2);
        let total = |i| device::cuda_allocator(i).unwrap().mem_get_info().unwrap().1;
        assert_eq!((total(0), total(1)), (16 << 30, 8 << 30));
        assert!(device::get_device_name(1).unwrap().contains("8.00 GiB"));
    }
    let summary = device::cuda_allocator(1).unwrap().memory_summary(false);
    assert!(summary.contains("device ID 1"), "{summary}");
}

#[test]
fn each_devices_numbers_move_on_their_own() {
    let Some(_g) = two_devices("each_devices_numbers_move_on_their_own") else {
        return;
    };
    let (a0, a1) = (allocated(0), allocated(1));
    let t = Tensor::zeros(&[1024, 1024], &on(1)).unwrap();
    assert_eq!(allocated(1), a1 + (4 << 20));
    assert_eq!(allocated(0), a0);
    let u = Tensor::zeros(&[256], &on(0)).unwrap();
    assert_eq!(allocated(0), a0 + 1024);
    assert_eq!(allocated(1), a1 + (4 << 20));
    drop(t);
    assert_eq!(allocated(1), a1);
    assert_eq!(allocated(0), a0 + 1024);
    drop(u);
    let reserved1 = device::cuda_allocator(1).unwrap().memory_reserved();
    device::cuda_allocator(0).unwrap().empty_cache();
    assert_eq!(
        device::cuda_allocator(1).unwrap().memory_reserved(),
        reserved1
    );
}

#[test]
fn a_tensor_moved_to_another_device_frees_its_block_there() {
    let Some(_g) = two_devices("a_tensor_moved_to_another_device_frees_its_block_there") else {
        return;
    };
    let (a0, a1) = (allocated(0), allocated(1));
    let x = Tensor::arange(0.0, 6.0, 1.0, &on(0))
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    let y = x.to_device(Device::Cuda(1)).unwrap();
    assert_eq!(y.device(), Device::Cuda(1));
    assert_eq!(common::values_of(&y), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!((allocated(0), allocated(1)), (a0 + 512, a1 + 512));
    drop(x);
    assert_eq!((allocated(0), allocated(1)), (a0, a1 + 512));
    // A strided view crosses as its values in row-major order, and back again.
    let back = y.t().unwrap().to_device(Device::Cuda(0)).unwrap();
    assert_eq!(common::values_of(&back), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    drop((y, back));
    assert_eq!((allocated(0), allocated(1)), (a0, a1));
}

#[test]
fn ops_mixing_two_devices_fail_as_pytorch_does() {
    let Some(_g) = two_devices("ops_mixing_two_devices_fail_as_pytorch_does") else {
        return;
    };
    let a = Tensor::ones(&[2, 2], &on(0)).unwrap();
    let b = Tensor::ones(&[2, 2], &on(1)).unwrap();
    let want = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1!";
    assert_eq!(a.add(&b).unwrap_err().to_string(), want);
    assert_eq!(a.matmul(&b).unwrap_err().to_string(), want);
    assert_eq!(a.add_(&b).unwrap_err().to_string(), want);
    assert_eq!(common::values_of(&a), vec![1.0; 4]);
    assert_eq!(
        common::values_of(&a.add(&b.to_device(Device::Cuda(0)).unwrap()).unwrap()),
        vec![2.0; 4]
    );
}

#[test]
fn all_reduce_combines_one_tensor_per_device() {
    let Some(_g) = two_devices("all_reduce_combines_one_tensor_per_device") else {
        return;
    };
    let (a0, a1) = (allocated(0), allocated(1));
    for (op, want) in [
        (AllReduceOp::Sum, [3.0, 1.0, 7.0]),
        (AllReduceOp::Prod, [2.0, -2.0, 10.0]),
        (AllReduceOp::Max, [2.0, 2.0, 5.0]),
        (AllReduceOp::Min, [1.0, -1.0, 2.0]),
    ] {
        for dtype in [DType::F32, DType::F64, DType::I64, DType::F16, DType::BF16] {
            let ts = [
                filled(0, &[1.0, -1.0, 2.0], dtype),
                filled(1, &[2.0, 2.0, 5.0], dtype),
            ];
            collective::all_reduce(&ts, op).unwrap();
            for t in &ts {
                assert_eq!(
                    common::values_of(t),
                    want,
                    "{op:?} {dtype:?} on {}",
                    t.device()
                );
            }
        }
    }
    // Like NCCL, the collective itself takes nothing from the caching allocators.
    assert_eq!((allocated(0), allocated(1)), (a0, a1));
    // On bool, sum is logical or and prod logical and, as PyTorch maps them.
    let bools = |d, v: &[f64]| filled(d, v, DType::Bool);
    let ts = [bools(0, &[1.0, 0.0, 0.0]), bools(1, &[1.0, 1.0, 0.0])];
    collective::all_reduce(&ts, AllReduceOp::Sum).unwrap();
    assert_eq!(common::values_of(&ts[1]), vec![1.0, 1.0, 0.0]);
    let ts = [bools(0, &[1.0, 0.0]), bools(1, &[1.0, 1.0])];
    collective::all_reduce(&ts, AllReduceOp::Prod).unwrap();
    assert_eq!(common::values_of(&ts[0]), vec![1.0, 0.0]);
}

#[test]
fn all_reduce_of_a_large_tensor_sums_every_element() {
    let Some(_g) = two_devices("all_reduce_of_a_large_tensor_sums_every_element") else {
        return;
    };
    let ts: Vec<Tensor> = (0..2)
        .map(|d| Tensor::arange(0.0, 100_000.0, 1.0, &on(d)).unwrap())
        .collect();
    collective::all_reduce(&ts, AllReduceOp::Sum).unwrap();
    for t in &ts {
        let v = common::values_of(t);
        assert!(v.iter().enumerate().all(|(i, &x)| x == 2.0 * i as f64));
    }
}

#[test]
fn broadcast_and_all_gather_follow_the_list_order() {
    let Some(_g) = two_devices("broadcast_and_all_gather_follow_the_list_order") else {
        return;
    };
    let ts = [
        filled(0, &[1.0, 2.0], DType::F32),
        filled(1, &[3.0, 4.0], DType::F32),
    ];
    let gathered = collective::all_gather(&ts).unwrap();
    for (r, g) in gathered.iter().enumerate() {
        assert_eq!(g.device(), Device::Cuda(r));
        assert_eq!(g.shape(), vec![2, 2]);
        assert_eq!(common::values_of(g), vec![1.0, 2.0, 3.0, 4.0]);
    }
    // The list's order is the ranks' order, whatever the devices' numbers.
    let swapped = [ts[1].clone(), ts[0].clone()];
    let g = collective::all_gather(&swapped).unwrap();
    assert_eq!(common::values_of(&g[0]), vec![3.0, 4.0, 1.0, 2.0]);
    collective::broadcast(&ts, 1).unwrap();
    assert_eq!(common::values_of(&ts[0]), vec![3.0, 4.0]);
    assert_eq!(common::values_of(&ts[1]), vec![3.0, 4.0]);
    assert!(collective::broadcast(&ts, 2)
        .unwrap_err()
        .to_string()
        .contains("src 2 is out of range"));
}

#[test]
fn collectives_refuse_lists_that_are_not_one_tensor_per_device() {
    let Some(_g) = two_devices("collectives_refuse_lists_that_are_not_one_tensor_per_device")
    else {
        return;
    };
    let err = |ts: &[Tensor]| {
        collective::all_reduce(ts, AllReduceOp::Sum)
            .unwrap_err()
            .to_string()
    };
    let a = Tensor::ones(&[2, 3], &on(0)).unwrap();
    let b = Tensor::ones(&[2, 3], &on(1)).unwrap();
    let cpu = Tensor::ones(&[2, 3], &TensorOptions::default()).unwrap();
    assert!(err(&[]).contains("empty list"));
    assert!(err(&[a.clone(), a.clone()]).contains("tensors 0 and 1 are both on cuda:0"));
    assert!(err(&[a.clone(), cpu]).contains("tensor 1 is on cpu"));
    let wide = Tensor::ones(&[3, 2], &on(1)).unwrap();
    assert!(err(&[a.clone(), wide]).contains("tensor 1 has shape [3, 2] but tensor 0 has [2, 3]"));
    let double = b.to_dtype(DType::F64).unwrap();
    assert!(err(&[a.clone(), double]).contains("tensor 1 has dtype float64"));
    let strided = Tensor::ones(&[3, 2], &on(1)).unwrap().t().unwrap();
    assert!(err(&[a.clone(), strided]).contains("tensor 1 is not contiguous"));
    // Nothing was touched by the refused calls.
    assert_eq!(common::values_of(&a), vec![1.0; 6]);
}

#[test]
fn the_current_device_is_what_cuda_without_a_number_means() {
    let Some(_g) = two_devices("the_current_device_is_what_cuda_without_a_number_means") else {
        return;
    };
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(
        common::int(&mut s, "cuda::device_count()"),
        device::cuda_device_count() as i64
    );
    let before1 = common::int(&mut s, "cuda::memory_allocated(1)");
    let before0 = common::int(&mut s, "cuda::memory_allocated(0)");
    assert_eq!(
        common::int(&mut s, "cuda::set_device(1); cuda::current_device()"),
        1
    );
    common::run(&mut s, "let x = zeros(256).cuda();");
    assert_eq!(common::int(&mut s, "memory_allocated()"), before1 + 1024);
    common::run(&mut s, "let y = zeros([256], #{device: \"cuda\"});");
    assert_eq!(
        common::int(&mut s, "cuda::memory_allocated(\"cuda:1\")"),
        before1 + 2048
    );
    assert_eq!(common::int(&mut s, "cuda::memory_allocated(0)"), before0);
    common::run(
        &mut s,
        "if x.device != \"cuda:1\" || y.device != \"cuda:1\" { throw \"not on cuda:1\"; }",
    );
    common::run(&mut s, "let z = x.cuda(0); del x;");
    assert_eq!(
        common::int(&mut s, "cuda::memory_allocated(1)"),
        before1 + 1024
    );
    assert_eq!(
        common::int(&mut s, "cuda::memory_allocated(0)"),
        before0 + 1024
    );
    // Every memory function takes the device, in any spelling.
    common::run(&mut s, "let m = cuda::memory_summary(#{device: 1, abbreviated: true}); if !m.contains(\"device ID 1\") { throw m; }");
    common::run(&mut s, "if cuda::memory_summary(\"cuda:0\") == cuda::memory_summary(1) { throw \"same summary\"; }");
    assert_eq!(
        common::int(
            &mut s,
            "cuda::memory_stats(\"cuda:1\")[\"allocated_bytes.all.current\"]"
        ),
        before1 + 1024
    );
    common::run(&mut s, "cuda::record_memory_history(\"all\", 10, 1); cuda::record_memory_history((), 10, \"cuda:1\");");
    assert!(s
        .execute("cuda::record_memory_history(\"all\", 10, 5)")
        .error
        .is_some());
    let outcome = s.execute("cuda::set_device(7)");
    assert!(outcome.error.is_some());
    assert_eq!(
        device::current_device(),
        1,
        "a refused set_device keeps the current device"
    );
    device::set_device(0).unwrap();
}

#[test]
fn scripts_call_the_collectives_from_the_cuda_module() {
    let Some(_g) = two_devices("scripts_call_the_collectives_from_the_cuda_module") else {
        return;
    };
    let (mut s, _) = Session::captured("<test>");
    common::run(
        &mut s,
        "let a = tensor([1.0, 2.0]).cuda(0); let b = tensor([10.0, 20.0]).cuda(1);",
    );
    common::run(&mut s, "cuda::all_reduce([a, b]); let s = b.tolist();");
    common::run(&mut s, "if s != [11.0, 22.0] { throw `sum gave ${s}`; }");
    common::run(
        &mut s,
        "cuda::all_reduce([a, b], \"max\"); cuda::broadcast([a, b], 1);",
    );
    common::run(&mut s, "let g = cuda::all_gather([a, b]); if g[1].shape != [2, 2] || g[1].device != \"cuda:1\" { throw `${g}`; }");
    let outcome = s.execute("cuda::all_reduce([a, b], \"mean\")");
    let error = outcome.error.expect("an unknown op is refused");
    assert!(error.message.contains("unknown op \"mean\""), "{error:?}");
    let outcome = s.execute("a + b");
    let error = outcome.error.expect("mixing devices is refused");
    assert!(error.message.contains("cuda:0 and cuda:1"), "{error:?}");
    common::run(
        &mut s,
        "if a.tolist() != [11.0, 22.0] { throw `a changed: ${a}`; }",
    );
}
