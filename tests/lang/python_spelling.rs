//! What a PyTorch user types runs: `import torch`, `torch.`/`torch.cuda.`/`F.` names, dtypes, `None`, `and`, `print(a, b)`, `range(n)`, `x.T`, slices, `@`, `exit()`.
use crate::common;
use common::{error, eval};

use torchlet_session::Session;

#[test]
fn the_articles_lines_run_as_typed_in_python() {
    let (_lock, _) = common::gpu();
    let (mut s, out) = Session::captured("<test>");
    eval(&mut s, "import torch");
    eval(
        &mut s,
        "let x = torch.randn(1000, 1000).cuda();\nprint(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())",
    );
    assert_eq!(out.stdout_text(), "4000256 20971520\n");
    eval(&mut s, "del x;\ntorch.cuda.empty_cache();");
    assert_eq!(eval(&mut s, "torch.cuda.memory_reserved()"), "0");
}

#[test]
fn dtypes_are_values_and_functional_names_are_functions() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(
        eval(&mut s, "torch.zeros(2).to(torch.float16).dtype"),
        "float16"
    );
    assert_eq!(
        eval(&mut s, "torch.ones(2).half().dtype == torch.half"),
        "true"
    );
    assert_eq!(eval(&mut s, "torch.long"), "int64");
    assert_eq!(
        eval(&mut s, "F.relu(torch.tensor([-1.0, 2.0])).tolist()"),
        "[0.0, 2.0]"
    );
    assert_eq!(
        eval(
            &mut s,
            "torch.nn.functional.relu(torch.tensor([-3.0])).tolist()"
        ),
        "[0.0]"
    );
    assert_eq!(eval(&mut s, "torch.device('cuda:0')"), "cuda:0");
}

#[test]
fn import_lines_do_nothing_but_bind_their_aliases() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(
        eval(
            &mut s,
            "import torch\nimport torch.nn.functional as G\nfrom torch import nn"
        ),
        "()"
    );
    // The alias outlives the input that imported it, as a Python import does.
    assert_eq!(eval(&mut s, "G.relu(torch.ones(1)).tolist()"), "[1.0]");
    assert_eq!(
        eval(&mut s, "nn.functional.relu(torch.ones(1)).tolist()"),
        "[1.0]"
    );
    assert_eq!(eval(&mut s, "import torch as th\nth.zeros(3).numel()"), "3");
    // Other modules are not torch's: they fail, with a hint.
    let e = error(&mut s, "import numpy as np");
    assert!(
        e.hint
            .as_deref()
            .is_some_and(|h| h.starts_with("only import torch")),
        "{e}"
    );
}

#[test]
fn a_variable_named_like_an_alias_stays_a_variable() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    eval(&mut s, "let F = torch.ones(2, 3);");
    assert_eq!(eval(&mut s, "F.sum().item()"), "6.0");
    assert_eq!(eval(&mut s, "let torch = [1, 2]; torch.len()"), "2");
}

#[test]
fn strings_and_comments_keep_python_words() {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<test>");
    eval(
        &mut s,
        "print(\"torch.randn None and True\") // torch.cuda None\n# import torch, None",
    );
    assert_eq!(out.stdout_text(), "torch.randn None and True\n");
    assert_eq!(
        eval(&mut s, "`${torch.ones(2).sum().item()} None`"),
        "2.0 None"
    );
}

#[test]
fn python_literals_and_word_operators() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(eval(&mut s, "let g = None; g == ()"), "true");
    assert_eq!(eval(&mut s, "True and not False"), "true");
    assert_eq!(eval(&mut s, "False or 1 > 2"), "false");
    assert_eq!(eval(&mut s, "g is None"), "true");
    assert_eq!(eval(&mut s, "torch.ones(1) is not None"), "true");
    assert_eq!(eval(&mut s, "#{requires_grad: True}.requires_grad"), "true");
    assert_eq!(eval(&mut s, "'single quoted'"), "single quoted");
    assert_eq!(
        eval(
            &mut s,
            "torch.zeros(2, #{requires_grad: True}).requires_grad"
        ),
        "true"
    );
}

