//! `no_grad { … }`, `enable_grad { … }`, `inference_mode { … }`: Python's `with` for grad mode.
use torchlet::session::{Outcome, Session};

fn value(outcome: Outcome) -> String {
    match (outcome.value, outcome.error) {
        (Some(v), None) => v.plain,
        (None, None) => "()".into(),
        (_, Some(e)) => panic!("unexpected error: {}", e.located()),
    }
}

#[test]
fn variables_declared_inside_stay_visible_after_the_block() {
    for keyword in ["no_grad", "enable_grad", "inference_mode"] {
        let (mut s, _) = Session::captured("<test>");
        let code =
            format!("let a = 1;\n{keyword} {{ let y = a + 1; a = 10; }}\nlet z = 100;\n[a, y, z]");
        assert_eq!(value(s.execute(&code)), "[10, 2, 100]", "{keyword}");
        assert_eq!(
            value(s.execute("y")),
            "2",
            "{keyword}: y persists to the next input"
        );
    }
}

#[test]
fn blocks_nest_and_a_plain_block_still_scopes_its_own_variables() {
    let (mut s, _) = Session::captured("<test>");
    let code = "let a = 1;
        no_grad { enable_grad { let inner = 5; } let outer = inner + 1; }
        { no_grad { let hidden = 3; } a += hidden; }
        [a, inner, outer]";
    assert_eq!(value(s.execute(code)), "[4, 5, 6]");
    let e = s
        .execute("hidden")
        .error
        .expect("hidden belonged to a plain block");
    assert_eq!(e.kind, "NameError");
}

#[test]
fn a_block_in_a_loop_or_function_keeps_offsets_right() {
    let (mut s, _) = Session::captured("<test>");
    let code = "fn f(x) { let before = x; no_grad { let doubled = x * 2; } before + doubled }
        let total = 0;
        for i in 0..4 { no_grad { let sq = i * i; } total += sq + f(i); }
        total";
    // sum of i*i + 3i over 0..4 = 14 + 18
    assert_eq!(value(s.execute(code)), "32");
}

#[test]
fn a_block_is_a_statement_with_its_last_value() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(value(s.execute("let v = no_grad { 41 + 1 }; v")), "42");
    assert_eq!(value(s.execute("no_grad { } 3")), "3");
}

#[test]
fn an_error_inside_a_block_reports_its_position_and_keeps_earlier_variables() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let kept = 9;"));
    let e = s
        .execute("no_grad {\n  let partial = 1;\n  missing + 1\n}")
        .error
        .expect("missing is undefined");
    assert_eq!(e.kind, "NameError");
    assert_eq!((e.line, e.column), (Some(3), Some(3)));
    assert_eq!(value(s.execute("kept")), "9");
}
