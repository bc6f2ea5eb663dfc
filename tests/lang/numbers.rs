//! Numbers follow Python: true division, floor modulo, `floordiv`, `int`, `float`, `round`,
//! `abs`/`min`/`max`, `fmt_bytes`, and a hint where `a // b` was meant as floor division.
use crate::common;

use common::{error, eval};
use torchlet_session::{Completeness, OutputEvent, Session};

/// Each `(code, echo)` pair, in one session.
fn check(cases: &[(&str, &str)]) {
    let (mut s, _) = Session::captured("<test>");
    for (code, want) in cases {
        assert_eq!(eval(&mut s, code), *want, "{code}");
    }
}

#[test]
fn slash_is_true_division() {
    check(&[
        ("7 / 2", "3.5"),
        ("-7 / 2", "-3.5"),
        ("6 / 3", "2.0"),
        ("type_of(6 / 3)", "f64"),
        ("1 / 4.0", "0.25"),
        ("2.5 / 2", "1.25"),
        (
            "4000256 / 1024 / 1024 > 3.814 && 4000256 / 1024 / 1024 < 3.815",
            "true",
        ),
        // Other integer arithmetic stays integer.
        ("[7 * 2, 7 - 2, 7 + 2, 2 ** 10]", "[14, 5, 9, 1024]"),
        ("type_of(7 * 2)", "i64"),
    ]);
}

#[test]
fn division_is_not_folded_to_an_integer_at_compile_time() {
    check(&[
        ("const HALF = 7 / 2; HALF", "3.5"),
        ("fn half(n) { n / 2 } half(7)", "3.5"),
        ("let n = 7; n /= 2; n", "3.5"),
        ("let m = 9.0; m /= 2; m", "4.5"),
        (
            "let total = 0; for i in 0..4 { total += i / 2; } total",
            "3.0",
        ),
    ]);
}

#[test]
fn modulo_rounds_toward_negative_infinity() {
    check(&[
        ("[7 % 3, -7 % 3, 7 % -3, -7 % -3]", "[1, 2, -2, -1]"),
        ("[7.5 % 2, -7.5 % 2, 7.5 % -2]", "[1.5, 0.5, -0.5]"),
        ("-7 % 2.5", "0.5"),
        ("let m = -7; m %= 3; m", "2"),
        ("let f = -7.5; f %= 2; f", "0.5"),
        ("let g = -7; g %= 2.5; g", "0.5"),
    ]);
}

#[test]
fn float_comparisons_are_exact() {
    check(&[
        ("0.1 + 0.2 == 0.3", "false"),
        ("0.1 + 0.2 != 0.3", "true"),
        ("float(\"inf\") > 1e308", "true"),
        ("1.0 + 1e-16 > 1.0", "false"),
        ("1.0 + 1e-15 > 1.0", "true"),
        (
            "[3 > 2.5, 2.5 < 3, 3 == 3.0, 3 >= 3.0, 2.0 <= 1]",
            "[true, true, true, true, false]",
        ),
        (
            "let nan = float(\"nan\"); [nan == nan, nan != nan, nan < 1.0]",
            "[false, true, false]",
        ),
    ]);
}

#[test]
fn floordiv_is_python_floor_division() {
    check(&[
        (
            "[floordiv(7, 2), floordiv(-7, 2), floordiv(7, -2), floordiv(-7, -2)]",
            "[3, -4, -4, 3]",
        ),
        ("type_of(floordiv(7, 2))", "i64"),
        (
            "[floordiv(7.5, 2), floordiv(-7.5, 2), floordiv(7, 2.0)]",
            "[3.0, -4.0, 3.0]",
        ),
        ("floordiv(4000256, 1024)", "3906"),
    ]);
}

#[test]
fn division_by_zero_is_python_s_error_and_the_session_goes_on() {
    let (mut s, _) = Session::captured("<test>");
    for (code, message) in [
        ("1 / 0", "division by zero"),
        ("1.0 / 0", "float division by zero"),
        ("let z = 0; 5 / z", "division by zero"),
        ("5 % 0", "integer modulo by zero"),
        ("5.0 % 0", "float modulo by zero"),
        ("floordiv(1, 0)", "integer division or modulo by zero"),
        ("floordiv(1.0, 0)", "float floor division by zero"),
        ("let k = 3; k /= 0;", "division by zero"),
    ] {
        let e = error(&mut s, code);
        assert_eq!(
            (e.kind.as_str(), e.message.as_str()),
            ("ZeroDivisionError", message),
            "{code}"
        );
    }
    assert_eq!(eval(&mut s, "let k = 3; k"), "3");
}

#[test]
fn int_and_float_convert_as_python_does() {
    check(&[
        ("[int(3.9), int(-3.9), int(7), int(true)]", "[3, -3, 7, 1]"),
        (
            "[int(\"42\"), int(\" -7 \"), int(\"+5\"), int(\"1_000\")]",
            "[42, -7, 5, 1000]",
        ),
        (
            "[float(3), float(\"2.5\"), float(\" 1e3 \"), float(false)]",
            "[3.0, 2.5, 1000.0, 0.0]",
        ),
        ("float(\"inf\") > 1e308", "true"),
        ("float(\"-1_000.5\")", "-1000.5"),
    ]);
    let (mut s, _) = Session::captured("<test>");
    for (code, kind, message) in [
        (
            "int(\"3.5\")",
            "ValueError",
            "invalid literal for int() with base 10: '3.5'",
        ),
        (
            "int(\"\")",
            "ValueError",
            "invalid literal for int() with base 10: ''",
        ),
        (
            "int(\"1__0\")",
            "ValueError",
            "invalid literal for int() with base 10: '1__0'",
        ),
        (
            "int(float(\"nan\"))",
            "ValueError",
            "cannot convert float NaN to integer",
        ),
        (
            "int(float(\"inf\"))",
            "OverflowError",
            "cannot convert float infinity to integer",
        ),
        (
            "float(\"abc\")",
            "ValueError",
            "could not convert string to float: 'abc'",
        ),
    ] {
        let e = error(&mut s, code);
        assert_eq!(
            (e.kind.as_str(), e.message.as_str()),
            (kind, message),
            "{code}"
        );
    }
    // `t.float()` is still PyTorch's float32 copy.
    assert_eq!(eval(&mut s, "tensor([1, 2]).float().dtype"), "float32");
}

