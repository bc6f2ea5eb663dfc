//! The per-line ledger: runs, Δallocated, Δreserved, peak and segments of each source line, from
//! `torchlet run --ledger`, `:ledger` and the session API.
use crate::common;

use torchlet_session::Session;

const PROGRAM: &str = "let x = randn(1000, 1000).cuda();
let keep = [];
for i in 0..3 {
    let t = x * 2;
    keep.push(t.sum());
}
del x;
empty_cache();";

#[test]
fn each_line_is_charged_what_it_did() {
    let (_guard, _) = common::gpu();
    let (mut s, _) = Session::captured("<ledger>");
    let (outcome, lines) = s.execute_with_ledger(PROGRAM);
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let line = |n: usize| lines.get(&n).copied().unwrap_or_else(|| panic!("line {n}"));
    let first = line(1);
    assert_eq!(
        (
            first.runs,
            first.allocated,
            first.reserved,
            first.peak,
            first.created
        ),
        (1, 4000256, 20971520, 4000256, 1)
    );
    // `t = x * 2` runs three times; from the second on, the old t is freed after the new one
    // exists, so the peak holds x, two t's and the sums kept so far.
    let t = line(4);
    assert_eq!(
        (t.runs, t.allocated, t.peak),
        (3, 4000256, 3 * 4000256 + 2 * 512)
    );
    assert_eq!((line(5).runs, line(5).allocated), (3, 3 * 512));
    assert_eq!(line(7).allocated, -4000256);
    // As in Python the loop's last `t` outlives the loop and pins its segment.
    let empty = line(8);
    assert_eq!((empty.allocated, empty.reserved, empty.released), (0, 0, 0));
}

#[test]
fn the_command_shows_a_table_beside_the_source() {
    let (_guard, _) = common::gpu();
    let (mut s, _) = Session::captured("<ledger>");
    let outcome = s
        .run_command(":ledger let big = randn(1000, 1000).cuda();")
        .unwrap();
    let table = outcome.value.unwrap();
    let lines: Vec<&str> = table.plain.lines().collect();
    assert!(lines[0].contains("Δallocated"), "{}", table.plain);
    assert!(
        lines[1].contains("4000256") && lines[1].ends_with("let big = randn(1000, 1000).cuda();"),
        "{}",
        table.plain
    );
    assert!(table.html.unwrap().contains("<th>peak</th>"));
    let big = s.execute("big.numel()").value.unwrap().plain;
    assert_eq!(big, "1000000", "the ledger's code ran in the session");
}

#[test]
fn run_with_ledger_prints_it_after_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.rhai");
    std::fs::write(&path, PROGRAM).unwrap();
    let out = common::torchlet()
        .args(["--simulate-cuda", "run", "--ledger"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ledger of "), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .expect("a row for line 1");
    assert!(row.contains("4000256") && row.contains("20971520"), "{row}");
    assert!(row.ends_with("let x = randn(1000, 1000).cuda();"), "{row}");
}

#[test]
fn a_line_runs_once_per_execution_and_its_workspace_is_named() {
    let (_guard, _) = common::gpu();
    let a = torchlet_core::device::cuda_allocator(0).unwrap();
    a.empty_cache();
    let (mut s, _) = Session::captured("<ledger>");
    let code = "let a = 1;
print(`${a} ${a}`); let b = 2;
for i in 0..3 { a += 1; }
let x = randn(256, 256).cuda();
let y = x.matmul(x);";
    let first_matmul = torchlet_core::device::blas_workspaces()
        .iter()
        .all(|(_, w)| w.is_empty());
    let (outcome, lines) = s.execute_with_ledger(code);
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    // Two statements and a string's two `${…}` on line 2 are one execution of it; a one-line
    // loop's body runs three times.
    assert_eq!(lines[&2].runs, 1);
    assert_eq!(lines[&3].runs, 3);
    let table = torchlet_session::ledger::table(&lines, code).plain;
    assert!(table.contains("262144 (256.00 KiB)"), "{table}");
    assert!(table.contains("summed over a line's runs"), "{table}");
    if first_matmul {
        assert_eq!(lines[&5].workspace, 33554432);
        assert!(
            table
                .contains("line 5: 33554432 (32.00 MiB) of its Δallocated is the cuBLAS workspace"),
            "{table}"
        );
    }
}
