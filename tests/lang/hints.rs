//! Python that torchlet cannot accept fails with a `hint:` line giving the torchlet spelling, and misspelt names get "did you mean".
use crate::common;
use torchlet_session::{Completeness, ScriptError, Session};

/// The error of `code` in a fresh session that has `x` (a 3×4 tensor) and `learning_rate`.
fn error_of(code: &str) -> ScriptError {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    let ready = s.execute("let x = zeros(3, 4); let learning_rate = 0.1;");
    assert!(ready.error.is_none(), "{:?}", ready.error);
    s.execute(code).error.expect("an error")
}

/// The hint line of `code`'s error, which must have one.
fn hint_of(code: &str) -> String {
    let e = error_of(code);
    let hint = e
        .hint
        .clone()
        .unwrap_or_else(|| panic!("no hint for {code:?}: {e}"));
    assert!(!hint.contains('\n'), "one hint line: {hint:?}");
    assert!(e.to_string().ends_with(&format!("\nhint: {hint}")), "{e}");
    hint
}

#[test]
fn with_no_grad_is_a_block() {
    let h = hint_of("with torch.no_grad():\n    y = x * 2");
    assert!(h.starts_with("grad modes are blocks: no_grad { … }"), "{h}");
    let h = hint_of("with torch.inference_mode():\n    pass");
    assert!(h.contains("inference_mode { … }"), "{h}");
    let h = hint_of("with open(\"f\") as f:\n    pass");
    assert!(h.contains("no with statement"), "{h}");
    let h = hint_of("@torch.no_grad()\ndef f(x):\n    return x");
    assert!(
        h.contains("no decorators") && h.contains("no_grad { … }"),
        "{h}"
    );
}

#[test]
fn keyword_arguments_are_an_object_map() {
    let h = hint_of("let y = torch.zeros(2, 3, dtype=torch.float16, device=\"cuda\")");
    assert_eq!(
        h,
        "keyword arguments are passed as an object map: zeros(2, 3, #{dtype: \"float16\", device: \"cuda\"})"
    );
    let h = hint_of("let y = x.to(device='cuda')");
    assert!(h.ends_with("x.to(#{device: \"cuda\"})"), "{h}");
    let h = hint_of("print(1, end=\"\")");
    assert!(h.starts_with("print takes no keyword arguments"), "{h}");
}

/// The Rhai spelling a refused Python block's hint gives before naming the Python front end.
fn rhai_spelling_of(code: &str) -> String {
    let h = hint_of(code);
    let (rhai, python) = h.split_once("; ").unwrap_or((&h, ""));
    assert!(python.contains("torchlet run FILE.py"), "{h}");
    rhai.to_string()
}

#[test]
fn def_lambda_elif_and_colon_blocks_get_braces() {
    assert_eq!(
        rhai_spelling_of("def step(w, lr=0.1):\n    return w - lr"),
        "functions are written with fn and braces: fn step(w, lr) { … }"
    );
    assert_eq!(
        hint_of("let f = lambda a, b: a * b"),
        "a closure is written with bars: |a, b| a * b"
    );
    assert!(hint_of("if 1 > 2 { 1 } elif 2 > 1 { 2 }").starts_with("write else if"));
    assert_eq!(
        rhai_spelling_of("for i in range(3):\n    print(i)"),
        "blocks are written with braces: for i in range(3) { … }"
    );
    assert_eq!(
        rhai_spelling_of("while learning_rate > 1:\n    learning_rate /= 2"),
        "blocks are written with braces: while learning_rate > 1 { … }"
    );
    assert!(hint_of("try:\n    x.foo()").contains("try { … } catch (e) { … }"));
    assert!(hint_of("class Net:\n    pass").contains("no classes"));
}

