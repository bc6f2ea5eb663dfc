//! Fault injection: every allocation an op makes can fail. Each failure is an `OutOfMemoryError`;
//! every tensor alive before the op is alive and unchanged after it, `memory_allocated` is back
//! where it was, and the same op then runs.
use crate::common;
use common::outcome;

use torchlet_session::Session;

/// Inputs every op below may use, all on the GPU.
const SETUP: &str = r#"
let dev = #{device: "cuda"};
let a = randn(64, 96, dev);
let b = randn(64, 96, dev);
let m = randn(96, 32, dev);
let t = zeros(64, #{device: "cuda", dtype: "int64"});
let w = randn(96, 32, #{device: "cuda", requires_grad: true});
let h = randn(64, 96, #{device: "cuda", dtype: "float16"});
let big = randn(2048, 2048, dev);
let ix = tensor([3, 0, 3], #{device: "cuda", dtype: "int64"});
"#;

/// What the inputs look like: values, gradients and flags (compared before and after).
const STATE: &str = "[a.tolist(), b.tolist(), m.tolist(), t.tolist(), w.tolist(), w.grad == (), \
                     w.requires_grad, h.float().tolist(), big.sum().item()]";

/// One statement per op; the result stays bound so that the op's own memory is not freed.
const OPS: &[&str] = &[
    "let r = a + b;",
    "let r = a * 2;",
    "let r = a.exp();",
    "let r = a.pow(2);",
    "let r = a.relu();",
    "let r = a.clamp(-0.5, 0.5);",
    "let r = a.matmul(m);",
    "let r = h.matmul(h.t());",
    "let r = a.sum();",
    "let r = a.sum(1);",
    "let r = big.sum();",
    "let r = big.sum(0);",
    "let r = big.max(0);",
    "let r = a.mean(0);",
    "let r = a.max(1);",
    "let r = a.argmax();",
    "let r = a.softmax(1);",
    "let r = a.log_softmax(1);",
    "let r = mse_loss(a, b);",
    "let r = cross_entropy(a, t);",
    "let r = a.t().contiguous();",
    "let r = a.half();",
    "let r = h.float();",
    "let r = a.cpu().cuda();",
    "let r = a.clone();",
    "let r = [a * 1, b * 1];",
    "let r = a.matmul(w).relu().sum();",
    "a.matmul(w).relu().sum().backward(); let r = w.grad;",
    "no_grad { w.sub_(w * 0.1); } let r = 0;",
    "let r = cat([a, b], 1);",
    "let r = stack([a, b]);",
    "let r = a.repeat(2, 1);",
    "let r = where(a > 0, a, b);",
    "let r = a.masked_fill(a > 0, 0.5);",
    "let r = triu(a, 1);",
    "let r = index_select(a, 0, ix);",
    "let r = gather(a, 0, ix.unsqueeze(1));",
    "let r = embedding(ix, w);",
    "embedding(ix, w).sum().backward(); let r = w.grad;",
    "let r = w.split(40)[1].exp().sum();",
];

fn fresh() -> Session {
    let (mut s, _) = Session::captured("<fault>");
    outcome(&mut s, "manual_seed(0);").unwrap();
    outcome(&mut s, SETUP).unwrap();
    s
}

#[test]
fn every_allocation_of_every_op_can_fail_cleanly() {
    let (_guard, a) = common::gpu();
    let requests = || a.memory_stats()["allocation.all.allocated"];
    let mut checked = 0;
    for op in OPS {
        // Once for the process-wide cuBLAS workspaces, once to count the op's requests.
        outcome(&mut fresh(), op).unwrap_or_else(|e| panic!("{op}: {e:?}"));
        let mut s = fresh();
        let before = requests();
        outcome(&mut s, op).unwrap();
        let count = requests() - before;
        drop(s);
        println!("{op}: {count} requests");
        assert!(count > 0 || op.contains("sub_"), "{op} allocates");
        for k in 0..count {
            let mut s = fresh();
            let state = outcome(&mut s, STATE).unwrap();
            let allocated = a.memory_allocated();
            a.fail_after(Some(k as u64));
            let result = outcome(&mut s, op);
            a.fail_after(None);
            let (kind, _) = result.expect_err(&format!("{op}: request {k} of {count} fails"));
            assert_eq!(kind, "OutOfMemoryError", "{op}: request {k}");
            assert_eq!(a.memory_allocated(), allocated, "{op}: request {k} leaked");
            assert_eq!(outcome(&mut s, STATE).unwrap(), state, "{op}: request {k}");
            outcome(&mut s, op).unwrap_or_else(|e| panic!("{op} after the failure: {e:?}"));
            checked += 1;
        }
    }
    println!("{checked} injected failures over {} ops", OPS.len());
    assert!(checked > OPS.len(), "{checked} failures injected");
}

/// Parameters with gradients, and `dump`, which lists an optimizer state's entries.
const OPTIM_SETUP: &str = r#"
let p1 = randn(64, 96, #{device: "cuda", requires_grad: true});
let p2 = randn(96, 32, #{device: "cuda", requires_grad: true});
p1.grad = randn(64, 96, #{device: "cuda"});
p2.grad = randn(96, 32, #{device: "cuda"});
fn dump(state) {
    let out = [];
    for key in state.keys() {
        out.push(key);
        out.push(state[key].tolist());
    }
    out
}
"#;

/// Everything a step may change: parameters, gradients (nesterov writes into them), state.
const OPTIM_STATE: &str = "[p1.tolist(), p2.tolist(), p1.grad.tolist(), p2.grad.tolist(), \
                           dump(opt.state[p1]), dump(opt.state[p2])]";

/// The optimizers whose steps are made to fail, foreach (CUDA's default) and one tensor at a time.
const OPTIMIZERS: &[&str] = &[
    "optim::SGD([p1, p2], #{lr: 0.1, momentum: 0.9, weight_decay: 0.01})",
    "optim::SGD([p1, p2], #{lr: 0.1, momentum: 0.9, weight_decay: 0.01, foreach: false})",
    "optim::SGD([p1, p2], #{lr: 0.1, momentum: 0.9, nesterov: true})",
    "optim::AdamW([p1, p2])",
    "optim::AdamW([p1, p2], #{foreach: false})",
    "optim::Adam([p1, p2], #{weight_decay: 0.1, amsgrad: true})",
    "optim::Adam([p1, p2], #{maximize: true, foreach: false})",
];

/// A step that fails at any of its allocations changes nothing: parameters, gradients and state
/// are as they were (a failed first step leaves no state), and everything it allocated is freed.
/// PyTorch gives no such promise (its single-tensor step updates one parameter before allocating
/// for the next); torchlet allocates in PyTorch's order and puts back what a failed step changed.
#[test]
fn every_allocation_of_an_optimizer_step_can_fail_cleanly() {
    let (_guard, a) = common::gpu();
    let requests = || a.memory_stats()["allocation.all.allocated"];
    let mut checked = 0;
    for optimizer in OPTIMIZERS {
        for earlier_steps in [0, 1] {
            let setup = format!(
                "manual_seed(0);{OPTIM_SETUP}let opt = {optimizer};{}",
                "opt.step();".repeat(earlier_steps)
            );
            let fresh = || {
                let (mut s, _) = Session::captured("<fault>");
                outcome(&mut s, &setup).unwrap_or_else(|e| panic!("{setup}: {e:?}"));
                s
            };
            let what = format!("{optimizer} after {earlier_steps} step(s)");
            let mut s = fresh();
            let before = requests();
            outcome(&mut s, "opt.step();").unwrap();
            let count = requests() - before;
            drop(s);
            // Only a later nesterov step without weight decay allocates nothing.
            assert!(count > 0 || earlier_steps > 0, "{what} allocates");
            for k in 0..count {
                let mut s = fresh();
                let state = outcome(&mut s, OPTIM_STATE).unwrap();
                let allocated = a.memory_allocated();
                a.fail_after(Some(k as u64));
                let result = outcome(&mut s, "opt.step();");
                a.fail_after(None);
                let (kind, _) = result.expect_err(&format!("{what}: request {k} of {count} fails"));
                assert_eq!(kind, "OutOfMemoryError", "{what}: request {k}");
                assert_eq!(
                    a.memory_allocated(),
                    allocated,
                    "{what}: request {k} leaked"
                );
                assert_eq!(
                    outcome(&mut s, OPTIM_STATE).unwrap(),
                    state,
                    "{what}: request {k}"
                );
                outcome(&mut s, "opt.step();")
                    .unwrap_or_else(|e| panic!("{what} after the failure: {e:?}"));
                checked += 1;
            }
        }
    }
    println!(
        "{checked} injected failures over {} optimizers",
        OPTIMIZERS.len()
    );
    assert!(
        checked > 2 * OPTIMIZERS.len(),
        "{checked} failures injected"
    );
}
