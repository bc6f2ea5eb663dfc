//! The crate's import graph flows one way: every `crate::` import in `src/` (and every
//! `torchlet::` one in the binary) names its own layer or one below it (front ends → session →
//! script → optim/nn → tensor/autograd → device → alloc → types), front ends name nothing below session, and
//! `types`, the shared vocabulary, imports nothing of the crate at all.

use std::path::Path;

/// Layers from the bottom; modules in one entry sit at the same level.
const LAYERS: &[&[&str]] = &[
    &["types"],
    &["alloc"],
    &["device"],
    &["tensor", "autograd"],
    &["optim", "nn"],
    &["script"],
    &["session"],
    &["kernel", "repl", "runner", "fit", "main"],
];

/// Top-level files of `src/` that are no layer: the crate root and this test.
const NOT_LAYERS: &[&str] = &["lib", "layers"];

fn level(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `crate::NAME` or `torchlet::NAME` in `text` outside comments, as NAME.
fn crate_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for prefix in ["crate::", "torchlet::"] {
            for (i, _) in line.match_indices(prefix) {
                // `torchlet::` inside a longer path (`my_torchlet::`) is not the crate.
                let before = line[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let rest = &line[i + prefix.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        }
    }
    out
}

/// The top-level module a path under `src/` belongs to (`script` for `src/script/help.rs`).
fn module_of(path: &Path) -> String {
    let rel = path.strip_prefix("src").unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
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
        let module = module_of(&path);
        let Some(own) = level(&module) else { continue };
        let text = std::fs::read_to_string(&path).unwrap();
        let top = LAYERS.len() - 1;
        let session = level("session").unwrap();
        for name in crate_refs(&text) {
            let upward = level(&name).is_some_and(|l| l > own);
            let skips_session = own == top && level(&name).is_some_and(|l| l < session);
            let vocabulary_imports = module == "types" && name != "types";
            if upward || skips_session || vocabulary_imports {
                found.push(format!("{}: crate::{name}", path.display()));
            }
        }
    }
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let mut found = Vec::new();
    visit(Path::new("src"), &mut found);
    found.sort();
    found.dedup();
    assert!(
        found.is_empty(),
        "imports against the layers:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_top_module_has_a_layer() {
    for entry in std::fs::read_dir("src").unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let module = name.trim_end_matches(".rs");
        if !NOT_LAYERS.contains(&module) {
            assert!(level(module).is_some(), "src/{name} is in no layer");
        }
    }
}
