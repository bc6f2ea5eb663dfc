//! Python's scoping: names bound inside `if`/`for`/`while`/`try` and grad-mode blocks outlive the
//! block, `x = …` binds a new name, and a loop's previous value lives until it is rebound.
use crate::common;
use common::device_test;

use torchlet_session::{Outcome, Session};

fn error_kind(outcome: Outcome) -> String {
    outcome.error.expect("an error").kind
}

device_test!(
    fn names_bound_in_blocks_outlive_the_block(dev: &str) {
        let (_guard, _) = common::gpu();
        let (mut s, _) = Session::captured("<test>");
        let code = format!(
            r#"let dev = #{{device: "{dev}"}};
            for i in 0..3 {{ let last = ones(2, dev) * i; }}
            if true {{ let picked = 7; }}
            let n = 0;
            while n < 2 {{ n += 1; let seen = n; }}
            try {{ let tried = 1; throw "x"; }} catch (e) {{ let caught = 2; }}
            no_grad {{ let quiet = zeros(1, dev); }};
            [last.sum().item(), picked, seen, tried, caught, quiet.numel()]"#
        );
        assert_eq!(
            common::value(s.execute(&code)),
            "[4.0, 7, 2, 1, 2, 1]",
            "on {dev}"
        );
    }
);

#[test]
fn assignment_binds_a_new_name_and_rebinds_after_del() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(common::value(s.execute("x = 5; y = x * 2; y")), "10");
    assert_eq!(common::value(s.execute("del x; x = 3; x")), "3");
    assert_eq!(common::value(s.execute("z = [1, 2]; z")), "[1, 2]");
}

#[test]
fn a_name_read_before_any_binding_is_a_name_error() {
    let (mut s, _) = Session::captured("<test>");
    // `later` is declared for the whole input, but reading it before it is bound is Python's
    // NameError, and the failed input leaves no trace of it.
    assert_eq!(
        error_kind(s.execute("print(later); later = 1;")),
        "NameError"
    );
    assert!(!s.variable_names().contains(&"later".to_string()));
    assert_eq!(
        error_kind(s.execute("if false { let never = 1 } never")),
        "NameError"
    );
}

#[test]
fn a_plain_block_keeps_its_names_local() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(common::value(s.execute("{ let local = 1; } 0")), "0");
    assert_eq!(error_kind(s.execute("local")), "NameError");
}

device_test!(
    fn rebinding_in_a_block_keeps_one_binding_of_the_name(dev: &str) {
        let (_guard, _) = common::gpu();
        let (mut s, _) = Session::captured("<test>");
        let code = format!(
            r#"let t = ones(3, #{{device: "{dev}"}});
            if true {{ let t = t * 2; }}
            t.sum().item()"#
        );
        assert_eq!(common::value(s.execute(&code)), "6.0", "on {dev}");
        assert_eq!(
            s.variable_names().iter().filter(|n| *n == "t").count(),
            1,
            "one `t` on {dev}"
        );
    }
);

#[test]
fn a_loops_previous_value_lives_until_it_is_rebound() {
    let (_guard, a) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    let before = a.memory_allocated();
    // 1 MiB per value. On the second iteration the new `h` is made while the first is still
    // bound, so two are alive at the peak, as in Python; after the loop the last one stays.
    common::value(s.execute(r#"for i in 0..3 { let h = ones(256, 1024, #{device: "cuda"}); }"#));
    let mib = 1 << 20;
    assert_eq!(a.max_memory_allocated() - before, 2 * mib);
    assert_eq!(a.memory_allocated() - before, mib);
    common::value(s.execute("del h;"));
    assert_eq!(a.memory_allocated(), before);
}
