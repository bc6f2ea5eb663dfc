//! `+= -= *= /=` on tensors work in place, as Python's `__iadd__`: the storage, `requires_grad`
//! and leaf status stay; PyTorch's leaf and dtype errors; one body run on every device.
use crate::common;

use common::{device_test, error, eval};

use torchlet_session::Session;

fn session(device: &str) -> Session {
    common::session_with("<test>", &format!("let dev = #{{device: \"{device}\"}};"))
}

device_test!(
    fn each_operator_updates_the_same_storage(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(
            &mut s,
            "let w = tensor([1.0, 2.0, 4.0], dev); let alias = w; let p = w.data_ptr();",
        );
        for (code, want) in [
            ("w += 1", "[2.0, 3.0, 5.0]"),
            ("w -= tensor([1.0, 1.0, 1.0], dev)", "[1.0, 2.0, 4.0]"),
            ("w *= tensor([2.0], dev)", "[2.0, 4.0, 8.0]"),
            ("w /= 4", "[0.5, 1.0, 2.0]"),
            ("w += tensor([1.0, 2.0, 3.0], dev)", "[1.5, 3.0, 5.0]"),
            ("w -= 0.5", "[1.0, 2.5, 4.5]"),
            ("w *= 2", "[2.0, 5.0, 9.0]"),
            ("w /= tensor([2.0, 5.0, 3.0], dev)", "[1.0, 1.0, 3.0]"),
            ("w += true", "[2.0, 2.0, 4.0]"),
        ] {
            eval(&mut s, &format!("{code};"));
            assert_eq!(
                eval(&mut s, "[w.tolist(), alias.tolist(), w.data_ptr() == p]"),
                format!("[{want}, {want}, true]"),
                "{code} on {device}"
            );
        }
    }
);

device_test!(
    fn an_sgd_step_under_no_grad_keeps_the_leaf(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let code = "let w = tensor([1.0, -2.0, 3.0], #{device: dev.device, requires_grad: true});
                    (w * w).sum().backward();
                    let p = w.data_ptr();
                    no_grad { w -= w.grad * 0.25; };
                    [w.tolist(), w.requires_grad, w.is_leaf, w.grad_fn, w.data_ptr() == p]";
        assert_eq!(
            eval(&mut s, code),
            "[[0.5, -1.0, 1.5], true, true, (), true]",
            "{device}"
        );
        // The next backward works and accumulates into the same leaf.
        let code = "(w * w).sum().backward(); w.grad.tolist()";
        assert_eq!(eval(&mut s, code), "[3.0, -6.0, 9.0]", "{device}");
    }
);

device_test!(
    fn a_leaf_that_requires_grad_is_refused_outside_no_grad(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(
            &mut s,
            "let w = tensor([1.0, 2.0], #{device: dev.device, requires_grad: true});",
        );
        for code in [
            "w -= 1",
            "w += w",
            "w *= 2.0",
            "w /= tensor([2.0, 2.0], dev)",
        ] {
            let e = error(&mut s, code);
            assert_eq!(
                (e.kind.as_str(), e.message.as_str()),
                (
                    "RuntimeError",
                    "a leaf Variable that requires grad is being used in an in-place operation."
                ),
                "{code} on {device}"
            );
        }
        assert_eq!(
            eval(&mut s, "[w.tolist(), w.requires_grad, w.is_leaf]"),
            "[[1.0, 2.0], true, true]",
            "w is untouched, {device}"
        );
    }
);

