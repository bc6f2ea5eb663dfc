//! `+ - * / **` and unary `-` between tensors and numbers on either side, checked against f64 math,
//! one body run on every device.
use crate::common;
use common::device_test;
use rhai::Dynamic;
use torchlet_session::Session;

fn session(device: &str) -> Session {
    let setup = format!(
        "let dev = #{{device: \"{device}\"}};
         let a = tensor([[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]], dev);
         let b = tensor([[2.0, 0.5, -1.0], [1.0, -4.0, 8.0]], dev);
         let row = tensor([1.0, 2.0, 3.0], dev);"
    );
    common::session_with("<test>", &setup)
}

const A: [[f64; 3]; 2] = [[1.5, -2.0, 0.25], [3.0, 4.0, -0.5]];
const B: [[f64; 3]; 2] = [[2.0, 0.5, -1.0], [1.0, -4.0, 8.0]];
const ROW: [f64; 3] = [1.0, 2.0, 3.0];

/// Evaluate `expr` (a tensor) and return its flat values, shape, dtype and device.
fn eval(s: &mut Session, expr: &str) -> (Vec<f64>, Vec<i64>, String, String) {
    let (elements, shape, dtype, device) = common::tensor_facts(s, expr);
    let values = elements
        .into_iter()
        .map(|v| {
            v.as_float()
                .or_else(|_| v.as_int().map(|i| i as f64))
                .unwrap()
        })
        .collect();
    (values, shape, dtype, device)
}

fn expected(f: impl Fn(f64, f64, f64) -> f64) -> Vec<f64> {
    let mut v = Vec::new();
    for i in 0..2 {
        for j in 0..3 {
            v.push(f(A[i][j], B[i][j], ROW[j]));
        }
    }
    v
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (g, w) in got.iter().zip(want) {
        let tolerance = 1e-6 * w.abs().max(1.0);
        assert!(
            (g - w).abs() <= tolerance,
            "{what}: got {got:?}, want {want:?}"
        );
    }
}

device_test!(
    fn binary_operators_match_f64_math_on_every_device(device: &str) {
        type F = fn(f64, f64, f64) -> f64;
        let cases: [(&str, F); 17] = [
            ("a + b", |a, b, _| a + b),
            ("a - b", |a, b, _| a - b),
            ("a * b", |a, b, _| a * b),
            ("a / b", |a, b, _| a / b),
            ("a + 2", |a, _, _| a + 2.0),
            ("2 + a", |a, _, _| 2.0 + a),
            ("a - 1.5", |a, _, _| a - 1.5),
            ("1.5 - a", |a, _, _| 1.5 - a),
            ("a * 3", |a, _, _| a * 3.0),
            ("3 * a", |a, _, _| 3.0 * a),
            ("a / 4", |a, _, _| a / 4.0),
            ("1 / a", |a, _, _| 1.0 / a),
            ("-a", |a, _, _| -a),
            ("a ** 2", |a, _, _| a * a),
            ("a + row", |a, _, r| a + r),
            ("row * a", |a, _, r| r * a),
            ("(a + b) * 2 - a / b", |a, b, _| (a + b) * 2.0 - a / b),
        ];
        let mut s = session(device);
        for (expr, f) in cases {
            let (values, shape, dtype, dev) = eval(&mut s, expr);
            assert_close(&values, &expected(f), &format!("{expr} on {device}"));
            assert_eq!(shape, vec![2, 3], "{expr} on {device}");
            assert_eq!(dtype, "float32", "{expr} on {device}");
            assert!(
                dev.starts_with(device),
                "{expr}: result on {dev}, inputs on {device}"
            );
        }
    }
);

device_test!(
    fn numbers_promote_as_pytorch_does(device: &str) {
        let mut s = session(device);
        let ints = "tensor([1, 2, 3], dev)";
        let (v, _, dtype, _) = eval(&mut s, &format!("{ints} + 1"));
        assert_eq!(
            (v, dtype.as_str()),
            (vec![2.0, 3.0, 4.0], "int64"),
            "{device}"
        );
        let (v, _, dtype, _) = eval(&mut s, &format!("{ints} + 0.5"));
        assert_eq!(
            (v, dtype.as_str()),
            (vec![1.5, 2.5, 3.5], "float32"),
            "{device}"
        );
        let (v, _, dtype, _) = eval(&mut s, &format!("{ints} / 2"));
        assert_eq!(
            (v, dtype.as_str()),
            (vec![0.5, 1.0, 1.5], "float32"),
            "true division, {device}"
        );
        let (v, _, dtype, _) = eval(&mut s, &format!("{ints} * {ints}"));
        assert_eq!(
            (v, dtype.as_str()),
            (vec![1.0, 4.0, 9.0], "int64"),
            "{device}"
        );
    }
);

device_test!(
    fn compound_assignment_and_add_underscore_work_in_place(device: &str) {
        let mut s = session(device);
        let outcome = s.execute("let keep = a; a += 1; let same = keep.add_(10);");
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
        // `a += 1` changed the tensor `keep` also names, as Python's `+=` does.
        let (a, ..) = eval(&mut s, "a");
        assert_close(&a, &expected(|a, _, _| a + 11.0), "a += 1 is in place");
        let (keep, ..) = eval(&mut s, "keep");
        assert_close(&keep, &a, "keep is the same tensor");
        let (same, ..) = eval(&mut s, "same");
        assert_close(&same, &keep, "add_ returns the tensor itself");
    }
);

device_test!(
    fn scalar_results_compare_with_item(device: &str) {
        let mut s = session(device);
        let outcome = s.execute("let v = (a * b).sum().item();");
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
        let v: Dynamic = s.scope().get_value("v").unwrap();
        let want: f64 = expected(|a, b, _| a * b).iter().sum();
        assert!(
            (v.as_float().unwrap() - want).abs() < 1e-5,
            "{device}: {v} vs {want}"
        );
    }
);

device_test!(
    fn random_constructors_run_every_time_they_are_reached(device: &str) {
        // The generator is the process's, as PyTorch's is: held alone, so that no test running
        // beside this one (this body on another device among them) reseeds it between two draws.
        let _alone = common::alone_as_is();
        // No constant folding: two identical calls, and one call in a loop, give fresh samples.
        let mut s = session(device);
        let code = format!(
            "let d = #{{device: \"{device}\"}};
             let a = randn(4, d).tolist(); let b = randn(4, d).tolist();
             let seen = []; for i in 0..3 {{ seen.push(rand(2, d).tolist()); }}
             [a != b, seen[0] != seen[1], seen[1] != seen[2]]"
        );
        let outcome = s.execute(&code);
        assert_eq!(
            outcome.value.map(|v| v.plain),
            Some("[true, true, true]".into()),
            "{device}"
        );
        let seeded = "manual_seed(7); let p = randn(3).tolist(); manual_seed(7); let q = randn(3).tolist(); p == q";
        assert_eq!(
            s.execute(seeded).value.map(|v| v.plain),
            Some("true".into())
        );
    }
);