#[test]
fn print_takes_several_values_and_range_one_bound() {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<test>");
    eval(&mut s, "print(\"loss\", 0.5, torch.ones(2), [1]); print()");
    assert_eq!(out.stdout_text(), "loss 0.5 tensor([1., 1.]) [1]\n\n");
    assert_eq!(
        eval(
            &mut s,
            "let seen = []; for i in range(3) { seen.push(i) } seen"
        ),
        "[0, 1, 2]"
    );
    assert_eq!(
        eval(
            &mut s,
            "let odd = []; for i in range(1, 7, 2) { odd.push(i) } odd"
        ),
        "[1, 3, 5]"
    );
}

#[test]
fn transpose_matmul_and_slices_read_as_in_pytorch() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    eval(&mut s, "let x = torch.arange(12).reshape(3, 4);");
    assert_eq!(eval(&mut s, "x.T.shape"), "[4, 3]");
    assert_eq!(eval(&mut s, "x.T.tolist()[0]"), "[0, 4, 8]");
    assert_eq!(eval(&mut s, "(x @ x.T).tolist()[0]"), "[14, 38, 62]");
    // `@` binds as `*` does: before `+`.
    assert_eq!(eval(&mut s, "(x @ x.T + 1).tolist()[0][0]"), "15");
    assert_eq!(
        eval(&mut s, "x[1..3].tolist()"),
        "[[4, 5, 6, 7], [8, 9, 10, 11]]"
    );
    assert_eq!(eval(&mut s, "x[1..=1].shape"), "[1, 4]");
    assert_eq!(eval(&mut s, "x[-1..].tolist()"), "[[8, 9, 10, 11]]");
    assert_eq!(eval(&mut s, "x[[.., 0]].tolist()"), "[0, 4, 8]");
    assert_eq!(eval(&mut s, "x[[1.., -1]].tolist()"), "[7, 11]");
    assert_eq!(eval(&mut s, "x[[0, 1..3]].tolist()"), "[1, 2]");
    assert_eq!(eval(&mut s, "x[[.., None]].shape"), "[3, 1, 4]");
    assert_eq!(eval(&mut s, "x.select(1, 2).tolist()"), "[2, 6, 10]");
    // Clamped as Python clamps slices.
    assert_eq!(eval(&mut s, "x[2..100].shape"), "[1, 4]");
    let e = error(&mut s, "x[[0, 0, 0]]");
    assert_eq!(e.kind, "IndexError");
    assert_eq!(e.message, "too many indices for tensor of dimension 2");
}

#[test]
fn slices_are_views_that_allocate_nothing() {
    let (_lock, _) = common::gpu();
    let (mut s, _) = Session::captured("<test>");
    eval(&mut s, "let x = torch.randn(1000, 1000).cuda();");
    let before = eval(&mut s, "torch.cuda.memory_allocated()");
    eval(
        &mut s,
        "let col = x[[.., 0]]; let rows = x[10..20]; let t = x.T;",
    );
    assert_eq!(eval(&mut s, "torch.cuda.memory_allocated()"), before);
    assert_eq!(eval(&mut s, "col.data_ptr() == x.data_ptr()"), "true");
    eval(&mut s, "x[[.., 0]].fill_(7.0);");
    assert_eq!(eval(&mut s, "x[0][0].item()"), "7.0");
}

#[test]
fn a_grad_mode_block_that_ends_its_line_ends_its_statement() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    eval(&mut s, "let w = torch.ones(2, #{requires_grad: true});");
    let shown = eval(
        &mut s,
        "no_grad {\n  let z = w * 2;\n}\n[z.requires_grad, is_grad_enabled()]",
    );
    assert_eq!(shown, "[false, true]");
    assert_eq!(
        eval(&mut s, "enable_grad { let u = 1; }\n-u"),
        "-1",
        "a leading - starts a new statement too"
    );
    // On the same line the block is still followed by an operator: torchlet says so.
    let e = error(&mut s, "no_grad { let q = 1; } [q]");
    assert_eq!(e.kind, "SyntaxError");
    assert!(
        e.message.contains("end the block with ';'"),
        "{}",
        e.message
    );
}

