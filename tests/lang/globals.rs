//! Functions read top-level variables as Python functions read globals; assigning makes a local.
use crate::common;
use common::device_test;

use torchlet_session::Session;

device_test!(
    fn a_function_reads_top_level_variables(dev: &str) {
        let (_guard, _) = common::gpu();
        let (mut s, _) = Session::captured("<test>");
        let code = format!(
            r#"let w = ones(3, #{{device: "{dev}"}}) * 2;
            let lr = 0.5;
            fn scaled() {{ w * lr }}
            fn total() {{ scaled().sum().item() }}
            total()"#
        );
        assert_eq!(common::value(s.execute(&code)), "3.0", "on {dev}");
    }
);

#[test]
fn functions_see_variables_bound_in_later_inputs() {
    let (mut s, _) = Session::captured("<test>");
    common::value(s.execute("fn show() { count * 10 }"));
    common::value(s.execute("let count = 4;"));
    assert_eq!(common::value(s.execute("show()")), "40");
    common::value(s.execute("count = 5;"));
    assert_eq!(common::value(s.execute("show()")), "50");
}

#[test]
fn assigning_inside_a_function_makes_a_local() {
    let (mut s, _) = Session::captured("<test>");
    let code = "let n = 1; fn bump() { n = n + 100; n } [bump(), n]";
    assert_eq!(common::value(s.execute(code)), "[101, 1]");
}

#[test]
fn parameters_and_locals_shadow_globals() {
    let (mut s, _) = Session::captured("<test>");
    let code = "let x = 1; let y = 2; fn f(x) { let y = 20; x + y } f(10)";
    assert_eq!(common::value(s.execute(code)), "30");
}

#[test]
fn a_name_neither_local_nor_global_is_a_name_error() {
    let (mut s, _) = Session::captured("<test>");
    let e = s.execute("fn f() { nowhere } f()").error.expect("an error");
    assert_eq!(e.kind, "NameError");
}

#[test]
fn a_function_does_not_keep_globals_alive_after_it_returns() {
    let (_guard, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    let before = a.memory_allocated();
    common::value(s.execute(
        r#"let big = ones(256, 1024, #{device: "cuda"}); fn size() { big.numel() } size();"#,
    ));
    assert_eq!(a.memory_allocated() - before, 1 << 20);
    common::value(s.execute("del big;"));
    assert_eq!(a.memory_allocated(), before);
}
