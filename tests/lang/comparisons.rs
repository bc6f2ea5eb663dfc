//! `> < >= <= == !=` on tensors give bool tensors (broadcasting, numbers on either side, the
//! methods `gt lt ge le eq ne`), and `if`/`while`/`&&`/`||`/`!` take a one-element tensor as
//! PyTorch's `bool()` does; one body run on every device.
use crate::common;

use common::{device_test, error, value};

use torchlet_session::Session;

fn session(device: &str) -> Session {
    let setup = format!(
        "let dev = #{{device: \"{device}\"}};
         let a = tensor([[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]], dev);
         let b = tensor([[2.0, -2.0, -1.0], [1.0, 4.0, 8.0]], dev);
         let row = tensor([1.0, 2.0, 0.25], dev);
         let ints = tensor([1, 2, 3], dev);"
    );
    common::session_with("<test>", &setup)
}

const A: [f64; 6] = [1.5, -2.0, 0.25, 3.0, 4.0, -0.5];
const B: [f64; 6] = [2.0, -2.0, -1.0, 1.0, 4.0, 8.0];
const ROW: [f64; 3] = [1.0, 2.0, 0.25];

/// Evaluate `expr` (a tensor): its flat values as bools, shape, dtype and device.
fn eval(s: &mut Session, expr: &str) -> (Vec<bool>, Vec<i64>, String, String) {
    let (elements, shape, dtype, device) = common::tensor_facts(s, expr);
    let values = elements
        .iter()
        .map(|v| v.as_bool().expect("bool elements"))
        .collect();
    (values, shape, dtype, device)
}

device_test!(
    fn operators_and_methods_compare_elementwise_into_bool_tensors(device: &str) {
        let (_guard, _) = common::gpu();
        type F = fn(f64, f64, f64) -> bool;
        let cases: [(&str, F); 16] = [
            ("a > b", |a, b, _| a > b),
            ("a < b", |a, b, _| a < b),
            ("a >= b", |a, b, _| a >= b),
            ("a <= b", |a, b, _| a <= b),
            ("a == b", |a, b, _| a == b),
            ("a != b", |a, b, _| a != b),
            ("a > row", |a, _, r| a > r),
            ("row >= a", |a, _, r| r >= a),
            ("a > 0.5", |a, _, _| a > 0.5),
            ("0.5 < a", |a, _, _| 0.5 < a),
            ("a <= 1", |a, _, _| a <= 1.0),
            ("3 == a", |a, _, _| a == 3.0),
            ("a.gt(b)", |a, b, _| a > b),
            ("a.le(row)", |a, _, r| a <= r),
            ("a.eq(4)", |a, _, _| a == 4.0),
            ("a.ne(-2.0)", |a, _, _| a != -2.0),
        ];
        let mut s = session(device);
        for (expr, f) in cases {
            let (values, shape, dtype, dev) = eval(&mut s, expr);
            let want: Vec<bool> = (0..6).map(|i| f(A[i], B[i], ROW[i % 3])).collect();
            assert_eq!(values, want, "{expr} on {device}");
            assert_eq!(shape, vec![2, 3], "{expr} on {device}");
            assert_eq!(dtype, "bool", "{expr} on {device}");
            assert!(dev.starts_with(device), "{expr}: on {dev}");
        }
    }
);

device_test!(
    fn integer_and_bool_tensors_compare_with_any_number(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        for (expr, want) in [
            ("ints > 1", [false, true, true]),
            ("ints > 1.5", [false, true, true]),
            ("ints == 2", [false, true, false]),
            ("ints < 2.5", [true, true, false]),
            ("2.5 > ints", [true, true, false]),
            ("ints >= ints.float()", [true, true, true]),
            ("(ints > 1) == true", [false, true, true]),
            ("(ints > 1) != (ints < 3)", [true, false, true]),
            ("ints.to(\"uint8\") < 300", [true, true, true]),
            ("ints.to(\"uint8\") > -1", [true, true, true]),
        ] {
            let (values, ..) = eval(&mut s, expr);
            assert_eq!(values, want, "{expr} on {device}");
        }
    }
);

