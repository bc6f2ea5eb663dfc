//! `checkpoint(f, args…)`: the same gradients as without it, activations remade inside backward
//! (less memory between forward and backward), PyTorch's errors; one body run on every device.
use crate::common;

use common::{device_test, error, eval};

use torchlet_session::Session;

fn session(device: &str) -> Session {
    let setup = format!(
        "let dev = #{{device: \"{device}\"}};
         manual_seed(0);
         let x = randn(64, 32, #{{device: \"{device}\", dtype: \"float64\", requires_grad: true}});
         let w1 = randn(32, 128, #{{device: \"{device}\", dtype: \"float64\", requires_grad: true}});
         let w2 = randn(128, 16, #{{device: \"{device}\", dtype: \"float64\", requires_grad: true}});
         fn block(x, w1, w2) {{ tanh(matmul(relu(matmul(x, w1)), w2)) }}"
    );
    common::session_with("<test>", &setup)
}

device_test!(
    fn gradients_equal_those_without_checkpointing(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(
            &mut s,
            "block(x, w1, w2).pow(2).sum().backward();
             let gx = x.grad; let g1 = w1.grad; let g2 = w2.grad;
             x.grad = (); w1.grad = (); w2.grad = ();
             checkpoint(Fn(\"block\"), x, w1, w2).pow(2).sum().backward();",
        );
        for (grad, plain) in [("x", "gx"), ("w1", "g1"), ("w2", "g2")] {
            let diff = eval(
                &mut s,
                &format!("({grad}.grad - {plain}).abs().max().item()"),
            );
            let diff: f64 = diff.parse().unwrap();
            assert!(diff < 1e-12, "{device}: {grad}.grad differs by {diff}");
        }
        // A closure works too, and so do options.
        eval(
            &mut s,
            "x.grad = (); w1.grad = (); w2.grad = ();
             checkpoint(|a| block(a, w1, w2), x, #{use_reentrant: false}).pow(2).sum().backward();",
        );
        let diff = eval(&mut s, "(w1.grad - g1).abs().max().item()");
        assert!(
            diff.parse::<f64>().unwrap() < 1e-12,
            "{device}: closure {diff}"
        );
    }
);

#[test]
fn activations_are_freed_after_the_forward_and_remade_in_backward() {
    let (_guard, _) = common::gpu();
    let mut s = session("cuda");
    // The first matmul of the forward and of the backward each take a cuBLAS workspace (one per
    // handle, kept for the process): take both before measuring, whatever test ran first.
    eval(
        &mut s,
        "let t = randn(2, 2, #{device: \"cuda\", requires_grad: true}); \
         t.matmul(t).sum().backward(); del t;",
    );
    let base: i64 = eval(&mut s, "cuda::memory_allocated()").parse().unwrap();
    eval(&mut s, "let plain = block(x, w1, w2);");
    let plain: i64 = eval(&mut s, "cuda::memory_allocated()").parse().unwrap();
    eval(
        &mut s,
        "del plain; let kept = checkpoint(Fn(\"block\"), x, w1, w2);",
    );
    let checkpointed: i64 = eval(&mut s, "cuda::memory_allocated()").parse().unwrap();
    // Without checkpointing the graph holds relu's 64x128 float64 output; with it only the
    // 64x16 result is held.
    let out = 64 * 16 * 8;
    assert_eq!(checkpointed - base, out, "only the output is held");
    assert!(
        plain - base >= out + 64 * 128 * 8,
        "the plain graph holds relu's output"
    );
    eval(&mut s, "kept.sum().backward(); del kept;");
    let grads = (64 * 32 + 32 * 128 + 128 * 16) * 8;
    let after: i64 = eval(&mut s, "cuda::memory_allocated()").parse().unwrap();
    assert!(
        after - base >= grads && after - base < grads + 1024 * 1024,
        "after backward only the gradients stay: {}",
        after - base
    );
}

device_test!(
    fn errors_say_what_to_do_and_the_session_goes_on(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let e = error(
            &mut s,
            "checkpoint(Fn(\"block\"), x, w1, w2, #{use_reentrant: true})",
        );
        assert!(e.message.contains("use_reentrant=false"), "{}", e.message);
        let e = error(&mut s, "checkpoint(3, x)");
        assert!(e.message.contains("must be a function"), "{}", e.message);
        let e = error(
            &mut s,
            "checkpoint(|a| a.no_such_method(), x).sum().backward()",
        );
        assert!(e.message.contains("no_such_method"), "{}", e.message);
        assert_eq!(eval(&mut s, "x.shape"), "[64, 32]", "x is alive");
    }
);

// With `retain_graph`, the recomputed activations stay with the graph, so a second backward
// adds the same gradients again. (PyTorch raises "already unpacked once" here instead.)
device_test!(
    fn a_retained_graph_runs_backward_twice(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(
            &mut s,
            "let y = checkpoint(Fn(\"block\"), x, w1, w2).sum(); y.backward(#{retain_graph: true});
             let once = w2.grad.clone(); y.backward();",
        );
        let diff = eval(&mut s, "(w2.grad - once * 2).abs().max().item()");
        assert!(diff.parse::<f64>().unwrap() < 1e-12, "{device}: {diff}");
    }
);
