//! Output and help: `print`, `eprint`, `display`, `clear_output`, `input`, `help`, `name?`, value echo.
use std::rc::Rc;

use torchlet_session::{CapturedOutput, OutputEvent, Session, SessionOptions};

fn session_with_inputs(inputs: &[&str]) -> (Session, Rc<CapturedOutput>) {
    let output = Rc::new(CapturedOutput::with_inputs(
        inputs.iter().map(|s| s.to_string()).collect(),
    ));
    let options = SessionOptions {
        source_name: Some("<test>".into()),
        ..Default::default()
    };
    (Session::new(options, output.clone()), output)
}

#[test]
fn print_and_eprint_go_to_their_streams_in_order() {
    let (mut s, out) = Session::captured("<test>");
    let outcome = s.execute("print(\"a\"); eprint(\"b\"); print(12); eprint([1, 2]);");
    assert!(outcome.error.is_none());
    assert_eq!(
        out.events(),
        vec![
            OutputEvent::Stdout("a\n".into()),
            OutputEvent::Stderr("b\n".into()),
            OutputEvent::Stdout("12\n".into()),
            OutputEvent::Stderr("[1, 2]\n".into()),
        ]
    );
}

#[test]
fn display_and_clear_output_reach_the_front_end() {
    let (mut s, out) = Session::captured("<test>");
    assert!(s
        .execute("display(42); clear_output(); clear_output(true); display(())")
        .error
        .is_none());
    let events = out.events();
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(matches!(&events[0], OutputEvent::Display(d) if d.plain == "42"));
    assert_eq!(events[1], OutputEvent::ClearOutput);
    assert_eq!(events[2], OutputEvent::ClearOutput);
}

#[test]
fn input_reads_from_the_front_end_and_fails_clearly_at_the_end() {
    let (mut s, _) = session_with_inputs(&["alice"]);
    let outcome = s.execute("let name = input(\"who? \"); name");
    assert_eq!(outcome.value.unwrap().plain, "alice");
    let e = s.execute("input()").error.expect("no more input");
    assert_eq!(e.kind, "EOFError");
}

#[test]
fn the_value_of_the_last_expression_echoes_and_unit_does_not() {
    let (mut s, _) = Session::captured("<test>");
    assert_eq!(s.execute("1 + 1").value.unwrap().plain, "2");
    assert!(s.execute("let a = 1;").value.is_none());
    assert_eq!(s.execute("\"text\"").value.unwrap().plain, "text");
}

#[test]
fn help_prints_the_one_line_doc() {
    // no GPU lock: help text only, nothing runs on a device.
    let (mut s, out) = Session::captured("<test>");
    assert!(s.execute("help(\"zeros\")").error.is_none());
    assert_eq!(
        out.stdout_text(),
        format!("{}\n", torchlet_rhai::surface::help::doc("zeros").unwrap())
    );
    out.clear();
    assert!(s.execute("help(\"cuda::memory_reserved\")").error.is_none());
    assert!(out.stdout_text().starts_with("cuda::memory_reserved("));
    out.clear();
    assert!(s.execute("help(\"no_such_thing\")").error.is_none());
    assert!(out.stdout_text().contains("No help for 'no_such_thing'"));
    out.clear();
    assert!(s.execute("help()").error.is_none());
    let overview = out.stdout_text();
    for name in ["zeros", "del", "no_grad", "shape", "memory_snapshot"] {
        assert!(overview.contains(name), "help() lists {name}");
    }
}

#[test]
fn question_mark_asks_for_help() {
    // no GPU lock: help text only, nothing runs on a device.
    let (mut s, out) = Session::captured("<test>");
    for (query, expected) in [
        ("randn?", "randn("),
        ("?empty_cache", "empty_cache("),
        ("cuda::memory_stats?", "cuda::memory_stats("),
        ("t.shape?", "t.shape"),
        ("del?", "del x"),
    ] {
        out.clear();
        let outcome = s.execute(query);
        assert!(outcome.error.is_none(), "{query}: {:?}", outcome.error);
        assert!(
            out.stdout_text().starts_with(expected),
            "{query}: {}",
            out.stdout_text()
        );
        assert_eq!(
            s.is_complete(query),
            torchlet_session::Completeness::Complete
        );
    }
    let e = s
        .execute("print(1); zeros?")
        .error
        .expect("only a whole input");
    assert_eq!(e.kind, "SyntaxError");
    assert!(e.message.contains("help(\"name\")"), "{}", e.message);
}

