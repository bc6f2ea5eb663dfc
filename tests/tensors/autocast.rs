//! `autocast(#{dtype, enabled, device_type}) { … }`: PyTorch's mixed precision, its lists and its cast cache.
use crate::common;
use torchlet_session::{Completeness, Session};

use common::{device_test, value};

/// A session with `x` (data) and `w` (a weight that requires grad), 64×64 float32 on `device`.
fn session_on(device: &str) -> Session {
    let (mut s, _) = Session::captured("<test>");
    let setup = format!(
        "let x = randn(64, 64, #{{device: \"{device}\"}});
         let w = randn(64, 64, #{{device: \"{device}\", requires_grad: true}});
         let t = zeros(64, #{{dtype: \"int64\", device: \"{device}\"}});"
    );
    value(s.execute(&setup));
    s
}

#[test]
fn each_op_takes_the_dtype_of_its_list_inside_the_block_only() {
    let _gpu = common::exclusive();
    let mut s = session_on("cuda");
    let inside = value(s.execute(
        r#"autocast(#{dtype: "bfloat16"}) {
            let a = x.matmul(w);
            [a.dtype, x.mm(w).dtype, a.softmax(-1).dtype, a.log_softmax(-1).dtype, a.pow(2).dtype,
             a.exp().dtype, a.log().dtype, a.sum().dtype, mse_loss(a, x).dtype,
             cross_entropy(a, t).dtype, a.relu().dtype, a.mean().dtype, (a + x).dtype]
        }"#,
    ));
    assert_eq!(
        inside,
        r#"["bfloat16", "bfloat16", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "float32", "bfloat16", "bfloat16", "float32"]"#
    );
    // After the block nothing is cast: a bfloat16 tensor stays bfloat16 through softmax.
    let after = value(s.execute("[x.matmul(w).dtype, a.softmax(-1).dtype, a.pow(2).dtype]"));
    assert_eq!(after, r#"["float32", "bfloat16", "bfloat16"]"#);
}

#[test]
fn float16_is_the_default_and_softmax_of_float16_gives_float32() {
    let _gpu = common::exclusive();
    let mut s = session_on("cuda");
    let dtypes = value(s.execute(
        "autocast { let h = x.matmul(w); [h.dtype, h.softmax(-1).dtype, cross_entropy(h, t).dtype] }",
    ));
    assert_eq!(dtypes, r#"["float16", "float32", "float32"]"#);
}

#[test]
fn blocks_nest_restore_the_outer_state_and_enabled_false_is_a_plain_block() {
    let _gpu = common::exclusive();
    let mut s = session_on("cuda");
    let code = r#"
        autocast(#{dtype: "bfloat16"}) {
            let a = x.matmul(w);
            autocast(#{enabled: false}) { let b = x.matmul(w); }
            let c = x.matmul(w);
            autocast(#{dtype: "float16"}) { let d = x.matmul(w); }
            let e = x.matmul(w);
        }
        let f = x.matmul(w);
        [a.dtype, b.dtype, c.dtype, d.dtype, e.dtype, f.dtype]"#;
    assert_eq!(
        value(s.execute(code)),
        r#"["bfloat16", "float32", "bfloat16", "float16", "bfloat16", "float32"]"#
    );
    // A block that names no dtype takes the current one, as torch.autocast does.
    let code = r#"autocast(#{dtype: "bfloat16"}) { autocast { let g = x.matmul(w); } }
        autocast { let k = x.matmul(w); }
        [g.dtype, k.dtype]"#;
    assert_eq!(value(s.execute(code)), r#"["bfloat16", "float16"]"#);
}

#[test]
fn a_failing_block_restores_the_state_frees_its_casts_and_keeps_older_tensors() {
    let (_gpu, allocator) = common::gpu();
    let mut s = session_on("cuda");
    // The first product takes the cuBLAS workspace, which stays.
    value(s.execute("x.matmul(w);"));
    let before = allocator.memory_allocated();
    let e = s
        .execute(
            r#"no_grad { autocast(#{dtype: "bfloat16"}) { let y = x.matmul(w); throw "boom"; } }"#,
        )
        .error
        .expect("the block throws");
    assert!(e.located().contains("boom"), "{}", e.located());
    assert_eq!(
        value(s.execute("[x.matmul(w).dtype, x.shape, w.shape]")),
        r#"["float32", [64, 64], [64, 64]]"#
    );
    // The weight's cast was cached, and the cache went with the block: at most y is left.
    let y_alive = s.execute("y").error.is_none();
    let left = allocator.memory_allocated() - before;
    assert_eq!(left, if y_alive { 64 * 64 * 2 } else { 0 });
}

#[test]
fn a_weight_used_twice_is_cast_once_and_its_cast_is_freed_when_the_block_ends() {
    let (_gpu, allocator) = common::gpu();
    let mut s = session_on("cuda");
    // The first matmul in the process takes cuBLAS's workspace: take it before measuring.
    value(s.execute("no_grad { x.matmul(w); }"));
    // Under no_grad the data's cast is a temporary; only the weight's cast is kept.
    let code = r#"
        let m0 = cuda::memory_allocated();
        let m1 = 0; let m2 = 0;
        no_grad {
            autocast(#{dtype: "bfloat16"}) {
                let a = x.matmul(w);
                m1 = cuda::memory_allocated();
                let b = x.matmul(w);
                m2 = cuda::memory_allocated();
            }
        }
        [m1 - m0, m2 - m1, cuda::memory_allocated() - m0]"#;
    let block = 64 * 64 * 2;
    assert_eq!(
        value(s.execute(code)),
        format!("[{}, {}, {}]", 2 * block, block, 2 * block),
        "a: w's cast and a; b: b alone; after: a and b"
    );
    // A tensor that is not a leaf is cast at every use.
    let code = r#"
        let v = w * 1.0;
        let n0 = cuda::memory_allocated();
        no_grad {
            autocast(#{dtype: "bfloat16"}) {
                let c = x.matmul(v);
                let n1 = cuda::memory_allocated();
            }
        }
        [n1 - n0, cuda::memory_allocated() - n0]"#;
    assert_eq!(value(s.execute(code)), format!("[{block}, {block}]"));
    drop(allocator);
}

device_test!(
    fn gradients_of_float32_leaves_arrive_in_float32(device: &str) {
        let _gpu = common::exclusive();
        let mut s = session_on(device);
        let code = format!(
            r#"let x2 = x.clone().requires_grad_();
            autocast(#{{dtype: "bfloat16", device_type: "{device}"}}) {{
                let h = x2.matmul(w).relu();
                let loss = h.matmul(w).float().pow(2).mean();
            }}
            loss.backward();
            [h.dtype, loss.dtype, w.grad.dtype, x2.grad.dtype]"#
        );
        assert_eq!(
            value(s.execute(&code)),
            r#"["bfloat16", "float32", "float32", "float32"]"#,
            "{device}"
        );
    }
);

device_test!(
    fn only_the_device_type_of_the_block_is_cast(device: &str) {
        let _gpu = common::exclusive();
        let mut s = session_on(device);
        let code = r#"
            autocast(#{dtype: "bfloat16", device_type: "cuda"}) { let a = x.matmul(w); }
            autocast(#{dtype: "bfloat16", device_type: "cpu"}) { let b = x.matmul(w); }
            [a.dtype, b.dtype]"#;
        let expected = match device {
            "cpu" => r#"["float32", "bfloat16"]"#,
            _ => r#"["bfloat16", "float32"]"#,
        };
        assert_eq!(value(s.execute(code)), expected, "{device}");
    }
);

#[test]
fn cpu_autocast_follows_pytorchs_cpu_lists() {
    let _gpu = common::exclusive();
    let mut s = session_on("cpu");
    // CPU autocast defaults to bfloat16; softmax is on no CPU list, cross_entropy on the float32 one.
    let code = r#"autocast("cpu") {
        let a = x.matmul(w);
        [a.dtype, a.softmax(-1).dtype, cross_entropy(a, t).dtype]
    }"#;
    assert_eq!(
        value(s.execute(code)),
        r#"["bfloat16", "bfloat16", "float32"]"#
    );
}

#[test]
fn bad_options_are_clear_errors() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    let cases = [
        (r#"autocast(#{dtype: "float8"}) { 1 }"#, "bfloat16"),
        (r#"autocast(#{dtype: "float32"}) { 1 }"#, "bfloat16"),
        (
            r#"autocast(#{dtype: "int64", device_type: "cpu"}) { 1 }"#,
            "float16",
        ),
        (r#"autocast(#{device_type: "xpu"}) { 1 }"#, "\"cuda\""),
        (r#"autocast(#{dtpye: "bfloat16"}) { 1 }"#, "dtype"),
        (r#"autocast(#{enabled: 1}) { 1 }"#, "bool"),
        ("autocast(5) { 1 }", "map"),
    ];
    for (code, needle) in cases {
        let e = s.execute(code).error.expect(code);
        assert!(e.located().contains(needle), "{code}: {}", e.located());
    }
    // A disabled block accepts any dtype, as PyTorch checks it only when enabled.
    assert_eq!(
        value(s.execute(r#"autocast(#{dtype: "float32", enabled: false}) { 7 }"#)),
        "7"
    );
}

#[test]
fn a_line_after_the_block_starts_a_new_statement() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(
        value(s.execute("autocast(#{dtype: \"bfloat16\"}) { let y = 2; }\n[1, y]")),
        "[1, 2]"
    );
}

#[test]
fn linear_bmm_and_layer_norm_follow_their_lists() {
    let _gpu = common::exclusive();
    let mut s = session_on("cuda");
    let code = r#"
        let b = zeros(64, #{device: "cuda", requires_grad: true});
        autocast(#{dtype: "bfloat16"}) {
            let l = linear(x, w, b);
            let n = layer_norm(l, 64);
            let m = x.unsqueeze(0).bmm(w.unsqueeze(0));
        }
        [l.dtype, n.dtype, m.dtype, linear(x, w, b).dtype]"#;
    assert_eq!(
        value(s.execute(code)),
        r#"["bfloat16", "float32", "bfloat16", "float32"]"#
    );
}

#[test]
fn pythons_with_autocast_gets_the_block_spelling_as_a_hint() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    let e = s
        .execute("with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    y = 2")
        .error
        .expect("Python's with is not torchlet");
    let hint = e.hint.clone().unwrap_or_default();
    assert!(
        hint.starts_with("autocast is a block: autocast(#{dtype: \"bfloat16\"}) { … }"),
        "{e}"
    );
}

#[test]
fn an_open_block_waits_for_more_lines() {
    let (s, _) = Session::captured("<test>");
    for code in [
        "autocast(#{dtype: \"bfloat16\"}) {",
        "autocast {\n  let y = 1;",
        "autocast(#{dtype:",
    ] {
        assert_eq!(s.is_complete(code), Completeness::Incomplete, "{code:?}");
    }
    assert_eq!(
        s.is_complete("autocast(#{dtype: \"bfloat16\"}) { let y = 1; }"),
        Completeness::Complete
    );
}
