//! Tab completion from a session: variables, functions, members after `.`, `cuda::`, `:commands`, each with its kind.
use torchlet_session::{Completion, CompletionKind, Session};

fn complete(s: &Session, code: &str) -> Completion {
    s.complete(code, code.len())
}

#[test]
fn variables_and_functions_complete_at_top_level() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let learning_rate = 0.1; fn learn(x) { x }");
    let c = complete(&s, "let y = lea");
    assert_eq!((c.start, c.end), (8, 11));
    assert_eq!(c.matches(), ["learn", "learning_rate"]);
    assert!(complete(&s, "ze").matches().contains(&"zeros".to_string()));
    assert!(complete(&s, "no_")
        .matches()
        .contains(&"no_grad".to_string()));
}

#[test]
fn tensor_members_complete_after_a_dot() {
    let (s, _) = Session::captured("<test>");
    let c = complete(&s, "x.cu");
    assert_eq!(c.start, 2);
    assert!(
        c.matches().contains(&"cuda".to_string()),
        "{:?}",
        c.matches()
    );
    let c = complete(&s, "randn(2, 2).sha");
    assert_eq!(c.matches(), ["shape"]);
}

#[test]
fn a_tensor_variable_offers_what_dir_of_a_tensor_would() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let x = zeros(2, 2); fn twice(a) { a * 2 }");
    let offered = complete(&s, "x.").matches();
    for member in ["shape", "sum", "cuda", "backward", "requires_grad", "grad"] {
        assert!(offered.iter().any(|m| m == member), "{member}: {offered:?}");
    }
    // Functions Rhai could call with a tensor first are not its members.
    for other in [
        "exit",
        "print",
        "__discard",
        "memory_allocated",
        "twice",
        "type_of",
    ] {
        assert!(!offered.iter().any(|m| m == other), "{other}: {offered:?}");
    }
    assert!(offered.iter().all(|m| !m.starts_with("__")), "{offered:?}");
}

#[test]
fn a_known_receiver_gets_its_own_type_methods() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let words = \"a b\";");
    let c = complete(&s, "words.to_up");
    assert_eq!(c.matches(), ["to_upper"]);
    // A string is no tensor: no tensor members offered.
    assert!(complete(&s, "words.cu").matches().is_empty());
}

#[test]
fn cuda_members_complete_after_the_module_name() {
    let (s, _) = Session::captured("<test>");
    let c = complete(&s, "cuda::memory_re");
    assert_eq!(c.start, 6);
    assert_eq!(c.matches(), ["memory_reserved"]);
}

#[test]
fn commands_complete_with_their_colon() {
    let (s, _) = Session::captured("<test>");
    let c = complete(&s, ":tr");
    assert_eq!((c.start, c.matches()), (0, vec![":trace".to_string()]));
    let c = complete(&s, ":help memory_al");
    assert_eq!(c.matches(), ["memory_allocated"]);
}

#[test]
fn the_cursor_may_sit_inside_the_input() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let alpha = 1;");
    let code = "print(alp) + 1";
    let c = s.complete(code, 9);
    assert_eq!(
        (c.start, c.end, c.matches()),
        (6, 9, vec!["alpha".to_string()])
    );
    // Out-of-range and mid-character cursors are clamped, not a panic.
    let _ = s.complete("é", 1);
    let _ = s.complete("x", 99);
}

/// The kind of the candidate `text` among `code`'s completions, and its signature.
fn kind_of(s: &Session, code: &str, text: &str) -> (CompletionKind, Option<String>) {
    let c = complete(s, code);
    let item = c.items.iter().find(|i| i.text == text);
    let item = item.unwrap_or_else(|| panic!("{text} not offered for {code:?}: {:?}", c.matches()));
    (item.kind, item.signature.clone())
}

#[test]
fn every_candidate_says_what_it_names() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let zed = 1; fn zap(a, b) { a + b }");
    use CompletionKind::*;
    assert_eq!(kind_of(&s, "ze", "zed"), (Variable, None));
    let (kind, signature) = kind_of(&s, "ze", "zeros");
    assert_eq!(kind, Function);
    assert!(signature.unwrap().starts_with("zeros(d0, d1, …)"));
    assert_eq!(
        kind_of(&s, "za", "zap"),
        (Function, Some("zap(a, b)".into()))
    );
    assert_eq!(kind_of(&s, "no_", "no_grad").0, Keyword);
    assert_eq!(kind_of(&s, "le", "let").0, Keyword);
    assert_eq!(kind_of(&s, "cu", "cuda").0, Module);
    assert_eq!(kind_of(&s, "x.sh", "shape"), (Property, None));
    let (kind, signature) = kind_of(&s, "x.su", "sum");
    assert_eq!(kind, Method);
    assert_eq!(signature.as_deref(), Some("t.sum([dim[, keepdim]])"));
    let (kind, signature) = kind_of(&s, "cuda::memory_al", "memory_allocated");
    assert_eq!(kind, Function);
    assert_eq!(
        signature.as_deref(),
        Some("cuda::memory_allocated([device])")
    );
    assert_eq!(kind_of(&s, ":me", ":mem").0, Magic);
    assert_eq!(CompletionKind::Property.name(), "property");
}

#[test]
fn a_tensor_is_offered_what_dir_of_a_tensor_lists() {
    let (mut s, _) = Session::captured("<test>");
    s.execute("let x = randn(2, 2);");
    let offered = complete(&s, "x.").matches();
    for name in ["sum", "shape", "backward", "cuda", "grad", "numel"] {
        assert!(offered.contains(&name.to_string()), "{name} in {offered:?}");
    }
    for name in [
        "exit",
        "print",
        "__discard",
        "memory_allocated",
        "type_of",
        "step",
    ] {
        assert!(
            !offered.contains(&name.to_string()),
            "{name} in {offered:?}"
        );
    }
}
