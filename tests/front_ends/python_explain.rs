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

/// A tiny regression, set up as every leak program starts it.
const LEAK_SETUP: &str = "import torch\n\
    import torch.nn.functional as F\n\
    torch.manual_seed(0)\n\
    x = torch.randn(512, 2, device='cuda')\n\
    y = torch.randn(512, 1, device='cuda')\n\
    w = torch.randn(2, 64, device='cuda', requires_grad=True)\n\
    v = torch.randn(64, 1, device='cuda', requires_grad=True)\n";

/// What a leak program writes on standard error, after `LEAK_SETUP`.
fn leak_stderr(body: &str) -> String {
    let out = run_py(&format!("{LEAK_SETUP}{body}"), "1GiB");
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stderr)
}

#[test]
fn the_five_leak_pitfalls_are_named_in_python_with_their_advice() {
    let loss = "loss = F.mse_loss(x.matmul(w).relu().matmul(v), y)";
    let cases = [
        (
            format!("total = 0.0\nfor i in range(6):\n    {loss}\n    total = total + loss\n"),
            "line 9: ",
            "`total` holds each iteration's graph; keep a number instead (`loss.item()`)",
        ),
        (
            format!("losses = []\nfor i in range(6):\n    {loss}\n    losses.append(loss)\n"),
            "line 9: ",
            "`losses` keeps each iteration's graph in a new item",
        ),
        (
            "h = torch.zeros(512, 64, device='cuda')\n\
             u = torch.randn(64, 64, device='cuda', requires_grad=True)\n\
             for i in range(6):\n\
             \x20   h = torch.tanh(x.matmul(w) + h.matmul(u))\n\
             \x20   h.sum().backward(retain_graph=True)\n"
                .to_string(),
            "line 10: ",
            "`h` carries the graph of every earlier iteration; detach it once per iteration \
             (`h = h.detach()`)",
        ),
        (
            format!("cache = {{}}\nfor step in range(6):\n    {loss}\n    cache[f'step{{step}}'] = loss\n"),
            "line 9: ",
            "`cache` keeps each iteration's graph under a new key",
        ),
        (
            format!(
                "def report(loss):\n    return lambda: loss.item()\non_done = []\n\
                 for step in range(6):\n    {loss}\n    on_done.append(report(loss))\n"
            ),
            "line 11: ",
            "`on_done` keeps functions that captured each iteration's graph",
        ),
    ];
    for (body, line, advice) in cases {
        let stderr = leak_stderr(&body);
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("warning:"))
            .collect();
        assert_eq!(warnings.len(), 1, "{body}\n{stderr}");
        assert!(
            warnings[0].starts_with(&format!("warning: {line}")),
            "{stderr}"
        );
        assert!(warnings[0].contains(advice), "{body}\n{stderr}");
        // The same warning on every run.
        assert_eq!(leak_stderr(&body), stderr, "{body}");
    }
}

#[test]
fn building_data_and_layers_and_a_forward_that_backward_frees_are_no_leak() {
    let stderr = leak_stderr(
        "import torch.nn as nn\n\
         layers = [nn.Linear(64, 64).cuda() for _ in range(4)]\n\
         data = []\n\
         for i in range(5):\n\
         \x20   data.append(torch.randn(512, 64, device='cuda'))\n\
         total = 0.0\n\
         for batch in data:\n\
         \x20   h = batch\n\
         \x20   for layer in layers:\n\
         \x20       h = layer(h).relu()\n\
         \x20   loss = h.pow(2).mean()\n\
         \x20   loss.backward()\n\
         \x20   total += loss.item()\n",
    );
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn loops_nested_inside_a_forward_are_no_leak_until_the_step_is_over() {
    // A UNet's forward: levels around blocks, skips kept in a list, in a function the training
    // loop calls. The inner loops' growth is the step's, which backward releases.
    let stderr = leak_stderr(
        r#"import torch.nn as nn
levels = [[nn.Linear(64, 64).cuda() for _ in range(3)] for _ in range(4)]
def forward(h):
    skips = [h]
    for level in levels:
        for layer in level:
            h = layer(skips[-1]).relu()
            skips.append(h)
    for level in levels:
        for layer in level:
            h = layer(h + skips.pop()).relu()
    return h.pow(2).mean()
for step in range(3):
    loss = forward(torch.randn(512, 64, device='cuda'))
    loss.backward()
"#,
    );
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn a_loop_that_backward_runs_again_and_a_hook_that_asks_never_wait_on_the_graph() {
    // Backward holds the node it runs while it calls back; walking the graph then would wait on
    // it forever (Note [no walks in callbacks]). A hang here fails after the timeout.
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "callbacks.py",
        r#"
import torch
import torch.nn as nn
import torchlet
from torch.utils.checkpoint import checkpoint
layers = nn.ModuleList([nn.Linear(64, 64) for _ in range(4)]).cuda()
def body(h):
    for layer in layers:
        h = layer(h).relu()
    return h
x = torch.randn(32, 64, device="cuda", requires_grad=True)
for step in range(4):
    checkpoint(body, x, use_reentrant=False).sum().backward()
def hook(grad):
    try:
        torchlet.memory_holders()
    except RuntimeError as e:
        print("refused:", str(e).split(" (")[0])
    return grad
y = x * 2
y.register_hook(hook)
y.sum().backward()
print("done")
"#,
    );
    let binary = common::torchlet().get_program().to_owned();
    let out = std::process::Command::new("timeout")
        .arg("120")
        .arg(binary)
        .args(["--simulate-cuda", "run"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "refused: torchlet's explanations cannot be asked inside a hook or a function backward \
         runs again\ndone\n"
    );
}
