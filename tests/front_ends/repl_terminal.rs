//! The REPL driven through a pseudo-terminal: continuation lines, completion, Ctrl-C, commands, errors.
use crate::common;
use std::path::Path;
use std::time::Duration;

use common::driver_has_a_gpu;
use common::figures::{SEGMENT, X};
use expectrl::{Eof, Regex, Session};
use tempfile::TempDir;

/// A torchlet REPL on a pseudo-terminal, with its own HOME and data directory.
struct Repl {
    p: Session,
    home: TempDir,
    marks: usize,
}

/// Which GPU the REPL sees.
#[derive(Clone, Copy, PartialEq)]
enum Gpu {
    /// `--simulate-cuda`: cuda:0 in host memory.
    Simulated,
    /// Whatever the machine's driver offers: a real GPU, or none.
    Real,
}

impl Repl {
    /// A REPL over a simulated GPU.
    fn start() -> Repl {
        Repl::on(Gpu::Simulated)
    }

    fn on(gpu: Gpu) -> Repl {
        let home = tempfile::tempdir().expect("temp dir");
        let p = spawn(home.path(), gpu);
        let mut repl = Repl { p, home, marks: 0 };
        repl.expect(">>> ");
        repl
    }

    /// `torchlet python`'s REPL over a simulated GPU.
    fn python() -> Repl {
        let home = tempfile::tempdir().expect("temp dir");
        let mut cmd = common::repl_command(home.path());
        cmd.args(["--simulate-cuda", "python"]);
        let mut p = Session::spawn(cmd).expect("spawn torchlet python in a pty");
        p.set_expect_timeout(Some(Duration::from_secs(60)));
        let mut repl = Repl { p, home, marks: 0 };
        repl.expect(">>> ");
        repl
    }

