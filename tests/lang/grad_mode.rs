//! `no_grad { … }`, `enable_grad { … }`, `inference_mode { … }`: Python's `with` for grad mode.
use crate::common;
use torchlet_session::Session;

use common::value;

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
fn a_block_that_ends_its_line_ends_its_statement() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let x = 1;"));
    // As in Python, the next line starts a new statement (issue 20).
    assert_eq!(value(s.execute("no_grad { let y = 2; }\n[1, y]")), "[1, 2]");
    assert_eq!(value(s.execute("inference_mode { }\n-x")), "-1");
    assert_eq!(value(s.execute("enable_grad { }  // done\n(x + 1)")), "2");
    // A line cannot start with `.` in Python either.
    let e = s
        .execute("no_grad { }\n.len()")
        .error
        .expect("a syntax error");
    assert_eq!((e.kind.as_str(), e.line), ("SyntaxError", Some(2)));
}

#[test]
fn a_continuation_on_the_blocks_own_line_is_a_clear_syntax_error() {
    let (mut s, _) = Session::captured("<test>");
    value(s.execute("let x = 1;"));
    for next in ["[1, 2]", "-x", ".len()"] {
        let e = s
            .execute(&format!("no_grad {{ let y = 2; }} {next}"))
            .error
            .unwrap_or_else(|| panic!("{next} after a block"));
        assert_eq!(e.kind, "SyntaxError");
        assert!(
            e.message.contains("end the block with ';'"),
            "{}",
            e.message
        );
        assert_eq!(e.line, Some(1));
    }
    assert_eq!(
        value(s.execute("no_grad { let y = 2; };\n[y, -x]")),
        "[2, -1]"
    );
    assert_eq!(value(s.execute("no_grad { let z = 3; }\nprint(z); z")), "3");
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

mod autograd {
    //! The blocks set grad mode, nest, restore it on error, and change what memory the graph keeps.

    use torchlet_session::Session;

    use crate::common::{exclusive, plain};

    #[test]
    fn blocks_set_and_restore_the_mode() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        let code = "let seen = [is_grad_enabled()];
            no_grad {
                seen.push(is_grad_enabled());
                enable_grad { seen.push(is_grad_enabled()); }
                seen.push(is_grad_enabled());
            }
            inference_mode { seen.push(is_grad_enabled()); }
            seen.push(is_grad_enabled());
            seen";
        assert_eq!(
            plain(&mut s, code),
            "[true, false, true, false, false, true]"
        );
    }

    #[test]
    fn the_mode_is_restored_when_the_block_fails() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        let e = s
            .execute("no_grad { let t = ones(2); t + missing }")
            .error
            .unwrap();
        assert_eq!(e.kind, "NameError");
        assert_eq!(plain(&mut s, "is_grad_enabled()"), "true");
        let caught = "let r = []; try { no_grad { throw \"stop\"; } } catch { r.push(is_grad_enabled()); } r";
        assert_eq!(plain(&mut s, caught), "[true]");
        let e = s
            .execute("no_grad { enable_grad { no_grad { ones(2) + zeros(3) } } }")
            .error
            .unwrap();
        assert_eq!(e.kind, "RuntimeError", "a shape mismatch three blocks deep");
        assert_eq!(plain(&mut s, "is_grad_enabled()"), "true");
    }

    #[test]
    fn results_under_no_grad_do_not_require_grad() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        plain(&mut s, "let w = ones(3, #{requires_grad: true});");
        assert_eq!(
            plain(
                &mut s,
                "let a = w * 2; [a.requires_grad, a.grad_fn, a.is_leaf]"
            ),
            "[true, \"MulBackward0\", false]"
        );
        assert_eq!(
            plain(
                &mut s,
                "no_grad { let b = w * 2; }; [b.requires_grad, b.grad_fn, b.is_leaf]"
            ),
            "[false, (), true]"
        );
        assert_eq!(
            plain(
                &mut s,
                "no_grad { enable_grad { let c = (w * 2).sum(); } }; [c.requires_grad, c.grad_fn]"
            ),
            "[true, \"SumBackward0\"]"
        );
        assert_eq!(
            plain(&mut s, "inference_mode { let d = w * 2; } d.requires_grad"),
            "false"
        );
    }

    #[test]
    fn no_grad_keeps_no_saved_tensors_on_the_gpu() {
        // The reference's figures: 8001024 extra bytes with the graph, 512 under no_grad.
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        plain(
            &mut s,
            "let w = randn(1000, 1000, #{device: \"cuda\", requires_grad: true});",
        );
        let with_graph = "let base = memory_allocated(); let h = (w * 2).exp().relu().sum(); memory_allocated() - base";
        assert_eq!(plain(&mut s, with_graph), "8001024");
        plain(&mut s, "del h;");
        let without = "let base = memory_allocated(); no_grad { let h = (w * 2).exp().relu().sum(); } memory_allocated() - base";
        assert_eq!(plain(&mut s, without), "512");
        let inference = "del h; let base = memory_allocated(); inference_mode { let h = (w * 2).exp().relu().sum(); } memory_allocated() - base";
        assert_eq!(plain(&mut s, inference), "512");
    }

    #[test]
    fn backward_fills_grad_and_grad_can_be_freed() {
        let _g = exclusive();
        let (mut s, _) = Session::captured("<test>");
        plain(
            &mut s,
            "let w = tensor([1.0, 2.0, 3.0], #{requires_grad: true}); let loss = (w * w).sum();",
        );
        plain(&mut s, "loss.backward(#{retain_graph: true});");
        assert_eq!(plain(&mut s, "w.grad.tolist()"), "[2.0, 4.0, 6.0]");
        plain(&mut s, "loss.backward();");
        assert_eq!(
            plain(&mut s, "w.grad.tolist()"),
            "[4.0, 8.0, 12.0]",
            "gradients accumulate"
        );
        let e = s
            .execute("loss.backward()")
            .error
            .expect("the graph was freed");
        assert_eq!(e.kind, "RuntimeError");
        assert_eq!(plain(&mut s, "w.grad = (); w.grad"), "");
        assert_eq!(
            plain(&mut s, "w.requires_grad = false; w.requires_grad"),
            "false"
        );
    }
}