#[test]
fn caught_errors_print_with_their_kind() {
    let (mut s, out) = Session::captured("<test>");
    let outcome =
        s.execute("try { del nothing; } catch (e) { print(e); print(e.kind); print(e.message); }");
    assert!(outcome.error.is_none());
    assert_eq!(
        out.stdout_text(),
        "NameError: name 'nothing' is not defined\nNameError\nname 'nothing' is not defined\n"
    );
}

mod tensors {
    //! Tensors print and echo in PyTorch's format, on every device.

    use torchlet_session::{OutputEvent, Session};

    use crate::common::device_test;

    device_test!(
        fn print_and_echo_use_pytorch_format(device: &str) {
            let (mut s, out) = Session::captured("<test>");
            let suffix = if device == "cuda" {
                ", device='cuda:0'"
            } else {
                ""
            };
            let code = format!("let t = tensor([[0.1234, -1.0], [2.5, 3.0]], #{{device: \"{device}\"}}); print(t); t");
            let outcome = s.execute(&code);
            assert!(outcome.error.is_none(), "{:?}", outcome.error);
            let want = format!("tensor([[ 0.1234, -1.0000],\n        [ 2.5000,  3.0000]]{suffix})");
            assert_eq!(out.stdout_text(), format!("{want}\n"), "print on {device}");
            let echo = outcome.value.expect("a tensor echoes");
            assert_eq!(echo.plain, want, "echo on {device}");
            assert!(
                echo.html.unwrap().starts_with("<pre>tensor("),
                "notebooks get HTML"
            );
            out.clear();
            let outcome = s.execute(&format!("print(tensor([1, 2], #{{device: \"{device}\"}}).to(\"float16\")); display(ones(2, #{{device: \"{device}\"}}))"));
            assert!(outcome.error.is_none(), "{:?}", outcome.error);
            let events = out.events();
            assert_eq!(
                events[0],
                OutputEvent::Stdout(format!("tensor([1., 2.]{suffix}, dtype=torch.float16)\n"))
            );
            assert!(
                matches!(&events[1], OutputEvent::Display(d) if d.plain == format!("tensor([1., 1.]{suffix})"))
            );
        }
    );

    #[test]
    fn large_tensors_are_summarised() {
        let (mut s, _) = Session::captured("<test>");
        let outcome = s.execute("arange(2000)");
        assert_eq!(
            outcome.value.unwrap().plain,
            "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
        );
    }

    device_test!(
        fn properties_and_lists_read_back(device: &str) {
            let (mut s, _) = Session::captured("<test>");
            let code = format!(
            "let t = arange(6, #{{device: \"{device}\"}}).reshape(2, 3).float();
                 [t.shape, t.dtype, t.is_cuda, t.nbytes, t.size(-1), t.dim(), t.numel(), t.element_size(), t[1].tolist(), t.sum().item()]"
        );
            let outcome = s.execute(&code);
            assert!(outcome.error.is_none(), "{:?}", outcome.error);
            let cuda = device == "cuda";
            assert_eq!(
                outcome.value.unwrap().plain,
                format!("[[2, 3], \"float32\", {cuda}, 24, 3, 2, 6, 4, [3.0, 4.0, 5.0], 15.0]")
            );
            let outcome = s.execute("t.device");
            assert_eq!(
                outcome.value.unwrap().plain,
                if cuda { "cuda:0" } else { "cpu" }
            );
        }
    );
}

#[test]
fn question_mark_on_a_variable_describes_its_value() {
    let (mut s, out) = Session::captured("<test>");
    assert!(s
        .execute("let t = ones(2, 3, #{requires_grad: true}); let n = 3;")
        .error
        .is_none());
    assert!(s.execute("t?").error.is_none());
    assert_eq!(
        out.stdout_text(),
        "Tensor of shape [2, 3], float32, on cpu, 24 bytes, requires_grad=true; help(\"Tensor\") lists its methods\n"
    );
    out.clear();
    // A name that is not a variable gets the language's doc.
    assert!(s.execute("let zeros_count = 1;").error.is_none());
    assert!(s.execute("zeros?").error.is_none());
    assert!(
        out.stdout_text().starts_with("zeros("),
        "{}",
        out.stdout_text()
    );
    out.clear();
    assert!(s.execute("del t").error.is_none());
    assert!(s.execute("t?").error.is_none());
    assert!(
        out.stdout_text().starts_with("t.t()"),
        "a deleted name is no variable: {}",
        out.stdout_text()
    );
}
