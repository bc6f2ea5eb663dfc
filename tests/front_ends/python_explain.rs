//! The explanations on Python names: `torchlet.memory_holders()`, `torchlet.explain_free(x)` and
//! the out-of-memory notes name variables, attributes, items, optimizer state and the locals of
//! the functions running, as a Python program spells them, without changing any lifetime.
use crate::common;
use common::{text, write_script};
use std::process::Output;

/// Run `body` as a `.py` file on the simulated GPU of `size`.
fn run_py(body: &str, size: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "explain.py", body);
    common::torchlet()
        .arg(format!("--simulate-cuda={size}"))
        .arg("run")
        .arg(&path)
        .output()
        .expect("the torchlet binary runs")
}

#[test]
fn holders_are_named_by_attribute_item_optimizer_state_and_local() {
    let out = run_py(
        r#"
import torch
import torch.nn as nn
import torchlet

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16, bias=False)
        self.register_buffer("scale", torch.ones(16))
    def forward(self, x):
        return self.fc(x) * self.scale

model = nn.Sequential(Block(), Block()).cuda()
opt = torch.optim.Adam(model.parameters())
model(torch.randn(4, 16, device="cuda")).sum().backward()
opt.step()
cache = {"k": torch.zeros(8, device="cuda"), 3: [torch.ones(2, device="cuda")]}

def inner():
    return sorted(h for r in torchlet.memory_holders() for h in r["holders"]
                  if not h.startswith(("a ", "saved by", "cuBLAS")))

def step():
    h = model[0].fc.weight * 2
    return inner()

for name in step():
    print(name)
"#,
        "1GiB",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The frame that asked (`inner`) has its locals by name; a caller's are `qualname.<locals>.`.
    let expected = "cache['k']\ncache[3][0]\n\
                    model[0].fc.weight\nmodel[0].fc.weight.grad\nmodel[0].scale\n\
                    model[1].fc.weight\nmodel[1].fc.weight.grad\nmodel[1].scale\n\
                    opt.param_groups[0]['params'][0]\nopt.param_groups[0]['params'][0].grad\n\
                    opt.param_groups[0]['params'][1]\nopt.param_groups[0]['params'][1].grad\n\
                    opt.state[model[0].fc.weight]['exp_avg']\n\
                    opt.state[model[0].fc.weight]['exp_avg_sq']\n\
                    opt.state[model[1].fc.weight]['exp_avg']\n\
                    opt.state[model[1].fc.weight]['exp_avg_sq']\n\
                    step.<locals>.h\n";
    assert_eq!(text(&out.stdout), expected);
}

#[test]
fn explain_free_takes_objects_and_paths_and_refuses_temporaries() {
    let out = run_py(
        r#"
import torch
import torchlet

w = torch.randn(256, 256, device="cuda", requires_grad=True)
cache = {"k": torch.zeros(256, 256, device="cuda")}
keep = [torch.ones(1024, device="cuda")]
view = keep[0][:512]
for report in (torchlet.explain_free("cache['k']"), torchlet.explain_free(w),
               torchlet.explain_free(keep[0])):
    print(report.path, [(way["allocated"], way["reserved"]) for way in report.ways])
try:
    torchlet.explain_free(w * 2)
except ValueError as e:
    print(e)
try:
    torchlet.explain_free("nothing")
except ValueError as e:
    print(e)
print(w.shape, len(keep), torch.cuda.memory_allocated())
"#,
        "1GiB",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "cache['k'] [(-262144, 0), (-262144, 0), (0, 0), (-262144, 0)]",
            // w.cpu() keeps w: it requires grad, so the copy's graph holds it.
            "w [(-262144, 0), (0, 0), (0, 0), (-262144, 0)]",
            // `view` shares keep[0]'s storage: nothing is freed.
            "keep[0] [(0, 0), (0, 0), (0, 0), (0, 0)]",
        ]
    );
    assert!(
        lines[3].contains("this Tensor is held by no variable (a temporary): assign it"),
        "{stdout}"
    );
    assert_eq!(lines[4], "name 'nothing' is not defined");
    // Every tensor alive before the refusals is alive after them, and nothing leaked.
    assert_eq!(lines[5], "torch.Size([256, 256]) 1 528384");
}

#[test]
fn asking_inside_a_function_keeps_its_locals_lifetimes() {
    let out = run_py(
        r#"
import torch
import torchlet
def f():
    a = torch.empty(1024, device="cuda")
    torchlet.memory_holders()
    torchlet.explain_free(a)
    del a
    return torch.cuda.memory_allocated()
print(f(), torch.cuda.memory_allocated())
"#,
        "1GiB",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0 0\n");
}

#[test]
fn an_out_of_memory_error_names_the_biggest_holders_in_the_failing_function() {
    let out = run_py(
        r#"
import torch
weights = [torch.randn(1024, 1024, device="cuda") for _ in range(2)]
def forward(x):
    acts = [x * w for w in weights]
    return torch.empty(10**9, device="cuda")
forward(torch.ones(1024, 1024, device="cuda"))
"#,
        "64MiB",
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("OutOfMemoryError: CUDA out of memory. Tried to allocate 3.73 GiB."),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "torchlet: the biggest holders: 2 blocks of `weights[…]` 8388608 B (8.00 MiB); \
             2 blocks of `acts[…]` 8388608 B (8.00 MiB); `x` 4194304 B (4.00 MiB)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("call torch.cuda.memory._record_memory_history() before"),
        "the advice is spelled in Python: {stderr}"
    );
}

/// The `(runs, Δallocated)` of source line `line` in a printed ledger table.
fn ledger_row(table: &str, line: usize) -> Option<(u64, i64)> {
    table.lines().find_map(|row| {
        let mut cells = row.split_whitespace();
        (cells.next()?.parse::<usize>().ok()? == line).then_some(())?;
        let runs = cells.next()?.parse().ok()?;
        let allocated = cells.next()?.parse().ok()?;
        Some((runs, allocated))
    })
}

#[test]
fn run_with_ledger_charges_each_python_line_and_snapshot_writes_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "ledger.py",
        "import torch\n\
         \n\
         def block(x):\n\
         \x20   h = x * 2\n\
         \x20   return h.relu()\n\
         \n\
         x = torch.randn(1024, 1024, device=\"cuda\")\n\
         for i in range(3):\n\
         \x20   y = block(x) + 1\n\
         \x20   del y\n",
    );
    let snapshot = dir.path().join("history.json");
    let out = common::torchlet()
        .args(["--simulate-cuda", "run"])
        .arg(&path)
        .arg("--ledger")
        .arg("--snapshot")
        .arg(&snapshot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    const MIB4: i64 = 4 << 20;
    // `h` of each call, its relu, then the caller's `+ 1`, which frees both on return.
    assert_eq!(ledger_row(&table, 4), Some((3, 3 * MIB4)), "{table}");
    assert_eq!(ledger_row(&table, 5), Some((3, 3 * MIB4)), "{table}");
    assert_eq!(ledger_row(&table, 7), Some((1, MIB4)), "{table}");
    assert_eq!(ledger_row(&table, 8), Some((4, 0)), "{table}");
    assert_eq!(ledger_row(&table, 9), Some((3, -3 * MIB4)), "{table}");
    assert_eq!(ledger_row(&table, 10), Some((3, -3 * MIB4)), "{table}");
    let history = std::fs::read_to_string(&snapshot).expect("the snapshot is written");
    assert!(history.contains("ledger.py"), "its frames name the program");
}
