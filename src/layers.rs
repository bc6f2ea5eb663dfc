//! A test that the import graph flows one way: front ends → session → script → tensor/autograd →
//! device → alloc; no module names one above it, and front ends name nothing below session.
use std::path::Path;

/// A module's layer; front ends are the top.
fn rank(module: &str) -> Option<u8> {
    Some(match module {
        "kernel" | "repl" | "runner" | "main" => 5,
        "session" => 4,
        "script" => 3,
        "tensor" | "autograd" => 2,
        "device" => 1,
        "alloc" | "types" => 0,
        _ => return None,
    })
}

/// Imports known to point upward, with the work that removes them.
const KNOWN: &[(&str, &str)] = &[
    // device/ stops importing tensor/ once the shared vocabulary moves below both (issue 12, item 2).
    ("device", "tensor"),
];

/// Every `crate::MODULE` / `torchlet::MODULE` named in `text`.
fn named_modules(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for prefix in ["crate::", "torchlet::"] {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            found.push(&rest[..end]);
        }
    }
    found
}

fn visit(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            visit(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.to_string_lossy().into_owned());
        }
    }
}

#[test]
fn no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    visit(&src, &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let relative = Path::new(file).strip_prefix(&src).expect("under src");
        let top = relative
            .iter()
            .next()
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let Some(own) = rank(top.trim_end_matches(".rs")) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        for module in named_modules(&text) {
            let Some(dep) = rank(module) else { continue };
            let upward = dep > own;
            let skips_session = own == 5 && dep < 4;
            let known = KNOWN.contains(&(top.trim_end_matches(".rs"), module));
            if (upward || skips_session) && !known {
                wrong.push(format!("{} imports {module}", relative.display()));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "imports against the layers: {wrong:#?}");
}
