//! A fresh clone tests itself: no code, test, script or CI step reads files from outside the repository.
use std::path::{Path, PathBuf};

/// Where everything that runs lives; data a test needs belongs in tests/data/ (see its README).
const SCANNED: [&str; 7] = [
    "src",
    "crates",
    "tests",
    "scripts",
    "benches",
    ".ci",
    "kernelspec",
];

/// Spellings of the reference folder beside the repository. Built at run time so that this file,
/// which is scanned too, does not match itself.
fn outside_references() -> Vec<String> {
    let shared = ["sha", "red"].concat();
    vec![
        format!("../{shared}"),
        format!("{shared}/reference"),
        format!("{shared}/gpu"),
        format!("/work/{shared}"),
    ]
}

fn files_under(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_file() {
        found.push(path.to_path_buf());
    } else if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries {
            files_under(&entry.expect("a readable directory entry").path(), found);
        }
    }
}

#[test]
fn nothing_reads_files_beside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SCANNED {
        files_under(&root.join(dir), &mut files);
    }
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("tests/front_ends/self_contained.rs")),
        "the scan found no files under {}",
        root.display()
    );
    let patterns = outside_references();
    let mut hits = Vec::new();
    for file in &files {
        // Binary files (logos, compiled kernels) cannot name a path a test reads.
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(p) = patterns.iter().find(|p| line.contains(p.as_str())) {
                let file = file.strip_prefix(root).unwrap_or(file).display();
                hits.push(format!("{file}:{}: {p:?} in: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "files outside the repository are referenced; copy what is needed into tests/data/ with \
         the script that recorded it (tests/data/README.md):\n{}",
        hits.join("\n")
    );
}

#[test]
fn every_recorded_data_file_has_its_recording_script_and_readme_entry() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let readme = std::fs::read_to_string(data.join("README.md")).expect("tests/data/README.md");
    for entry in std::fs::read_dir(&data).expect("tests/data") {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        // A folder of recordings (one per program) documents itself in its own README.
        if name == "README.md" || entry.path().is_dir() {
            continue;
        }
        assert!(
            readme.contains(&format!("`{name}`")),
            "tests/data/README.md does not list {name}"
        );
        if name.starts_with("record_") {
            continue;
        }
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}`")))
            .unwrap_or_else(|| panic!("tests/data/README.md has no table row for {name}"));
        let script = row
            .split('`')
            .find(|s| s.starts_with("record_"))
            .unwrap_or_else(|| panic!("{name}: its row names no record_*.py script: {row}"));
        assert!(
            data.join(script).is_file(),
            "{name} is recorded by {script}, which is not in tests/data/"
        );
    }
}