device_test!(
    fn in_place_ops_on_graph_tensors_record_their_gradients(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(
            &mut s,
            "let x = tensor([1.0, 2.0], #{device: dev.device, requires_grad: true});",
        );
        // y = ((2x + 1) * x) / 2, so dy/dx = (4x + 1) / 2.
        let code = "let y = x * 2; y += 1; y *= x; y /= 2;
                    y.sum().backward();
                    [y.tolist(), y.grad_fn, y.is_leaf, x.grad.tolist()]";
        assert_eq!(
            eval(&mut s, code),
            "[[1.5, 5.0], \"DivBackward0\", false, [2.5, 4.5]]",
            "{device}"
        );
        // z = 3x / x is constant: the two paths of the gradient cancel.
        let code = "x.grad = (); let z = x * 3; z /= x; z -= x; z.sum().backward();
                    [z.tolist(), x.grad.tolist()]";
        assert_eq!(eval(&mut s, code), "[[2.0, 1.0], [-1.0, -1.0]]", "{device}");
        // A plain tensor becomes part of the graph when a tensor that requires grad is added.
        let code =
            "let acc = zeros(2, dev); acc += x; [acc.requires_grad, acc.is_leaf, acc.grad_fn]";
        assert_eq!(
            eval(&mut s, code),
            "[true, false, \"AddBackward0\"]",
            "{device}"
        );
        // Changing a tensor that backward needs is PyTorch's version error.
        let e = error(&mut s, "let e = x.exp(); e += 1; e.sum().backward();");
        assert!(
            e.message.contains("modified by an inplace operation"),
            "{device}: {}",
            e.message
        );
    }
);

device_test!(
    fn the_result_dtype_must_fit_the_tensor(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        eval(&mut s, "let i = tensor([1, 2, 3], dev);");
        for (code, message) in [
            (
                "i -= tensor([0.5, 0.5, 0.5], dev)",
                "result type Float can't be cast to the desired output type Long",
            ),
            (
                "i /= 2",
                "result type Float can't be cast to the desired output type Long",
            ),
            (
                "i *= 1.5",
                "result type Float can't be cast to the desired output type Long",
            ),
            (
                "let m = tensor([true, false], dev); m += 1",
                "result type Long can't be cast to the desired output type Bool",
            ),
            (
                "i += ones(2, 3, #{device: dev.device, dtype: \"int64\"})",
                "output with shape [3] doesn't match the broadcast shape [2, 3]",
            ),
        ] {
            let e = error(&mut s, code);
            assert_eq!(
                (e.kind.as_str(), e.message.as_str()),
                ("RuntimeError", message),
                "{code} on {device}"
            );
        }
        assert_eq!(
            eval(
                &mut s,
                "i += 1; i *= tensor([2, 2, 2], dev); [i.tolist(), i.dtype]"
            ),
            "[[4, 6, 8], \"int64\"]",
            "{device}"
        );
        assert_eq!(
        eval(
            &mut s,
            "let h = tensor([1.0], #{device: dev.device, dtype: \"float16\"}); h += tensor([0.5], dev); [h.tolist(), h.dtype]"
        ),
        "[[1.5], \"float16\"]",
        "{device}"
    );
    }
);

device_test!(
    fn other_targets_follow_python(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        // An int has no in-place add: `k += t` rebinds k to a new tensor.
        assert_eq!(
            eval(
                &mut s,
                "let k = 1; k += tensor([1.0, 2.0], dev); k.tolist()"
            ),
            "[2.0, 3.0]"
        );
        // A property and an array element are updated in place, as `p.grad *= 2` is in PyTorch.
        let code = "let p = tensor([1.0], #{device: dev.device, requires_grad: true});
                    (p * 3).sum().backward();
                    let g = p.grad; p.grad *= 2;
                    let ts = [ones(2, dev), ones(2, dev)]; let first = ts[0]; ts[0] += 1;
                    [p.grad.tolist(), g.tolist(), first.tolist(), ts[1].tolist()]";
        assert_eq!(
            eval(&mut s, code),
            "[[6.0], [6.0], [2.0, 2.0], [1.0, 1.0]]",
            "{device}"
        );
    }
);

#[test]
fn the_right_hand_temporary_is_freed_after_the_update() {
    // CPython's `w -= e` evaluates e, updates w in place, then drops e: two tensors at the peak,
    // where Rhai's `w = w - e` had three (w, e and the new w).
    let (_gpu, allocator) = common::gpu();
    let mut s = session("cuda");
    eval(
        &mut s,
        "let w = zeros(1000, 1000, dev); let p = w.data_ptr();",
    );
    let base = allocator.memory_allocated();
    allocator.reset_peak_memory_stats();
    eval(&mut s, "w -= w * 0.5;");
    assert_eq!(allocator.max_memory_allocated() - base, 4_000_256);
    assert_eq!(allocator.memory_allocated(), base);
    assert_eq!(eval(&mut s, "w.data_ptr() == p"), "true");
    eval(&mut s, "del w;");
}