    /// A REPL over the real GPU; fails without one (these tests are ignored unless built for it).
    fn on_real_gpu() -> Repl {
        common::require_real_gpu();
        Repl::on(Gpu::Real)
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

fn spawn(home: &Path, gpu: Gpu) -> Session {
    let mut cmd = common::repl_command(home);
    if gpu == Gpu::Simulated {
        cmd.arg("--simulate-cuda");
    }
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

fn ctrl_c_stops_running_code_and_keeps_the_session(mut r: Repl) {
    r.run("let kept = randn(1000, 1000).cuda();");
    // The print proves the loop runs (and the terminal is back in cooked mode) before Ctrl-C.
    r.send("print(\"spinning\"); loop { let t = randn(100, 100).cuda() * 2; }\r");
    r.expect("spinning");
    r.send("\x03");
    r.expect("KeyboardInterrupt");
    // The tensor made before survives, and nothing the loop made is left allocated but its
    // last `t`, which stays bound as in Python until deleted (unless the interrupt came before
    // the first one was bound).
    let out = r.run("print(`kept=${kept.shape}`)");
    assert!(out.contains("kept=[1000, 1000]"), "{out}");
    let out = r.run("try { del t; } catch (e) {} print(`allocated=${memory_allocated()}`)");
    assert!(out.contains(&format!("allocated={X}")), "{out}");
    // A second interrupt works as well as the first.
    r.send("print(\"again\"); loop {}\r");
    r.expect("again");
    r.send("\x03");
    r.expect("KeyboardInterrupt");
    let out = r.run("print(`still=${kept.numel()}`)");
    assert!(out.contains("still=1000000"), "{out}");
}

#[test]
fn ctrl_c_stops_running_code_and_keeps_the_session_on_the_simulated_gpu() {
    ctrl_c_stops_running_code_and_keeps_the_session(Repl::start());
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: TORCHLET_TEST_DEVICE=cuda"
)]
fn ctrl_c_stops_running_code_and_keeps_the_session_on_the_real_gpu() {
    ctrl_c_stops_running_code_and_keeps_the_session(Repl::on_real_gpu());
}

#[test]
fn values_echo_in_pytorch_format() {
    let mut r = Repl::start();
    let out = r.run("tensor([1.0, 2.5])");
    assert!(out.contains("tensor([1.0000, 2.5000])"), "{out}");
    let out = r.run("zeros(2, #{device: \"cuda\"})");
    assert!(out.contains("tensor([0., 0.], device='cuda:0')"), "{out}");
}

#[test]
fn the_prompt_can_show_device_memory() {
    let mut r = Repl::start();
    r.send(":prompt mem\r");
    r.expect("[cuda:0 0 B/0 B] >>> ");
    r.send("let x = randn(1000, 1000).cuda();\r");
    r.expect("[cuda:0 3.81 MiB/20.00 MiB] >>> ");
    r.send(":prompt plain\r");
    r.send("print(\"plain\" + \"-again\")\r");
    r.expect("plain-again");
    // The plain prompt again: right after rustyline's clear-to-end-of-line, no memory before it.
    r.expect_re(r"\x1b\[K>>> ");
}

#[test]
fn ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_exits() {
    let mut r = Repl::start();
    r.send("this is not code");
    r.send("\x03");
    r.expect(">>> ");
    r.send("print(`clean ${2 * 3}`)\r");
    r.expect("clean 6");
    // Ctrl-D only once the prompt is back: sent while the line still runs, the terminal is in
    // cooked mode and its line discipline takes ^D as end-of-file for an empty read, so rustyline
    // never sees it (seen in the second of a series of whole-suite runs).
    r.expect(">>> ");
    r.send("\x04");
    r.p.expect(Eof).expect("the REPL ends on Ctrl-D");
}

#[test]
fn history_is_saved_in_the_data_directory() {
    let mut r = Repl::start();
    r.run("let remembered_line = 1;");
    r.send("fn hist_fn(a) {\r");
    r.expect("... ");
    r.send("  a + 1\r");
    r.expect("... ");
    r.run("}");
    r.send(":quit\r");
    r.p.expect(Eof).expect("the REPL ends on :quit");
    let saved = std::fs::read_to_string(r.home.path().join("data/torchlet/history"))
        .expect("history file under XDG_DATA_HOME");
    assert!(saved.contains("let remembered_line = 1;"), "{saved}");
    // Indented continuation lines are kept too.
    assert!(saved.contains("\n  a + 1\n"), "{saved}");
    // A new REPL finds it: Ctrl-R searches back for the line, Enter runs it.
    let mut again = Repl {
        p: spawn(r.home.path(), Gpu::Simulated),
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
    r.run("let w = randn(3, #{requires_grad: true});");
    r.send("no_grad {\r");
    r.expect("... ");
    r.send("  let z = w * 2;\r");
    r.expect("... ");
    r.send("  let inside = is_grad_enabled();\r");
    r.expect("... ");
    r.send("}\r");
    r.expect(">>> ");
    let out = r.run("print(`inside=${inside} z=${z.requires_grad} after=${is_grad_enabled()}`)");
    assert!(out.contains("inside=false z=false after=true"), "{out}");
}

#[test]
fn a_python_block_reads_its_body_and_is_refused_whole() {
    let mut r = Repl::start();
    r.run("let w = ones(2, #{requires_grad: true}); let runs = 0;");
    // The article's snippet as typed: the header continues into its indented body.
    r.send("with torch.no_grad():\r");
    r.expect("... ");
    r.send("    h = (w * 2).sum()\r");
    r.expect("... ");
    r.send("\r");
    r.expect("opens a Python block");
    r.expect("torchlet run FILE.py");
    r.expect(">>> ");
    let out = r.run("print(`h defined: ${is_def_var(\"h\")}`)");
    assert!(
        out.contains("h defined: false"),
        "the body did not run: {out}"
    );
    // A body typed after a refused header is refused as its body, not run at top level.
    r.send("for i in range(3):\r");
    r.expect("... ");
    r.send("\r");
    r.expect("opens a Python block");
    let out = r.run("    runs += 1");
    assert!(out.contains("IndentationError"), "{out}");
    let out = r.run("print(`runs=${runs}`)");
    assert!(out.contains("runs=0"), "{out}");
}

#[test]
fn the_python_repl_runs_the_articles_block_and_its_magics_name_python_paths() {
    let mut r = Repl::python();
    r.run("import torch");
    r.run("w = torch.randn(1000, 1000, device='cuda', requires_grad=True)");
    r.send("with torch.no_grad():\r");
    r.expect("... ");
    r.send("    h = (w * 2).sum()\r");
    r.expect("... ");
    r.send("\r");
    let out = r.run("print(torch.cuda.memory_allocated(), h.requires_grad)");
    assert!(out.contains("4000768 False"), "{out}");
    r.run("cache = {'w': w}");
    let out = r.run("%why w");
    assert!(out.contains("what freeing `w` would do now:"), "{out}");
    assert!(
        out.contains("`cache['w']` also holds w's memory"),
        "the dict keeps w: {out}"
    );
    let out = r.run("%trace on");
    assert!(out.contains("memory trace on"), "{out}");
    let out = r.run("del cache, w");
    assert!(out.contains("[trace cuda:0] allocated -4000256"), "{out}");
    let out = r.run("%nothing");
    assert!(out.contains("`%nothing` not found"), "{out}");
}

#[test]
fn vars_before_and_after_del() {
    let mut r = Repl::start();
    r.run("let doomed = randn(10, 10).cuda(); let flat = doomed.view(-1); let n = 6;");
    let before = r.run(":vars");
    let row = |text: &str, name: &str| {
        let row = text.lines().find(|l| l.starts_with(name));
        row.map(str::to_string)
            .unwrap_or_else(|| panic!("no {name} row in {text}"))
    };
    let doomed = row(&before, "doomed");
    for cell in [
        "Tensor",
        "[10, 10]",
        "float32",
        "cuda:0",
        "400",
        "shared with flat",
    ] {
        assert!(doomed.contains(cell), "{cell} missing: {doomed}");
    }
    assert!(
        row(&before, "flat").contains("shared with doomed"),
        "{before}"
    );
    assert!(row(&before, "n ").contains("i64"), "{before}");
    r.run("del doomed");
    let after = r.run(":vars");
    assert!(!after.contains("doomed"), "{after}");
    let flat = row(&after, "flat");
    assert!(flat.contains("[100]") && !flat.contains("shared"), "{flat}");
    let gone = r.run("doomed");
    assert!(gone.contains("NameError"), "{gone}");
}

#[test]
fn tab_completes_a_tensor_method() {
    let mut r = Repl::start();
    r.run("let x = randn(2, 2);");
    r.send("let y = x.cu\t");
    r.send("();\r");
    r.send("print(\"dev=\" + y.device)\r");
    r.expect("dev=cuda:0");
}

fn trace_shows_the_articles_numbers(mut r: Repl) {
    let on = r.run(":trace on");
    assert!(on.contains("memory trace on"), "{on}");
    let made = r.run("let x = randn(1000, 1000).cuda();");
    assert!(
        made.contains(&format!(
            "allocated +{X} (3.81 MiB), reserved +{SEGMENT} (20.00 MiB), 1 segment created"
        )),
        "{made}"
    );
    let freed = r.run("del x");
    assert!(
        freed.contains(&format!("allocated -{X} (0 B), reserved +0 (20.00 MiB)")),
        "{freed}"
    );
    let released = r.run("empty_cache()");
    assert!(
        released.contains(&format!("reserved -{SEGMENT} (0 B), 1 segment released")),
        "{released}"
    );
    let mem = r.run(":mem");
    assert!(
        mem.contains("cuda:0") && mem.contains("peak allocated"),
        "{mem}"
    );
    assert!(mem.contains("3.81 MiB"), "the peak stays: {mem}");
}

#[test]
fn trace_shows_the_articles_numbers_on_the_simulated_gpu() {
    trace_shows_the_articles_numbers(Repl::start());
}

#[test]
#[cfg_attr(
    not(feature = "gpu-tests"),
    ignore = "needs a real GPU: TORCHLET_TEST_DEVICE=cuda"
)]
fn trace_shows_the_articles_numbers_on_the_real_gpu() {
    trace_shows_the_articles_numbers(Repl::on_real_gpu());
}

#[test]
fn memory_commands_show_the_gpu_or_say_how_to_simulate_one() {
    // What the driver offers decides, so the test holds on machines with and without a GPU.
    let gpu = driver_has_a_gpu();
    let mut r = Repl::on(Gpu::Real);
    let mem = r.run(":mem");
    if gpu {
        assert!(
            mem.contains("cuda:0") && mem.contains("peak allocated"),
            "{mem}"
        );
    } else {
        assert!(
            mem.contains("RuntimeError: no CUDA device") && mem.contains("--simulate-cuda"),
            "{mem}"
        );
    }
    // Plain code still runs.
    let sum = r.run("print(`sum=${1 + 2}`)");
    assert!(sum.contains("sum=3"), "{sum}");
}

#[test]
fn load_runs_a_file_whose_name_tab_completes() {
    let mut r = Repl::start();
    let script = r.home.path().join("warm_up_script.rhai");
    std::fs::write(
        &script,
        "let loaded_value = randn(4, 4).cuda();\nprint(`loaded ${loaded_value.numel()}`);\n",
    )
    .expect("write the script");
    let typed = r.home.path().join("warm_up_scr");
    r.send(&format!(":load {}\t\r", typed.display()));
    r.expect("loaded 16");
    let out = r.run("print(`still ${loaded_value.device}`)");
    assert!(out.contains("still cuda:0"), "{out}");
}
