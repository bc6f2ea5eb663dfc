//! Bad input: each error has a PyTorch-like kind and message and a position, and the session keeps
//! every live tensor and its memory figures.
use crate::common;
use std::rc::Rc;
use std::sync::mpsc::{channel, Sender};
use std::time::Duration;

use common::exclusive;
use torchlet_session::{Frontend, ScriptError, Session, SessionOptions};

/// A session holding `x` (4 MB) on the GPU and `c` on the CPU.
fn session_with_tensors() -> Session {
    let (s, _) = Session::captured("<test>");
    with_tensors(s)
}

fn with_tensors(mut s: Session) -> Session {
    let outcome = s.execute("let x = randn(1000, 1000).cuda(); let c = ones(2, 3);");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    s
}

fn figures(s: &mut Session) -> String {
    let outcome =
        s.execute("`${memory_allocated()} ${memory_reserved()} ${x.shape} ${c.sum().item()}`");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    outcome.value.unwrap().plain
}

/// Run `code`, which must fail; check the session kept its tensors and figures; return the error.
fn fails(s: &mut Session, code: &str) -> ScriptError {
    let before = figures(s);
    let error = s
        .execute(code)
        .error
        .unwrap_or_else(|| panic!("{code} should fail"));
    assert_eq!(
        figures(s),
        before,
        "after the failed `{code}`, tensors and memory are as before"
    );
    error
}

#[test]
fn syntax_error() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let y = x +;\nprint(y);");
    assert_eq!(e.kind, "SyntaxError");
    assert_eq!(e.line, Some(1));
    assert!(e.column.is_some());
    assert!(e.caret().unwrap().starts_with("let y = x +;\n"));
}

#[test]
fn unknown_function_and_method() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let y = 1;\nfrobnicate(x)");
    assert_eq!(e.kind, "NameError");
    assert_eq!(e.message, "name 'frobnicate' is not defined");
    assert_eq!((e.line, e.column), (Some(2), Some(1)));
    let e = fails(&mut s, "x.frobnicate()");
    assert_eq!(e.kind, "AttributeError");
    assert_eq!(e.message, "'Tensor' object has no attribute 'frobnicate'");
    let e = fails(&mut s, "zeros(\"three\")");
    assert_eq!(e.kind, "TypeError");
    assert!(
        e.message.contains("zeros()") && e.message.contains("usage: zeros("),
        "{}",
        e.message
    );
}

#[test]
fn shape_mismatch() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let big = ones(4, 5);\nlet bad = c + big;");
    assert_eq!(e.kind, "RuntimeError");
    assert!(
        e.message.contains("must match the size of tensor"),
        "{}",
        e.message
    );
    assert_eq!(e.line, Some(2));
    let e = fails(&mut s, "c.matmul(c)");
    assert_eq!(e.kind, "RuntimeError");
    assert!(e.message.contains("cannot be multiplied"), "{}", e.message);
}

#[test]
fn device_mismatch() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let bad = x + ones(1000, 1000);");
    assert_eq!(e.kind, "RuntimeError");
    assert!(
        e.message
            .starts_with("Expected all tensors to be on the same device"),
        "{}",
        e.message
    );
    assert_eq!((e.line, e.column), (Some(1), Some(13)));
    // A device that does not exist is named, with the ones that do.
    let count = s.execute("cuda::device_count()").value.unwrap().plain;
    let e = fails(&mut s, "zeros(2).to(\"cuda:7\")");
    let available = match count.as_str() {
        "1" => "(1 CUDA device is available: cuda:0)".to_string(),
        n => format!("({n} CUDA devices are available: cuda:0 to cuda:"),
    };
    assert!(
        e.message.contains("cuda:7 does not exist") && e.message.contains(&available),
        "{}",
        e.message
    );
}

#[test]
fn out_of_memory_leaves_the_session_intact() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let huge = empty(1 << 40, #{device: \"cuda\"});");
    assert_eq!(e.kind, "OutOfMemoryError");
    assert!(
        e.message
            .starts_with("CUDA out of memory. Tried to allocate 4096.00 GiB"),
        "{}",
        e.message
    );
    assert!(e.message.contains("torchlet"), "{}", e.message);
    // Caught in the script, the same error is a value with a kind.
    let outcome = s.execute(
        "let kind = \"none\"; try { empty(1 << 40, #{device: \"cuda\"}); } catch (e) { kind = e.kind; } kind",
    );
    assert_eq!(outcome.value.unwrap().plain, "OutOfMemoryError");
}

#[test]
fn index_errors() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "c[5]");
    assert_eq!(e.kind, "IndexError");
    let e = fails(&mut s, "c.size(3)");
    assert_eq!(e.kind, "IndexError");
    assert!(
        e.message.contains("Dimension out of range"),
        "{}",
        e.message
    );
    // A 0-d tensor has no dim to ask about, 0 and -1 included (reductions would take them).
    for code in ["c.sum().size(0)", "c.sum().stride(-1)", "c.stride(2)"] {
        let e = fails(&mut s, code);
        assert_eq!(e.kind, "IndexError", "{code}");
    }
    let e = fails(&mut s, "c.sum().size(0)");
    assert!(
        e.message
            .contains("Dimension specified as 0 but tensor has no dimensions"),
        "{}",
        e.message
    );
}

