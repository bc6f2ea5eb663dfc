//! The `:commands` a session answers (the REPL's and, as `%magics`, the kernel's).
use crate::common;
use common::figures::{SEGMENT, X};
use torchlet_session::{Outcome, Session};

fn session() -> Session {
    Session::captured("<test>").0
}

fn error(outcome: Option<Outcome>) -> String {
    let outcome = outcome.expect("a command");
    let error = outcome.error.expect("the command should fail");
    format!("{}: {}", error.kind, error.message)
}

#[test]
fn code_is_not_a_command() {
    let mut s = session();
    assert!(s.run_command("1 + 1").is_none());
    assert!(s.run_command("cuda::memory_allocated()").is_none());
    assert!(s.run_command("  :vars").is_some());
}

#[test]
fn help_lists_commands_and_explains_names() {
    let mut s = session();
    let index = common::command_text(s.run_command(":help"));
    for name in [
        ":mem",
        ":vars",
        ":trace on|off",
        ":load FILE",
        "zeros",
        "memory_allocated",
    ] {
        assert!(index.contains(name), "{name} missing from:\n{index}");
    }
    assert!(common::command_text(s.run_command(":help del")).starts_with("del x, y"));
    assert!(
        common::command_text(s.run_command(":help cuda::memory_reserved"))
            .contains("caching allocator")
    );
    assert!(common::command_text(s.run_command(":help :trace")).contains("device memory changed"));
    s.execute("/// Doubles a number.\nfn twice(a) { a * 2 }");
    assert_eq!(
        common::command_text(s.run_command(":help twice")),
        "fn twice(a)\n    Doubles a number."
    );
    let unknown = error(s.run_command(":help no_such_thing"));
    assert!(unknown.starts_with("UsageError: no function or command named 'no_such_thing'"));
}

#[test]
fn vars_lists_variables_and_forgets_deleted_ones() {
    let mut s = session();
    assert_eq!(common::command_text(s.run_command(":vars")), "no variables");
    s.execute("let count = 3; let word = \"hi\";");
    let vars = common::command_text(s.run_command(":vars"));
    let count_row = vars.lines().find(|l| l.starts_with("count")).expect(&vars);
    assert!(
        count_row.contains("i64") && count_row.contains('3'),
        "{vars}"
    );
    assert!(vars.lines().any(|l| l.starts_with("word")), "{vars}");
    assert!(s.execute("del count").error.is_none());
    let vars = common::command_text(s.run_command(":vars"));
    assert!(!vars.contains("count") && vars.contains("word"), "{vars}");
}

#[test]
fn switches_take_on_or_off() {
    let mut s = session();
    assert_eq!(common::command_text(s.run_command(":time on")), "timing on");
    assert_eq!(
        common::command_text(s.run_command(":time off")),
        "timing off"
    );
    let bad = error(s.run_command(":trace maybe"));
    assert_eq!(bad, "UsageError: :trace takes on or off, e.g. :trace on");
    let bad = error(s.run_command(":vars now"));
    assert!(bad.contains(":vars takes no argument"), "{bad}");
}

#[test]
fn time_on_reports_each_input_through_the_frontend() {
    let (mut s, out) = Session::captured("<test>");
    common::command_text(s.run_command(":time on"));
    s.execute("1 + 1");
    assert!(
        out.stdout_text().starts_with("Wall time: "),
        "{}",
        out.stdout_text()
    );
    out.clear();
    common::command_text(s.run_command(":time off"));
    s.execute("1 + 1");
    assert_eq!(out.stdout_text(), "");
}

#[test]
fn reset_forgets_variables_and_functions() {
    let mut s = session();
    s.execute("let kept = 1; fn f() { 2 }");
    assert!(common::command_text(s.run_command(":reset")).contains("reset"));
    assert!(s.variable_names().is_empty());
    let gone = s.execute("f()").error.expect("f is gone");
    assert!(gone.message.contains("f"), "{gone}");
}

#[test]
fn load_runs_a_file_in_the_session_and_names_it_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.rhai");
    std::fs::write(&good, "let loaded = 40 + 2;").unwrap();
    let mut s = session();
    let outcome = s.run_command(&format!(":load {}", good.display())).unwrap();
    assert!(outcome.error.is_none());
    assert_eq!(s.execute("loaded").value.unwrap().plain, "42");

    let bad = dir.path().join("bad.rhai");
    std::fs::write(&bad, "let a = 1;\nlet b = );").unwrap();
    let outcome = s.run_command(&format!(":load {}", bad.display())).unwrap();
    let located = outcome.error.expect("a syntax error").located();
    assert!(
        located.starts_with(&format!("{}:2:9: SyntaxError", bad.display())),
        "{located}"
    );
    // Later inputs are not blamed on the file.
    let later = s.execute("nope").error.unwrap().located();
    assert!(later.starts_with("<test>:"), "{later}");

    let missing = error(s.run_command(":load /no/such/file.rhai"));
    assert!(
        missing.starts_with("UsageError: :load: cannot read /no/such/file.rhai"),
        "{missing}"
    );
    assert!(error(s.run_command(":load")).contains(":load FILE"));
}

#[test]
fn unknown_and_terminal_only_commands_say_why() {
    let mut s = session();
    let unknown = error(s.run_command(":frobnicate"));
    assert!(unknown.contains("unknown command ':frobnicate'") && unknown.contains(":help"));
    assert!(error(s.run_command(":quit")).contains("terminal REPL only"));
}

/// The only test in this binary that sets up a device (the simulated one, for its figures).
#[test]
fn memory_commands_report_the_simulated_gpu() {
    let _gpu = common::setup_simulated_gpu();
    let (mut s, out) = Session::captured("<test>");
    assert_eq!(
        common::command_text(s.run_command(":trace on")),
        "memory trace on"
    );
    assert!(s
        .execute("let x = randn(1000, 1000).cuda();")
        .error
        .is_none());
    let traced = out.stdout_text();
    assert!(
        traced.contains(&format!(
            "[trace cuda:0] allocated +{X} (3.81 MiB), reserved +{SEGMENT}"
        )),
        "{traced}"
    );
    out.clear();
    // An input that does not parse runs nothing, so it has no trace line, only its error.
    assert!(s.execute("let z = x *;").error.is_some());
    assert_eq!(
        out.stdout_text(),
        "",
        "no trace for an input that never ran"
    );
    common::command_text(s.run_command(":trace off"));
    s.execute("let y = x * 2;");
    assert_eq!(out.stdout_text(), "", "no trace once it is off");

    let mem = common::command_text(s.run_command(":mem"));
    let row = mem.lines().find(|l| l.starts_with("cuda:0")).expect(&mem);
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["cuda:0", "7.63", "MiB", "20.00", "MiB", "7.63", "MiB", "20.00", "MiB"]
    );
    let summary = common::command_text(s.run_command(":summary"));
    assert!(
        summary.contains("torchlet CUDA memory summary, device ID 0"),
        "{summary}"
    );
    let vars = common::command_text(s.run_command(":vars"));
    assert!(
        vars.contains("#1") && vars.contains("#2"),
        "x and y own storages: {vars}"
    );
}
