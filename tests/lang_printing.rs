//! Output and help: `print`, `eprint`, `display`, `clear_output`, `input`, `help`, `name?`, value echo.
use std::rc::Rc;

use torchlet::session::{CapturedOutput, OutputEvent, Session, SessionOptions};

fn session_with_inputs(inputs: &[&str]) -> (Session, Rc<CapturedOutput>) {
    let output = Rc::new(CapturedOutput::with_inputs(
        inputs.iter().map(|s| s.to_string()).collect(),
    ));
    let options = SessionOptions {
        source_name: Some("<test>".into()),
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
    let (mut s, out) = Session::captured("<test>");
    assert!(s.execute("help(\"zeros\")").error.is_none());
    assert_eq!(
        out.stdout_text(),
        format!("{}\n", torchlet::script::help::doc("zeros").unwrap())
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
            torchlet::session::Completeness::Complete
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