#[test]
fn sizes_no_memory_holds_are_errors_not_aborts() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    // eye built its n × m values in host memory first, which overflowed or aborted the process.
    let e = fails(&mut s, "eye(1 << 40)");
    assert!(
        e.message.contains("Storage size calculation overflowed"),
        "{}",
        e.message
    );
    let e = fails(&mut s, "eye(1 << 20, #{device: \"cuda\"})");
    assert_eq!(e.kind, "OutOfMemoryError", "{}", e.message);
    let e = fails(&mut s, "linspace(0, 1, 1 << 40, #{device: \"cuda\"})");
    assert_eq!(e.kind, "OutOfMemoryError", "{}", e.message);
    let e = fails(&mut s, "zeros(0).chunk(1 << 40)");
    assert_eq!(e.kind, "RuntimeError", "{}", e.message);
    // 4 TiB of host memory is refused even where the kernel would grant it untouched
    // (vm.overcommit_memory = 1), as GPU hosts often do: writing it would kill the session.
    let e = fails(&mut s, "empty(1 << 40)");
    assert_eq!(e.kind, "OutOfMemoryError", "{}", e.message);
    assert!(e.message.contains("DefaultCPUAllocator"), "{}", e.message);
    let outcome = s.execute("eye(2, 3, #{device: \"cuda\"}).tolist()");
    assert_eq!(
        outcome.value.unwrap().plain,
        "[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]"
    );
}

#[test]
fn a_panic_inside_torchlet_is_an_internal_error_and_the_session_goes_on() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    // No script reaches a panic on purpose; a function registered here stands in for the bug.
    s.engine_mut()
        .register_fn("_fails_inside", || -> i64 { panic!("an invariant broke") });
    let e = fails(&mut s, "_fails_inside()");
    assert_eq!(e.kind, "InternalError");
    assert!(
        e.message.contains("an invariant broke") && e.message.contains("please report it"),
        "{}",
        e.message
    );
    let outcome = s.execute("(x * 0 + 1).sum().item()");
    assert_eq!(outcome.value.unwrap().plain, "1000000.0");
}

#[test]
fn bad_options_are_type_errors() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "zeros(2, #{dtyp: \"float16\"})");
    assert_eq!(e.kind, "TypeError");
    assert!(e.message.contains("'dtyp'"), "{}", e.message);
    let e = fails(&mut s, "zeros(2, #{dtype: \"float17\"})");
    assert!(e.message.contains("float17"), "{}", e.message);
    let e = fails(&mut s, "tensor([[1, 2], [3]])");
    assert_eq!(e.kind, "ValueError");
    let e = fails(&mut s, "zeros(-2)");
    assert_eq!(e.kind, "RuntimeError");
    assert!(e.message.contains("negative dimension -2"), "{}", e.message);
}

/// Output that tells another thread each time the running code prints (`started` below).
struct PrintSignal(Sender<String>);

impl Frontend for PrintSignal {
    fn stdout(&self, text: &str) {
        let _ = self.0.send(text.to_string());
    }
    fn stderr(&self, _text: &str) {}
    fn input(&self, _prompt: &str, _password: bool) -> Result<String, String> {
        Err("no input in this test".into())
    }
}

#[test]
fn interrupt_stops_a_loop_and_keeps_the_session() {
    let _g = exclusive();
    let (printed, prints) = channel();
    let options = SessionOptions {
        source_name: Some("<test>".into()),
        ..Default::default()
    };
    let mut s = with_tensors(Session::new(options, Rc::new(PrintSignal(printed))));
    let before = figures(&mut s);
    let handle = s.interrupt_handle();
    // Interrupt once the loop runs: execute() drops an interrupt that arrives before the input
    // starts (one sent while idle must not stop the next input), so a timed one could be lost.
    let stopper = std::thread::spawn(move || {
        let started = prints.recv_timeout(Duration::from_secs(120));
        handle.interrupt();
        started
    });
    let e = s
        .execute("print(\"started\"); let n = 0; loop { n += 1; }")
        .error
        .expect("interrupted");
    let started = stopper.join().unwrap();
    assert_eq!(
        started.as_deref(),
        Ok("started\n"),
        "the loop did not start"
    );
    assert_eq!(e.kind, "KeyboardInterrupt");
    assert_eq!(figures(&mut s), before);
}

#[test]
fn an_interrupt_while_idle_does_not_stop_the_next_input() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    s.interrupt_handle().interrupt();
    let outcome = s.execute("let n = 0; for i in 0..1000 { n += i; } n");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.value.unwrap().plain, "499500");
}

#[test]
fn unknown_and_read_only_attributes() {
    let _g = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "c.shapez");
    assert_eq!(e.kind, "AttributeError");
    assert_eq!(e.message, "'Tensor' object has no attribute 'shapez'");
    let e = fails(&mut s, "c.shape = [6];");
    assert_eq!(e.kind, "AttributeError");
    assert_eq!(
        e.message,
        "attribute 'shape' of 'Tensor' objects is not writable"
    );
    let e = fails(&mut s, "c.sum(\"all\")");
    assert_eq!(e.kind, "TypeError");
    assert!(e.message.contains("(Tensor, string)"), "{}", e.message);
}

/// Rhai gives an error raised inside a module's function (`cuda::…`) no position: it is placed at
/// the statement that was running.
#[test]
fn an_error_in_a_module_function_names_its_statement() {
    let _gpu = exclusive();
    let mut s = session_with_tensors();
    let e = fails(&mut s, "let a = 1;\nlet b = 2;\ncuda::all_reduce([x, 5]);");
    assert_eq!(e.kind, "TypeError");
    assert_eq!(e.line, Some(3), "{e:?}");
    assert_eq!(e.source_line.as_deref(), Some("cuda::all_reduce([x, 5]);"));
}
