//! The conventions nothing else checks, so they drift: a `//!` line opening every source file, each
//! `Map:` paragraph naming every module its file declares, and the README's folder map naming every folder.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository root (the root package's manifest directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `path` relative to the repository root, with `/` separators, for messages.
fn relative(path: &Path) -> String {
    let rel = path.strip_prefix(root()).unwrap_or(path);
    rel.to_string_lossy().replace('\\', "/")
}

/// The sub-directories of `dir`, sorted; none when it cannot be read.
fn sub_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every `.rs` file under `dir`, recursively, appended to `out`.
fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            collect_rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The source files of the binary (`src/`) and of every crate (`crates/*/src/`), sorted.
fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect_rust_files(&root().join("src"), &mut files);
    for krate in sub_dirs(&root().join("crates")) {
        collect_rust_files(&krate.join("src"), &mut files);
    }
    files.sort();
    files
}

/// A file's text; a file that cannot be read fails the test with its path.
fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: cannot read: {e}", relative(path)))
}

/// The text of the leading `//!` block, one entry per line (without the `//!` and one space).
fn doc_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|rest| rest.strip_prefix(' ').unwrap_or(rest))
        .collect()
}

/// The `//!` paragraph that starts with `Map:`, joined into one string; `None` when there is none.
fn map_paragraph(text: &str) -> Option<String> {
    let lines = doc_lines(text);
    let start = lines.iter().position(|line| line.starts_with("Map:"))?;
    let paragraph: Vec<&str> = lines[start..]
        .iter()
        .take_while(|line| !line.trim().is_empty())
        .copied()
        .collect();
    Some(paragraph.join(" "))
}

/// Every span between backticks in `text`.
fn backticked(text: &str) -> BTreeSet<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The name `line` declares as a file module (`mod x;`, `pub mod x;`, `pub(crate) mod x;`, after
/// any attributes), if it declares one.
fn declared_module(line: &str) -> Option<&str> {
    let mut rest = line.trim();
    while let Some(attr) = rest.strip_prefix("#[") {
        rest = attr.split_once(']')?.1.trim_start();
    }
    if let Some(after_pub) = rest.strip_prefix("pub") {
        rest = match after_pub.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after_pub,
        }
        .trim_start();
    }
    let name = rest.strip_prefix("mod ")?.trim().strip_suffix(';')?.trim();
    let is_ident = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    is_ident.then_some(name)
}

/// The file modules `text` declares, in order.
fn declared_modules(text: &str) -> Vec<&str> {
    text.lines().filter_map(declared_module).collect()
}

/// Whether `path` is a crate root: `lib.rs` or `main.rs` directly inside a `src/` folder.
fn is_crate_root(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str());
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    matches!(name, Some("lib.rs" | "main.rs")) && parent == Some("src")
}

/// Fails with every problem found, one per line, so one run shows all of them.
fn assert_none(problems: Vec<String>, what: &str) {
    assert!(problems.is_empty(), "{what}:\n  {}", problems.join("\n  "));
}

#[test]
fn every_source_file_opens_with_a_doc_line() {
    let files = source_files();
    assert!(
        files.len() > 50,
        "found only {} source files under src/ and crates/*/src/",
        files.len()
    );
    let problems = files
        .iter()
        .filter(|path| !read(path).starts_with("//!"))
        .map(|path| {
            format!(
                "{}: add a one-line `//!` saying what the file does",
                relative(path)
            )
        })
        .collect();
    assert_none(problems, "files whose first line is not `//!`");
}

#[test]
fn every_crate_root_and_module_folder_has_a_map() {
    let mut checked_roots = 0;
    let mut problems = Vec::new();
    for path in source_files() {
        let text = read(&path);
        let root = is_crate_root(&path);
        checked_roots += usize::from(root);
        if (root || !declared_modules(&text).is_empty()) && map_paragraph(&text).is_none() {
            problems.push(format!(
                "{}: add a `//! Map:` paragraph naming each of its modules in backticks, with what it is for",
                relative(&path)
            ));
        }
    }
    assert!(checked_roots >= 2, "found only {checked_roots} crate roots");
    assert_none(problems, "files without a module map");
}

#[test]
fn every_map_names_every_module_its_file_declares() {
    let mut problems = Vec::new();
    for path in source_files() {
        let text = read(&path);
        let Some(map) = map_paragraph(&text) else {
            continue;
        };
        let named = backticked(&map);
        for module in declared_modules(&text) {
            if !named.contains(module) {
                problems.push(format!(
                    "{}: its `Map:` paragraph does not name `{module}`: add `{module}` and what it is for",
                    relative(&path)
                ));
            }
        }
    }
    assert_none(problems, "modules missing from their file's map");
}

/// The first backticked path of each row of the README's `## Folder map` table.
fn readme_folder_rows(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Folder map"))
        .expect("README.md has no `## Folder map` section");
    section
        .lines()
        .filter(|line| line.starts_with('|'))
        .skip(2) // the header and the `|---|` line
        .filter_map(|line| line.split('|').nth(1))
        .filter_map(|cell| backticked(cell).into_iter().next().map(str::to_string))
        .collect()
}

/// Top-level names `.gitignore` excludes (its `/name` lines): build outputs and tool folders.
fn ignored_top_level() -> BTreeSet<String> {
    let gitignore = fs::read_to_string(root().join(".gitignore")).unwrap_or_default();
    gitignore
        .lines()
        .filter_map(|line| line.trim().strip_prefix('/'))
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(str::to_string)
        .collect()
}

/// The folders the README's table must list: every crate, every visible top-level folder, and
/// every folder of the binary's `src/`.
fn folders_to_list() -> Vec<String> {
    let ignored = ignored_top_level();
    let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
    let mut folders: Vec<String> = sub_dirs(&root())
        .iter()
        .map(|p| name(p))
        .filter(|n| !n.starts_with('.') && !ignored.contains(n))
        .map(|n| format!("{n}/"))
        .collect();
    for (parent, dir) in [
        ("crates", root().join("crates")),
        ("src", root().join("src")),
    ] {
        folders.extend(
            sub_dirs(&dir)
                .iter()
                .map(|p| format!("{parent}/{}/", name(p))),
        );
    }
    folders
}

#[test]
fn readme_folder_map_lists_every_folder() {
    let rows = readme_folder_rows(&read(&root().join("README.md")));
    let listed: BTreeSet<&str> = rows.iter().map(String::as_str).collect();
    let folders = folders_to_list();
    assert!(
        folders.iter().any(|f| f == "crates/alloc/"),
        "the walk found no crates: {folders:?}"
    );
    let mut problems: Vec<String> = folders
        .iter()
        .filter(|folder| !listed.contains(folder.as_str()))
        .map(|folder| format!("`{folder}` has no row: add one saying what it holds"))
        .collect();
    problems.extend(
        rows.iter()
            .filter(|path| !root().join(path).exists())
            .map(|path| format!("`{path}` is listed but does not exist: remove or rename its row")),
    );
    assert_none(problems, "README.md's folder map is out of date");
}
