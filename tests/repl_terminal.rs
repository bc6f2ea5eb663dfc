//! The REPL driven through a pseudo-terminal: continuation lines, completion, Ctrl-C, commands, errors.
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use expectrl::{Eof, Regex, Session};
use tempfile::TempDir;

/// A torchlet REPL on a pseudo-terminal, with its own HOME and data directory.
struct Repl {
    p: Session,
    home: TempDir,
    marks: usize,
}

impl Repl {
    fn start() -> Repl {
        let home = tempfile::tempdir().expect("temp dir");
        let p = spawn(home.path());
        let mut repl = Repl { p, home, marks: 0 };
        repl.expect(">>> ");
        repl
    }

    fn expect(&mut self, needle: &str) -> String {
        match self.p.expect(needle) {
            Ok(found) => String::from_utf8_lossy(found.before()).into_owned(),
            Err(e) => panic!("waiting for {needle:?}: {e}"),
        }
    }

    fn expect_re(&mut self, pattern: &str) -> String {
        match self.p.expect(Regex(pattern)) {
            Ok(found) => String::from_utf8_lossy(found.as_bytes()).into_owned(),
            Err(e) => panic!("waiting for /{pattern}/: {e}"),
        }
    }

    /// Type `line` and Enter; what it printed, up to a marker printed after it.
    ///
    /// Waiting for the prompt would not do: rustyline redraws the prompt as it echoes input.
    fn run(&mut self, line: &str) -> String {
        self.marks += 1;
        self.send(&format!("{line}\r"));
        // The marker is built at run time so the echo of this line never matches it.
        self.send(&format!("print(\"@@\" + \"done{}\")\r", self.marks));
        self.expect(&format!("@@done{}", self.marks))
    }

    fn send(&mut self, text: &str) {
        self.p.send(text).expect("write to the pty");
    }
}

fn spawn(home: &Path) -> Session {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_torchlet"));
    cmd.arg("--simulate-cuda")
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("TERM", "xterm")
        .env_remove("TORCHLET_SIMULATE_CUDA");
    let mut p = Session::spawn(cmd).expect("spawn torchlet in a pty");
    // Generous: the machine is shared and a debug build starts slowly under load.
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    p
}

#[test]
fn a_function_spans_continuation_lines() {
    let mut r = Repl::start();
    r.send("fn twice(a) {\r");
    r.expect("... ");
    r.send("  a * 2\r");
    r.expect("... ");
    r.send("}\r");
    r.expect(">>> ");
    r.send("print(`twice=${twice(21)}`)\r");
    r.expect("twice=42");
}

#[test]
fn an_open_block_continues_and_variables_stay_visible() {
    let mut r = Repl::start();
    r.send("let total = 0;\r");
    r.expect(">>> ");
    r.send("for i in 0..4 {\r");
    r.expect("... ");
    r.send("  total += i;\r");
    r.expect("... ");
    r.send("}\r");
    r.expect(">>> ");
    r.send("print(`total=${total}`)\r");
    r.expect("total=6");
}

#[test]
fn an_error_shows_its_line_with_a_caret() {
    let mut r = Repl::start();
    r.send("let y = )\r");
    r.expect_re(r"    let y = \)\r\n {12}\^\r\nSyntaxError: ");
    r.expect(">>> ");
    // The session is still there.
    r.send("print(`still ${1 + 1}`)\r");
    r.expect("still 2");
}

#[test]
fn tab_completes_a_variable_name() {
    let mut r = Repl::start();
    r.run("let seventeen_and_more = 17;");
    r.send("print(`got ${seventeen_an\t}`)\r");
    r.expect("got 17");
}

#[test]
fn ctrl_c_stops_running_code_and_keeps_the_session() {
    let mut r = Repl::start();
    r.run("let kept = 7;");
    // The print proves the loop runs (and the terminal is back in cooked mode) before Ctrl-C.
    r.send("print(\"spinning\"); loop {}\r");
    r.expect("spinning");
    r.send("\x03");
    r.expect("KeyboardInterrupt");
    r.expect(">>> ");
    r.send("print(`kept=${kept}`)\r");
    r.expect("kept=7");
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_exits() {
    let mut r = Repl::start();
    r.send("this is not code");
    r.send("\x03");
    r.expect(">>> ");
    r.send("print(`clean ${2 * 3}`)\r");
    r.expect("clean 6");
    r.send("\x04");
    r.p.expect(Eof).expect("the REPL ends on Ctrl-D");
}

#[test]
fn history_is_saved_in_the_data_directory() {
    let mut r = Repl::start();
    r.run("let remembered_line = 1;");
    r.send(":quit\r");
    r.p.expect(Eof).expect("the REPL ends on :quit");
    let saved = std::fs::read_to_string(r.home.path().join("data/torchlet/history"))
        .expect("history file under XDG_DATA_HOME");
    assert!(saved.contains("let remembered_line = 1;"), "{saved}");
    // A new REPL finds it: Ctrl-R searches back for the line, Enter runs it.
    let mut again = Repl {
        p: spawn(r.home.path()),
        home: r.home,
        marks: 0,
    };
    again.expect(">>> ");
    again.send("\x12let rememb");
    again.expect("let remembered_line = 1;");
    again.send("\r");
    again.send("print(`recalled=${remembered_line}`)\r");
    again.expect("recalled=1");
}

#[test]
fn commands_answer_and_bad_ones_say_why() {
    let mut r = Repl::start();
    let help = r.run(":help");
    assert!(
        help.contains(":trace on|off") && help.contains(":vars"),
        "{help}"
    );
    r.run("let answer = 42;");
    let vars = r.run(":vars");
    assert!(vars.contains("answer") && vars.contains("i64"), "{vars}");
    let bad = r.run(":frobnicate");
    assert!(bad.contains("unknown command ':frobnicate'"), "{bad}");
    let timed = r.run(":time on");
    assert!(timed.contains("timing on"), "{timed}");
    let out = r.run("1 + 1");
    assert!(out.contains("Wall time:"), "{out}");
}

#[test]
fn a_no_grad_block_spans_continuation_lines_and_keeps_its_variables() {
    let mut r = Repl::start();
    r.send("no_grad {\r");
    r.expect("... ");
    r.send("  let inside = 40;\r");
    r.expect("... ");
    r.send("  inside += 2;\r");
    r.expect("... ");
    r.send("}\r");
    r.expect(">>> ");
    r.send("print(`inside=${inside}`)\r");
    r.expect("inside=42");
}

#[test]
fn vars_before_and_after_del() {
    let mut r = Repl::start();
    r.run("let doomed = 5; let survivor = 6;");
    let before = r.run(":vars");
    assert!(
        before.contains("doomed") && before.contains("survivor"),
        "{before}"
    );
    r.run("del doomed");
    let after = r.run(":vars");
    assert!(
        !after.contains("doomed") && after.contains("survivor"),
        "{after}"
    );
    let gone = r.run("doomed");
    assert!(gone.contains("NameError"), "{gone}");
}