device_test!(
    fn a_number_is_compared_in_the_tensor_s_dtype_as_pytorch_does(device: &str) {
        let (_guard, _) = common::gpu();
        // 0.1 rounded to float32 is the tensor's 0.1: equal, not greater (PyTorch prints the same).
        let mut s = session(device);
        for (expr, want) in [
            ("tensor([0.1], dev) > 0.1", false),
            ("tensor([0.1], dev) == 0.1", true),
            (
                "tensor([0.1], #{device: dev.device, dtype: \"float16\"}) == 0.1",
                true,
            ),
            (
                "tensor([0.1], #{device: dev.device, dtype: \"float64\"}) == 0.1",
                true,
            ),
            (
                "tensor([0.1], #{device: dev.device, dtype: \"float64\"}) > 0.1",
                false,
            ),
        ] {
            let (values, ..) = eval(&mut s, expr);
            assert_eq!(values, [want], "{expr} on {device}");
        }
        value(s.execute("let n = tensor([1.0, 0.0], dev) / 0.0 * 0.0;"));
        let (nan, ..) = eval(&mut s, "n != n");
        assert_eq!(nan, [true, true], "NaN is unequal to itself on {device}");
    }
);

device_test!(
    fn a_scalar_comparison_echoes_as_a_bool_tensor(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let suffix = if device == "cuda" {
            ", device='cuda:0'"
        } else {
            ""
        };
        assert_eq!(
            value(s.execute("tensor(3.0, dev) > 0.5")),
            format!("tensor(True{suffix})")
        );
        assert_eq!(
            value(s.execute("row > 1")),
            format!("tensor([False,  True, False]{suffix})")
        );
    }
);

device_test!(
    fn masks_multiply_sum_and_stop_gradients(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let code = "let m = a > 0; [(a * m).flatten().tolist(), (m * a).dtype, m.sum().item(), m.sum().dtype]";
        assert_eq!(
            value(s.execute(code)),
            "[[1.5, -0.0, 0.25, 3.0, 4.0, -0.0], \"float32\", 4, \"int64\"]",
            "{device}"
        );
        let code = "let w = tensor([1.0, -2.0, 3.0], #{device: dev.device, requires_grad: true});
                    let mask = w > 0;
                    (w * mask).sum().backward();
                    [mask.requires_grad, mask.is_leaf, w.grad.tolist()]";
        assert_eq!(
            value(s.execute(code)),
            "[false, true, [1.0, 0.0, 1.0]]",
            "{device}"
        );
    }
);

device_test!(
    fn shape_and_device_errors_are_pytorch_s_and_the_session_goes_on(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let e = error(&mut s, "ones(2, dev) > ones(3, dev)");
        assert_eq!(e.kind, "RuntimeError");
        assert_eq!(
        e.message,
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
    );
        let e = error(&mut s, "a > \"x\"");
        assert_eq!(
            (e.kind.as_str(), e.message.as_str()),
            (
                "TypeError",
                "'>' not supported between instances of 'Tensor' and 'str'"
            )
        );
        let e = error(&mut s, "[1] <= a");
        assert_eq!(
            e.message,
            "'<=' not supported between instances of 'list' and 'Tensor'"
        );
        // Equality with other values is false, as in Python: `t.grad == ()` still tests for None.
        assert_eq!(
            value(s.execute("[a == \"x\", a != (), a.grad == ()]")),
            "[false, true, true]"
        );
        assert_eq!(value(s.execute("(a > b).shape")), "[2, 3]");
    }
);

#[test]
fn a_cpu_tensor_meets_a_cuda_one_as_in_pytorch() {
    let (_guard, _) = common::gpu();
    let mut s = session("cuda");
    let e = error(&mut s, "a > a.cpu()");
    assert!(
        e.message
            .starts_with("Expected all tensors to be on the same device"),
        "{}",
        e.message
    );
    // A 0-dim CPU tensor is a number next to a GPU tensor, as in PyTorch.
    let (values, ..) = eval(&mut s, "row > tensor(1.0)");
    assert_eq!(values, [false, true, false]);
}

#[test]
fn a_bool_tensor_takes_one_byte_an_element() {
    let (_gpu, allocator) = common::gpu();
    let mut s = session("cuda");
    value(s.execute("let x = rand(1000, 1000, dev);"));
    let before = allocator.memory_allocated();
    assert_eq!(
        value(s.execute("let m = x > 0.5; [m.nbytes, m.element_size()]")),
        "[1000000, 1]"
    );
    // 10^6 bytes, rounded up to the allocator's 512-byte granule.
    assert_eq!(allocator.memory_allocated() - before, 1_000_448);
    value(s.execute("m = ();"));
    assert_eq!(allocator.memory_allocated(), before);
}