#[test]
fn f_strings_become_back_tick_strings() {
    assert_eq!(
        hint_of("print(f\"lr={learning_rate} shape {x.shape}\")"),
        "f-strings are back-tick strings with ${…}: `lr=${learning_rate} shape ${x.shape}`"
    );
    let h = hint_of("print(f'{learning_rate:.3f}')");
    assert!(
        h.contains("`${learning_rate}`") && h.contains(":.2f"),
        "{h}"
    );
}

#[test]
fn an_unclosed_f_string_of_wide_characters_is_an_error_not_a_panic() {
    for code in ["f'᠏🕴%₮", "print(f\"größe {x.shape}", "f'€"] {
        let e = error_of(code);
        assert!(!e.to_string().is_empty(), "{code:?}");
    }
    let (mut s, _) = Session::captured("<test>");
    s.execute("f'᠏🕴%₮");
    assert_eq!(
        s.execute("1 + 1").value.map(|v| v.plain).as_deref(),
        Some("2")
    );
}

#[test]
fn python_slices_become_ranges_and_index_arrays() {
    assert!(hint_of("x[:, 0]").contains("x[[.., 0]]"));
    assert!(hint_of("let y = x[1:3]").contains("x[1..3]"));
    assert!(hint_of("x[:2, 1:]").contains("x[[..2, 1..]]"));
    assert!(hint_of("x[::2]").contains("no counterpart"));
    // The suggested spellings work.
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    let ok = s.execute("let x = arange(12).reshape(3, 4); x[[..2, 1..]].shape");
    assert_eq!(ok.value.expect("a shape").plain, "[2, 3]");
}

#[test]
fn a_line_break_does_not_end_a_statement() {
    assert_eq!(
        hint_of("let a = 1\nlet b = 2"),
        "end the statement on line 1 with ; (a line break does not end a statement)"
    );
}

#[test]
fn a_missing_semicolon_names_its_own_line_in_pytorch_spelling() {
    // `import torch` is blanked before compiling: it is not the statement before `x.shape`.
    let e = error_of("import torch\ny = torch.randn(3)\ny.shape");
    assert_eq!(
        e.hint.as_deref(),
        Some("end the statement on line 2 with ; (a line break does not end a statement)"),
        "{e}"
    );
    // `torch.cuda.x` is `cuda::x` compiled: the statement still starts at the line's start.
    let e = error_of("x2 = torch.randn(3)\ntorch.cuda.memory_allocated()");
    assert_eq!(
        e.hint.as_deref(),
        Some("end the statement on line 1 with ; (a line break does not end a statement)"),
        "{e}"
    );
    // The caret is where the `;` goes, at the end of the line that lacks it.
    assert_eq!((e.line, e.column), (Some(1), Some(20)), "{e}");
    assert_eq!(e.source_line.as_deref(), Some("x2 = torch.randn(3)"));
}

#[test]
fn every_missing_semicolon_of_a_cell_is_reported_at_once() {
    let e = error_of("import torch\na = torch.ones(2)\nb = a * 2\nc = b + 1;\nd = c.sum()\nd");
    assert_eq!(
        e.hint.as_deref(),
        Some(
            "end the statements on lines 2, 3 and 5 with ; (a line break does not end a statement)"
        ),
        "{e}"
    );
    // With them added, the cell runs.
    let (mut s, _) = Session::captured("<test>");
    let ok = s.execute("import torch\na = torch.ones(2);\nb = a * 2;\nc = b + 1;\nd = c.sum();\nd");
    assert!(ok.error.is_none(), "{:?}", ok.error);
}

#[test]
fn other_python_habits() {
    assert!(hint_of("let ys = [i * 2 for i in range(3)]").contains("no list comprehensions"));
    assert!(hint_of("if 1 not in [2] { }").contains("!(a in b)"));
    assert!(hint_of("cuda.empty_cache()").contains("cuda::empty_cache()"));
    assert!(hint_of("len(x)").contains("t.shape[0]"));
    assert!(hint_of("let xs = []; xs.append(1)").contains("push"));
    assert!(hint_of("memory_allocated(), memory_reserved()").contains("[a, b]"));
}

