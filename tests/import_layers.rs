//! The crate's import graph flows one way: every `crate::` import in `src/` names its own layer or
//! one below it (front ends → session → script → tensor/autograd → device → alloc/types).

use std::path::Path;

/// Layers from the bottom; modules in one entry sit at the same level.
const LAYERS: &[&[&str]] = &[
    &["types"],
    &["alloc"],
    &["device"],
    &["tensor", "autograd"],
    &["script"],
    &["session"],
    &["kernel", "repl", "runner", "main"],
];

/// Upward imports another change removes (`script` stops importing `session`); drop the entry then.
const PENDING: &[(&str, &str)] = &[("script", "session")];

fn level(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `crate::NAME` in `text`, as NAME.
fn crate_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, _) in line.match_indices("crate::") {
            let rest = &line[i + 7..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

fn visit(dir: &Path, found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            visit(&path, found);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix("src").unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        let Some(own) = level(&module) else { continue };
        let text = std::fs::read_to_string(&path).unwrap();
        for name in crate_refs(&text) {
            let pending = PENDING.contains(&(module.as_str(), name.as_str()));
            if level(&name).is_some_and(|l| l > own) && !pending {
                found.push(format!("{}: crate::{name}", path.display()));
            }
        }
    }
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let mut found = Vec::new();
    visit(Path::new("src"), &mut found);
    assert!(found.is_empty(), "upward imports:\n{}", found.join("\n"));
}

#[test]
fn every_top_module_has_a_layer() {
    for entry in std::fs::read_dir("src").unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.trim_end_matches(".rs");
        if module != "lib" {
            assert!(level(module).is_some(), "src/{name} is in no layer");
        }
    }
}