device_test!(
    fn conditions_take_one_element_tensors_as_pytorch_s_bool(device: &str) {
        let (_guard, _) = common::gpu();
        let mut s = session(device);
        let cases = [
            ("if tensor(3.0, dev) > 0.5 { 1 } else { 2 }", "1"),
            ("if tensor([0.0], dev) { 1 } else { 2 }", "2"),
            ("if a.sum() { 1 } else { 2 }", "1"),
            (
                "let t = tensor(0.0, dev); let n = 0; while t < 3 { t = t + 1; n += 1; } n",
                "3",
            ),
            (
                "let u = tensor(0, dev); do { u = u + 2; } until u >= 5; u.item()",
                "6",
            ),
            ("(tensor(1.0, dev) > 0) && (tensor(2.0, dev) > 1)", "true"),
            ("(tensor(1.0, dev) > 5) || a.max() > 3", "true"),
            ("!(tensor(0.0, dev) > 1)", "true"),
            ("bool(tensor(-0.5, dev))", "true"),
        ];
        for (code, want) in cases {
            assert_eq!(value(s.execute(code)), want, "{code} on {device}");
        }
        for (code, message) in [
            (
                "if a > 0 { 1 }",
                "Boolean value of Tensor with more than one value is ambiguous",
            ),
            (
                "while b { break; }",
                "Boolean value of Tensor with more than one value is ambiguous",
            ),
            (
                "let ok = row > 0 && true;",
                "Boolean value of Tensor with more than one value is ambiguous",
            ),
            (
                "!(row > 0)",
                "Boolean value of Tensor with more than one value is ambiguous",
            ),
            (
                "if zeros(0, dev) { 1 }",
                "Boolean value of Tensor with no values is ambiguous",
            ),
        ] {
            let e = error(&mut s, code);
            assert_eq!(
                (e.kind.as_str(), e.message.as_str()),
                ("RuntimeError", message),
                "{code} on {device}"
            );
        }
        let e = error(&mut s, "let z = 1;\nif a > 0 { z = 2; }");
        assert_eq!(e.line, Some(2), "the error points at the condition");
        assert_eq!(value(s.execute("z")), "1", "the session goes on");
    }
);

#[test]
fn conditions_take_python_s_truth_of_other_values() {
    let (_guard, _) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    // (Rhai's parser refuses a literal number as a condition, so the values come in variables.)
    for (code, want) in [
        ("let v = 0; if v { 1 } else { 2 }", "2"),
        ("let v = 7; if v { 1 } else { 2 }", "1"),
        ("let v = 0.0; if v { 1 } else { 2 }", "2"),
        ("let v = \"\"; if v { 1 } else { 2 }", "2"),
        ("let v = \"x\"; if v { 1 } else { 2 }", "1"),
        ("let v = []; if v { 1 } else { 2 }", "2"),
        ("let v = [0]; if v { 1 } else { 2 }", "1"),
        ("let v = (); if v { 1 } else { 2 }", "2"),
        ("let v = #{}; if v { 1 } else { 2 }", "2"),
        ("let v = 3; let w = 0; v && w", "false"),
        ("let i = 0; while i < 5 { i += 1; } i", "5"),
        ("let j = 3; loop { j -= 1; if j == 0 { break; } } j", "0"),
        (
            "[bool(0), bool(2.5), bool(\"\"), bool([1]), bool(())]",
            "[false, true, false, true, false]",
        ),
    ] {
        assert_eq!(value(s.execute(code)), want, "{code}");
    }
}

#[test]
fn inside_a_fn_a_tensor_condition_asks_for_bool() {
    let (_guard, _) = common::gpu();
    // Function bodies keep Rhai's own evaluation (the rewrite cannot rebuild them), so a tensor
    // condition there is an error that says what to write.
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("fn positive(t) { if t > 0 { 1 } else { 0 } }"));
    let e = error(&mut s, "positive(tensor(2.0))");
    assert_eq!(e.kind, "TypeError");
    assert!(
        e.message.contains("write the condition as bool(x)"),
        "{}",
        e.message
    );
    value(s.execute("fn positive2(t) { if bool(t > 0) { 1 } else { 0 } }"));
    assert_eq!(
        value(s.execute("[positive2(tensor(2.0)), positive2(tensor(-2.0))]")),
        "[1, 0]"
    );
}