#[test]
fn a_new_name_inside_a_function_needs_let() {
    let e = error_of("fn scale(t) {\n  y = t * 2;\n  y\n}\nscale(x)");
    assert_eq!(e.kind, "NameError");
    assert_eq!(
        e.hint.as_deref(),
        Some("a new variable is declared with let: let y = … (a function sees only its arguments and its own variables)")
    );
}

#[test]
fn misspelt_names_get_did_you_mean() {
    assert_eq!(hint_of("randz(3)"), "did you mean randn?");
    assert_eq!(
        hint_of("memory_alocated()"),
        "did you mean memory_allocated?"
    );
    assert_eq!(hint_of("learning_rat * 2"), "did you mean learning_rate?");
    assert_eq!(hint_of("x.sume()"), "did you mean .sum?");
    assert_eq!(hint_of("x.shap"), "did you mean .shape?");
    assert_eq!(
        hint_of("cuda::memory_reserve()"),
        "did you mean cuda::memory_reserved?"
    );
    assert_eq!(
        hint_of("torch.randm(2)"),
        "torchlet has no torch.randm; did you mean randn?"
    );
    // Nothing close: no guess.
    let e = error_of("qqqqqqq + 1");
    assert_eq!(e.hint, None);
}

#[test]
fn no_message_names_a_rust_type() {
    for code in [
        "x[[1.5]]",
        "let xs = [1, 2]; xs[1..]",
        "x.to(device=\"cuda\")",
        "randz(3)",
        "x[\"a\"]",
    ] {
        let e = error_of(code);
        for rust in [
            "i64",
            "f64",
            "core::",
            "rhai::",
            "alloc::",
            "ImmutableString",
            "Range<",
        ] {
            assert!(!e.to_string().contains(rust), "{code}: {e}");
        }
    }
}

#[test]
fn a_python_block_reads_its_body_then_is_refused() {
    common::uses_gpu();
    let (s, _) = Session::captured("<test>");
    // A Python block reads its indented body, as Python's REPL does; a blank or unindented
    // line ends it, and the whole block is then refused.
    assert_eq!(
        s.is_complete("for i in range(3):"),
        Completeness::Incomplete
    );
    assert_eq!(
        s.is_complete("for i in range(3):\n"),
        Completeness::Incomplete
    );
    assert_eq!(
        s.is_complete("for i in range(3):\n    print(i)\n"),
        Completeness::Incomplete
    );
    assert_eq!(
        s.is_complete("for i in range(3):\n    print(i)\n\n"),
        Completeness::Invalid
    );
    assert_eq!(
        s.is_complete("def f(x):\n    return x\nprint(1)"),
        Completeness::Invalid
    );
    assert_eq!(s.is_complete("let m = #{a:"), Completeness::Incomplete);
    assert_eq!(
        s.is_complete("for i in range(3) {"),
        Completeness::Incomplete
    );
}

#[test]
fn the_script_runner_prints_the_hint_under_the_error() {
    let out = common::torchlet()
        .args([
            "run",
            "-e",
            "import torch\nfor i in range(3):\n    print(i)",
        ])
        .output()
        .expect("torchlet runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "<-e>:2:1: SyntaxError: `for i in range(3):` opens a Python block, which the Rhai \
         language cannot run: none of this input ran, its indented body included\n\
         hint: blocks are written with braces: for i in range(3) { … }; Python runs as written \
         with torchlet run FILE.py, or in the Python REPL: torchlet python\n"
    );
}

#[test]
fn var_names_the_variance_function() {
    for code in ["let v = var(x);", "let v = x.var(0);"] {
        let h = hint_of(code);
        assert!(
            h.starts_with("var is a reserved word here: PyTorch's var is variance("),
            "{code}: {h}"
        );
    }
}
