//! The rule that lets many areas' tests share one process: every test of the `lang`, `tensors` and
//! `memory` binaries that names CUDA holds the GPU lock (see `tests/common/mod.rs`), runs `torchlet`
//! in a child process, or says in a `// no GPU lock:` comment why it needs neither.
//!
//! A test that allocates on cuda:0 without the lock makes the figures of an exclusive test in the
//! same binary wrong now and then; this check finds it by reading the sources. Helpers count: a
//! test that calls a function of its file that takes the lock (or spawns) takes it too. So do the
//! tests `device_test!` stamps: its runner takes the lock before the body runs, which
//! [`the_device_test_macro_holds_the_gpu_lock`] checks in `tests/common/device_test.rs`.
use std::collections::BTreeSet;
use std::path::Path;

/// Calls that take the GPU lock, shared or exclusive.
const LOCKS: &[&str] = &[
    "uses_gpu()",
    "devices()",
    "device_names()",
    "exclusive(",
    "gpu()",
    "exclusive_simulating(",
    "setup_simulated_gpu(",
    "shares_gpu_as_is()",
    "alone_as_is()",
];
/// Calls that run code in another process.
const SPAWNS: &[&str] = &[
    "Command::new",
    "CARGO_BIN_EXE",
    "current_exe",
    "torchlet()",
    "repl_command(",
];
/// How a test says that it needs neither.
const EXEMPT: &str = "// no GPU lock:";
/// What precedes the body `device_test!` stamps into one test per device.
const STAMPED: &str = "device_test!(";

/// A function of a test file: its name, its body, whether it is a test, whether `device_test!`
/// stamps it (which makes it tests that hold the GPU lock).
struct Item {
    name: String,
    body: String,
    test: bool,
    stamped: bool,
}

/// Every `fn` with a body in `src` (nested ones included), by brace matching.
fn items(src: &str) -> Vec<Item> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = src[from..].find("fn ").map(|i| from + i) {
        from = at + 3;
        let boundary = at == 0 || !src.as_bytes()[at - 1].is_ascii_alphanumeric();
        let name: String = src[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = src[at..].find(['{', ';']).map(|i| at + i) else {
            break;
        };
        if !boundary || name.is_empty() || src.as_bytes()[open] == b';' {
            continue;
        }
        let mut depth = 0;
        let close = src[open..]
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map_or(src.len(), |(i, _)| open + i + 1);
        let attributes = src[..at].trim_end().rsplit("\n\n").next().unwrap_or("");
        let test = attributes.contains("#[test]") || attributes.contains("#[tokio::test");
        let stamped = attributes.ends_with(STAMPED);
        out.push(Item {
            name,
            body: src[open..close].to_string(),
            test: test || stamped,
            stamped,
        });
    }
    out
}

/// The names of the items whose bodies contain one of `marks`, or call such an item.
fn reaching(items: &[Item], marks: &[&str]) -> BTreeSet<String> {
    let mut found: BTreeSet<String> = items
        .iter()
        .filter(|i| marks.iter().any(|m| i.body.contains(m)))
        .map(|i| i.name.clone())
        .collect();
    loop {
        let more: Vec<String> = items
            .iter()
            .filter(|i| !found.contains(&i.name))
            .filter(|i| found.iter().any(|h| i.body.contains(&format!("{h}("))))
            .map(|i| i.name.clone())
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

/// Whether `body` names CUDA outside its comments.
fn names_cuda(body: &str) -> bool {
    body.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| l.to_ascii_lowercase().contains("cuda"))
}

/// The tests of `file` that break the rule.
fn unlocked_tests(file: &Path) -> Vec<String> {
    let src = std::fs::read_to_string(file).unwrap();
    let items = items(&src);
    let lockers = reaching(&items, LOCKS);
    let spawners = reaching(&items, SPAWNS);
    items
        .iter()
        .filter(|i| i.test && names_cuda(&i.body) && !i.body.contains(EXEMPT))
        .filter(|i| !i.stamped && !lockers.contains(&i.name) && !spawners.contains(&i.name))
        .map(|i| format!("{}: {}", file.display(), i.name))
        .collect()
}

#[test]
fn every_test_that_names_cuda_holds_the_gpu_lock() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut checked = 0;
    let mut unlocked = Vec::new();
    for dir in ["lang", "tensors", "memory"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            // This file's own sample of a broken rule is not a test of the binary.
            if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("gpu_lock.rs") {
                unlocked.extend(unlocked_tests(&path));
                checked += 1;
            }
        }
    }
    assert!(checked > 30, "only {checked} test files found");
    assert!(
        unlocked.is_empty(),
        "these tests name CUDA but hold no GPU lock: call common::uses_gpu() (computing on cuda:0) \
         or common::exclusive() (reading its figures), or say why neither is needed in a \
         `{EXEMPT}` comment:\n{}",
        unlocked.join("\n")
    );
}

#[test]
fn the_check_sees_an_unlocked_test_through_its_helpers() {
    let src = r#"
fn locked_helper() { common::uses_gpu(); }
fn session() { locked_helper(); }
#[test]
fn through_a_helper() { session(); run("zeros(2).cuda()"); }
#[test]
fn without() { run("zeros(2).cuda()"); }
#[test]
fn exempt() {
    // no GPU lock: reads help text only
    help("cuda::memory_stats");
}
device_test!(fn stamped(device: &str) { run("zeros(2).cuda()"); });
#[test]
fn in_a_comment_only() {
    // cuda is not used here
    run("zeros(2)");
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sample.rs");
    std::fs::write(&file, src).unwrap();
    let found = unlocked_tests(&file);
    assert_eq!(found, vec![format!("{}: without", file.display())]);
}

#[test]
fn the_device_test_macro_holds_the_gpu_lock() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/device_test.rs");
    let src = std::fs::read_to_string(&path).unwrap();
    let items = items(&src);
    let runner = items
        .iter()
        .find(|i| i.name == "run_stamped")
        .expect("device_test!'s runner, run_stamped");
    assert!(
        LOCKS.iter().any(|l| runner.body.contains(l)),
        "run_stamped must take the GPU lock before the body runs:\n{}",
        runner.body
    );
    let macro_body = &src[src.find("macro_rules! device_test").expect("the macro")..];
    assert_eq!(
        macro_body.matches("run_stamped::<").count(),
        3,
        "each of the three stamped tests runs its body through run_stamped"
    );
}