#[test]
fn rewrites_keep_every_column_for_errors() {
    common::uses_gpu();
    let (mut s, _) = Session::captured("<test>");
    let e = error(
        &mut s,
        "let y = torch.cuda.memory_allocated() + missing_name",
    );
    assert_eq!(e.kind, "NameError");
    assert_eq!((e.line, e.column), (Some(1), Some(41)));
    assert_eq!(
        e.source_line.as_deref(),
        Some("let y = torch.cuda.memory_allocated() + missing_name"),
        "the caret sits under the line as typed"
    );
}

#[test]
fn exit_and_quit_end_a_script_with_pythons_status() {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<test>");
    let e = error(&mut s, "print(1); exit(); print(2)");
    assert_eq!(out.stdout_text(), "1\n");
    assert_eq!(
        (e.kind.as_str(), e.system_exit()),
        ("SystemExit", Some((0, None)))
    );
    let e = error(&mut s, "fn stop() { quit(3) } stop()");
    assert_eq!(e.system_exit(), Some((3, None)));
    let e = error(&mut s, "exit(\"bye\")");
    assert_eq!(e.system_exit(), Some((1, Some("bye"))));

    let run = |code: &str| {
        common::torchlet()
            .args(["run", "-e", code])
            .output()
            .expect("torchlet runs")
    };
    let out = run("print(\"a\"); exit(4); print(\"b\")");
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "a\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let out = run("quit()");
    assert_eq!(out.status.code(), Some(0));
    let out = run("exit(\"stopped early\")");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "stopped early\n");
}

#[test]
fn completion_and_completeness_read_the_python_spelling() {
    common::uses_gpu();
    let (s, _) = Session::captured("<test>");
    let found = s.complete("torch.cuda.memory_alloc", 23);
    assert_eq!(found.start, 11);
    assert!(
        found.matches().contains(&"memory_allocated".to_string()),
        "{found:?}"
    );
    let found = s.complete("x = torch.zeros_l", 17);
    assert_eq!(found.start, 10);
    assert_eq!(found.matches(), vec!["zeros_like".to_string()]);
    use torchlet_session::Completeness;
    assert_eq!(s.is_complete("import torch"), Completeness::Complete);
    assert_eq!(s.is_complete("torch.randn(2,"), Completeness::Incomplete);
}

#[test]
fn exit_ends_a_repl_session() {
    let home = tempfile::tempdir().unwrap();
    let cmd = common::repl_command(home.path());
    let mut p = expectrl::Session::spawn(cmd).expect("spawn torchlet in a pty");
    p.set_expect_timeout(Some(std::time::Duration::from_secs(60)));
    p.expect(">>> ").unwrap();
    p.send("print(\"still\" + \"here\")\r").unwrap();
    p.expect("stillhere").unwrap();
    p.send("exit(3)\r").unwrap();
    p.expect(expectrl::Eof).expect("the REPL ends on exit()");
    let status = p.get_process().wait().expect("the REPL's status");
    assert!(format!("{status:?}").ends_with(", 3)"), "{status:?}");
}

#[test]
fn help_finds_pytorchs_names() {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<test>");
    eval(&mut s, "torch.randn?");
    eval(&mut s, "torch.cuda.memory_allocated?");
    eval(&mut s, "help(\"import\")");
    let text = out.stdout_text();
    assert!(text.starts_with("randn(d0, d1, …)"), "{text}");
    assert!(
        text.contains("\ncuda::memory_allocated([device])"),
        "{text}"
    );
    assert!(text.contains("\nimport torch"), "{text}");
}
