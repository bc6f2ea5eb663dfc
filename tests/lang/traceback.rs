//! An error inside a function prints Python's traceback: every call as `FILE:LINE:COL in NAME`,
//! innermost last, then the error.
use torchlet_session::Session;

const CODE: &str = "fn inner(a) {
    a + zeros(3)
}
fn outer(a) {
    let b = a * 2;
    inner(b)
}
let y = outer(zeros(2));";

#[test]
fn an_error_in_nested_calls_lists_every_frame() {
    let (mut s, _) = Session::captured("train.rhai");
    let e = s.execute(CODE).error.expect("a shape error");
    let places: Vec<String> = e.frames.iter().map(|f| f.location()).collect();
    assert_eq!(
        places,
        [
            "train.rhai:8:9 in <module>",
            "train.rhai:6:5 in outer",
            "train.rhai:2:7 in inner"
        ]
    );
    let text = e.traceback().expect("a traceback");
    assert!(
        text.starts_with("Traceback (most recent call last):\n"),
        "{text}"
    );
    assert!(text.contains("    a + zeros(3)\n      ^\n"), "{text}");
    assert!(text.ends_with("RuntimeError: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"), "{text}");
}

#[test]
fn a_function_from_an_earlier_input_shows_its_own_line() {
    let (mut s, _) = Session::captured("<cell>");
    assert!(s
        .execute("fn fail(t) {\n    t.reshape(7)\n}")
        .error
        .is_none());
    let e = s
        .execute("let z = 1;\nfail(ones(4))")
        .error
        .expect("a reshape error");
    assert_eq!(e.frames.len(), 2);
    assert_eq!(e.frames[0].line, Some(2));
    assert_eq!(e.frames[1].name, "fail");
    assert_eq!(e.frames[1].source_line.as_deref(), Some("    t.reshape(7)"));
}

#[test]
fn an_error_outside_functions_has_no_traceback() {
    let (mut s, _) = Session::captured("<cell>");
    let e = s
        .execute("zeros(2) + zeros(3)")
        .error
        .expect("a shape error");
    assert!(e.frames.is_empty());
    assert!(e.traceback().is_none());
}

#[test]
fn a_missing_method_inside_a_function_is_an_attribute_error() {
    let (mut s, _) = Session::captured("<cell>");
    let e = s
        .execute("fn f(t) { t.nonexistent() }\nf(ones(2))")
        .error
        .expect("an error");
    assert_eq!(e.kind, "AttributeError");
    assert_eq!(e.frames.last().map(|f| f.column), Some(Some(13)));
}

#[test]
fn no_message_names_a_rust_type() {
    let (mut s, _) = Session::captured("<cell>");
    for code in [
        "fn f(t) { t.nonexistent() } f(ones(2))",
        "fn f() { ones(2).reshape(\"a\") } f()",
    ] {
        let e = s.execute(code).error.expect("an error");
        let text = e.traceback().unwrap_or_else(|| e.to_string());
        assert!(
            !text.contains("torchlet::") && !text.contains("alloc::"),
            "{text}"
        );
    }
}
