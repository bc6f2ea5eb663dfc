//! `del x` and `del x, y`: the name is gone, its tensor freed at once, the rest of the scope intact.
use crate::common;

use common::{device_test, value};

use torchlet_session::Session;

#[test]
fn deleted_name_is_not_defined() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let x = 1;"));
    value(s.execute("del x"));
    let e = common::error(&mut s, "x + 1");
    assert_eq!(e.kind, "NameError");
    assert_eq!(e.message, "name 'x' is not defined");
    assert_eq!((e.line, e.column), (Some(1), Some(1)));
    assert!(!s.variable_names().contains(&"x".to_string()));
}

#[test]
fn deleting_in_one_input_then_using_later_in_it_fails_at_the_use() {
    let (mut s, _) = Session::captured("<test>");
    let e = common::error(
        &mut s,
        "let x = 1;\nlet y = 2;\ndel x;\nprint(y);\nprint(x);",
    );
    assert_eq!(e.kind, "NameError");
    assert_eq!(e.line, Some(5));
    assert_eq!(
        e.located(),
        "<test>:5:7: NameError: name 'x' is not defined"
    );
}

#[test]
fn del_several_names_at_once() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let a = 1; let b = 2; let c = 3; del a, b;"));
    assert_eq!(value(s.execute("c")), "3");
    assert_eq!(common::error(&mut s, "a").kind, "NameError");
    assert_eq!(common::error(&mut s, "b").kind, "NameError");
}

#[test]
fn deleting_an_unknown_name_is_an_error_with_its_position() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let keep = 7;"));
    let e = common::error(&mut s, "let a = 1;\ndel nope");
    assert_eq!(e.kind, "NameError");
    assert_eq!(e.message, "name 'nope' is not defined");
    assert_eq!((e.line, e.column), (Some(2), Some(5)));
    assert_eq!(value(s.execute("keep")), "7");
}

#[test]
fn deleting_twice_is_an_error() {
    let (mut s, _) = Session::captured("<test>");
    let e = common::error(&mut s, "let x = 1; del x; del x;");
    assert_eq!(e.kind, "NameError");
}

#[test]
fn del_in_a_nested_block_leaves_outer_variables_intact() {
    // Removing a scope entry in a block would shift the offsets the parser gave `a` and `c`.
    let (mut s, _) = Session::captured("<test>");
    let code = "let a = 1; let b = 2; let c = 3;
        if true { let inner = 10; del b; a = a + inner; }
        for i in 0..3 { if i == 1 { let t = i; del t; } c += i; }
        [a, c]";
    assert_eq!(value(s.execute(code)), "[11, 6]");
    assert_eq!(common::error(&mut s, "b").kind, "NameError");
    assert_eq!(value(s.execute("a + c")), "17");
}

#[test]
fn del_then_let_defines_the_name_again() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(value(s.execute("let x = 1; del x; let x = 5; x")), "5");
    assert_eq!(value(s.execute("del x; let x = 6; x")), "6");
}

#[test]
fn del_inside_a_function_touches_only_its_locals() {
    let (mut s, _) = Session::captured("<test>");
    let code = "fn f(v) { let w = v * 2; del v; w }
        let v = 4; f(v) + v";
    assert_eq!(value(s.execute(code)), "12");
    let e = common::error(&mut s, "fn g(v) { del v; v } g(1)");
    assert_eq!(e.kind, "NameError");
}

#[test]
fn deleting_a_constant_is_a_type_error() {
    let (mut s, _) = Session::captured("<test>");
    let e = common::error(&mut s, "const K = 3; del K;");
    assert_eq!(e.kind, "TypeError");
    assert_eq!(value(s.execute("K")), "3");
}

#[test]
fn failed_input_keeps_variables_defined_before_it() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let a = 1; let b = 2;"));
    common::error(&mut s, "del a; del missing;");
    // `a` was deleted before the failure, as Python would have; `b` is untouched.
    assert_eq!(common::error(&mut s, "a").kind, "NameError");
    assert_eq!(value(s.execute("b")), "2");
    assert_eq!(s.variable_names(), vec!["b".to_string()]);
}

mod tensors {
    //! `del` frees GPU memory at once, unless something else still holds the tensor.

    use crate::common;
    use crate::common::figures::X;
    use torchlet_session::Session;

    /// The simulated (or real) cuda:0 to this test alone.
    fn exclusive() -> crate::common::Exclusive {
        super::common::gpu().0
    }

    fn allocated(s: &mut Session) -> i64 {
        let outcome = s.execute("memory_allocated()");
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
        outcome.value.unwrap().plain.parse().unwrap()
    }