#[test]
fn round_breaks_ties_to_even() {
    check(&[
        (
            "[round(2.5), round(3.5), round(-2.5), round(0.5), round(2.6)]",
            "[2, 4, -2, 0, 3]",
        ),
        ("type_of(round(2.5))", "i64"),
        (
            "[round(2.675, 2), round(0.125, 2), round(0.375, 2), round(3.14159, 3)]",
            "[2.67, 0.12, 0.38, 3.142]",
        ),
        (
            "[round(1234, -2), round(1250, -2), round(1350, -2), round(7, 1)]",
            "[1200, 1200, 1400, 7]",
        ),
        ("round(1250.0, -2)", "1200.0"),
        ("round(4000256 / 1024 / 1024, 2)", "3.81"),
    ]);
}

#[test]
fn abs_min_and_max_take_numbers_and_arrays() {
    check(&[
        ("[abs(-3), abs(-2.5), abs(4)]", "[3, 2.5, 4]"),
        (
            "[max(1, 2), min(3, 2), max(1, 2.5), min(1.5, -1), max(2.0, 1)]",
            "[2, 2, 2.5, -1, 2.0]",
        ),
        ("[max([1, 5, 3]), min([2.5, -1, 3])]", "[5, -1]"),
    ]);
    let (mut s, _) = Session::captured("<test>");
    let e = error(&mut s, "max([])");
    assert_eq!(
        (e.kind.as_str(), e.message.as_str()),
        ("ValueError", "max() arg is an empty sequence")
    );
    assert_eq!(error(&mut s, "min([1, \"a\"])").kind, "TypeError");
    // The tensor reductions keep their meaning.
    assert_eq!(eval(&mut s, "tensor([1.0, 5.0]).max().item()"), "5.0");
}

#[test]
fn fmt_bytes_prints_binary_units() {
    check(&[
        ("fmt_bytes(4000256)", "3.81 MiB"),
        ("fmt_bytes(512)", "512 B"),
        ("fmt_bytes(0)", "0 B"),
        ("fmt_bytes(1024)", "1.00 KiB"),
        ("fmt_bytes(20971520)", "20.00 MiB"),
        ("fmt_bytes(1048575)", "1.00 MiB"),
        ("fmt_bytes(1 << 40)", "1.00 TiB"),
        ("fmt_bytes(3 << 50)", "3072.00 TiB"),
        ("fmt_bytes(-2048)", "-2.00 KiB"),
        ("fmt_bytes(1536.0)", "1.50 KiB"),
        ("fmt_bytes(143 * 1024 * 1024 * 1024)", "143.00 GiB"),
    ]);
}

fn stderr_of(events: &[OutputEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            OutputEvent::Stderr(s) => Some(s.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn floor_division_written_with_slashes_gets_a_hint() {
    let (mut s, out) = Session::captured("<cell>");
    // As the last statement it parses (as `let q = n`), so it runs, with a warning first.
    assert_eq!(eval(&mut s, "let n = 7;\nlet q = n // 2;"), "()");
    assert_eq!(eval(&mut s, "q"), "7");
    let warned = stderr_of(&out.events());
    assert!(
        warned.contains("<cell>:2: warning: `//` starts a comment, so `n // 2` is `n`")
            && warned.contains("floordiv(n, 2)"),
        "{warned}"
    );
    // Anywhere else the comment eats the `;` or a `)`: the parse error carries the hint.
    for (code, line, fix) in [
        ("print(n // 2)", 1, "floordiv(n, 2)"),
        ("let half = n // 2;\nprint(half);", 1, "floordiv(n, 2)"),
        (
            "let mib = 1;\nlet x = total_bytes() // (1024 * 1024);\nx",
            2,
            "floordiv(total_bytes(), (1024 * 1024))",
        ),
    ] {
        let e = error(&mut s, code);
        assert_eq!(e.kind, "SyntaxError", "{code}");
        // The hint is the error's `hint:` line (or, when the error has one already, in the message).
        let text = format!(
            "{}\nhint: {}",
            e.message,
            e.hint.clone().unwrap_or_default()
        );
        let hint = format!("line {line}: `//` starts a comment");
        assert!(text.contains(&hint) && text.contains(fix), "{code}: {text}");
    }
    // The REPL runs it (and shows the hint) instead of waiting for a `)` the comment ate.
    assert_eq!(s.is_complete("print(n // 2)"), Completeness::Invalid);
    assert_eq!(s.is_complete("print(n"), Completeness::Incomplete);
}

#[test]
fn real_comments_get_no_hint() {
    let (mut s, out) = Session::captured("<cell>");
    let code = "// a comment on its own line\n\
                let n = 5; // the count\n\
                let m = n * 2; // 2 per item\n\
                let k = n // n is five\n\
                ;\n\
                let url = \"http://x // y\";\n\
                if n > 1 { n } else { 0 } // pick\n\
                ;\n\
                m // TODO";
    assert_eq!(eval(&mut s, code), "10");
    assert_eq!(stderr_of(&out.events()), "");
}