    #[test]
    fn del_frees_the_last_reference_at_once() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        let base = allocated(&mut s);
        common::run(&mut s, "let x = randn(1000, 1000, #{device: \"cuda\"});");
        assert_eq!(allocated(&mut s), base + X as i64);
        // Within one input: the figure read right after `del` already dropped.
        let outcome = s.execute("del x; memory_allocated()");
        assert_eq!(outcome.value.unwrap().plain, base.to_string());
    }

    #[test]
    fn del_of_one_name_keeps_a_tensor_another_name_holds() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        let base = allocated(&mut s);
        common::run(
            &mut s,
            "let x = ones(1000, 1000, #{device: \"cuda\"}); let view = x[0]; let y = x;",
        );
        common::run(&mut s, "del x;");
        assert_eq!(
            allocated(&mut s),
            base + X as i64,
            "y and the view still hold the storage"
        );
        common::run(&mut s, "del y;");
        assert_eq!(
            allocated(&mut s),
            base + X as i64,
            "the view still holds it"
        );
        common::run(&mut s, "del view;");
        assert_eq!(allocated(&mut s), base);
    }

    #[test]
    fn del_in_a_nested_block_frees_at_once() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        let base = allocated(&mut s);
        let outcome = s.execute(
            "let a = zeros(1000, 1000, #{device: \"cuda\"});
             let b = zeros(1000, 1000, #{device: \"cuda\"});
             let seen = 0;
             if true { no_grad { del a; seen = memory_allocated(); } }
             [seen, b.shape]",
        );
        assert_eq!(
            outcome.value.unwrap().plain,
            format!("[{}, [1000, 1000]]", base + X as i64)
        );
        assert_eq!(allocated(&mut s), base + X as i64);
    }
}

#[test]
fn variables_lists_live_names_once_with_their_latest_value() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let a = 1; let b = 2; let a = 3; del b; let c = \"x\";"));
    let vars: Vec<(String, String)> = s
        .variables()
        .into_iter()
        .map(|(n, v)| (n, v.to_string()))
        .collect();
    assert_eq!(
        vars,
        vec![("a".into(), "3".into()), ("c".into(), "x".into())]
    );
}

#[test]
fn del_keeps_the_newest_binding_of_a_shadowed_name() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let a = 1;"));
    value(s.execute("let a = 2;"));
    value(s.execute("let b = 0;"));
    value(s.execute("del b"));
    assert_eq!(value(s.execute("a")), "2");
    let vars = s.variables();
    assert_eq!(vars.len(), 1, "one binding of a is in force: {vars:?}");
    assert_eq!(vars[0].1.as_int().unwrap(), 2);
}

#[test]
fn del_of_an_item_removes_only_that_item() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(
        value(s.execute("let ts = [1, 2, 3]; del ts[0]; ts")),
        "[2, 3]"
    );
    assert_eq!(value(s.execute("del ts[-1]; ts")), "[2]");
    assert_eq!(common::error(&mut s, "del ts[5]").kind, "IndexError");
    assert_eq!(value(s.execute("ts")), "[2]");
    let d = "let d = #{a: 1, b: 2}; del d[\"a\"]; d";
    assert_eq!(value(s.execute(d)), "#{\"b\": 2}");
    assert_eq!(common::error(&mut s, "del d[\"zz\"]").kind, "KeyError");
    assert_eq!(value(s.execute("del d.b; d")), "#{}");
}

#[test]
fn del_of_an_item_frees_that_tensor_at_once() {
    let (_guard, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    let before = a.memory_allocated();
    value(s.execute(
        r#"let keep = [ones(256, 1024, #{device: "cuda"}), ones(256, 1024, #{device: "cuda"})];"#,
    ));
    assert_eq!(a.memory_allocated() - before, 2 << 20);
    value(s.execute("del keep[0];"));
    assert_eq!(a.memory_allocated() - before, 1 << 20);
    assert_eq!(value(s.execute("keep.len()")), "1");
}

device_test!(
    fn del_of_grad_clears_the_gradient_and_keeps_the_tensor(dev: &str) {
        let (_guard, _) = common::gpu();
        let (mut s, _) = Session::captured("<test>");
        let code = format!(
            r#"let w = ones(3, #{{device: "{dev}", requires_grad: true}});
            (w * 2).sum().backward(); del w.grad; [w.grad == (), w.requires_grad]"#
        );
        assert_eq!(value(s.execute(&code)), "[true, true]", "on {dev}");
    }
);

#[test]
fn del_of_what_cannot_be_deleted_says_what_can() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let t = ones(2);"));
    assert_eq!(common::error(&mut s, "del t[0]").kind, "TypeError");
    assert_eq!(common::error(&mut s, "del t.shape").kind, "AttributeError");
    let e = common::error(&mut s, "del 1 + 2");
    assert_eq!(e.kind, "SyntaxError");
    assert!(e.message.contains("del x"), "{}", e.message);
    assert_eq!(value(s.execute("t.sum().item()")), "2.0");
}
