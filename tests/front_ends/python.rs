//! `torchlet python` and `torchlet run FILE.py`: PyTorch's Python, its numbers, its errors.
use crate::common;
use common::{text, write_script};
use std::process::Output;

/// `torchlet --simulate-cuda python ARGS…` (the simulated GPU, so every machine runs these).
fn python(args: &[&str]) -> Output {
    common::torchlet()
        .arg("--simulate-cuda")
        .arg("python")
        .args(args)
        .output()
        .expect("the torchlet binary runs")
}

#[test]
fn the_articles_no_grad_snippet_runs_its_body_under_no_grad() {
    let code = "import torch\n\
                w = torch.randn(1000, 1000, device=\"cuda\", requires_grad=True)\n\
                with torch.no_grad():\n    h = (w * 2).sum()\n\
                print(torch.cuda.memory_allocated(), h.requires_grad)\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "4000768 False\n");
}

#[test]
fn a_py_file_runs_with_run_and_sees_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "args.py",
        "import sys\nimport torch\nx = torch.zeros(int(sys.argv[1]), device='cuda')\n\
         print(sys.argv[1:], torch.cuda.memory_allocated())\n",
    );
    let out = common::torchlet()
        .args([
            "--simulate-cuda",
            "run",
            path.to_str().unwrap(),
            "256",
            "--flag",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "['256', '--flag'] 1024\n");
}

#[test]
fn classes_keywords_comprehensions_and_fstrings_are_python() {
    let code = r#"
import torch
import torch.nn as nn
from dataclasses import dataclass

@dataclass
class Config:
    width: int = 64
    layers: int = 2

class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(config.width, config.width) for _ in range(config.layers)])

    def forward(self, x, *, scale=1.0):
        for block in self.blocks:
            x = block(x).relu()
        return x * scale

net = Net(Config(layers=3)).cuda()
out = net(torch.randn(8, 64, device="cuda"), scale=2.0)
names = [name for name, _ in net.named_parameters()]
values, indices = out.max(1)
print(f"{len(names)} {names[0]} {tuple(out.shape)} {values.shape[0]} {indices.dtype}")
"#;
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "6 blocks.0.weight (8, 64) 8 torch.int64\n"
    );
}

#[test]
fn out_of_memory_is_torch_out_of_memory_error_and_the_session_goes_on() {
    let code = "import torch\nkeep = torch.ones(10, device='cuda')\n\
                try:\n    torch.empty(1 << 40, device='cuda')\n\
                except torch.OutOfMemoryError as e:\n    print('caught', type(e).__name__, isinstance(e, RuntimeError))\n\
                print(keep.sum().item())\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "caught OutOfMemoryError True\n10.0\n");
}

#[test]
fn an_unsupported_construct_names_itself_and_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        "step.py",
        "import torch\nx = torch.arange(10).view(2, 5)\ny = x[:, x[0] > 2]\nprint('not reached')\n",
    );
    let out = python(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    let err = text(&out.stderr);
    assert!(err.contains("line 3"), "{err}");
    assert!(
        err.contains("NotImplementedError: torchlet: a boolean mask beside other indices"),
        "{err}"
    );
}

#[test]
fn a_syntax_error_gives_its_line_and_exit_status_one() {
    let out = python(&["-c", "import torch\nx = torch.zeros(3\nprint(x)\n"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("SyntaxError"), "{err}");
    assert!(err.contains("line 2") || err.contains("line 3"), "{err}");
}

#[test]
fn sys_exit_sets_the_exit_status() {
    let out = python(&["-c", "import sys\nsys.exit(3)\n"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn standard_input_that_is_not_a_terminal_runs_as_a_program() {
    use std::io::Write;
    let mut child = common::torchlet()
        .args(["--simulate-cuda", "python"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"import torch\nx = torch.randn(1000, 1000).cuda()\ndel x\nprint(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0 20971520\n");
}

#[test]
fn checkpoint_gives_the_gradients_of_the_plain_forward_in_both_variants() {
    // Dropout inside: the recomputation replays the forward's random state, so the gradients
    // are the plain forward's exactly.
    let code = r#"import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
block = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Dropout(0.5), nn.Linear(16, 8))
x = torch.randn(4, 8, requires_grad=True)
state = torch.get_rng_state()
block(x).pow(2).sum().backward()
plain = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
for reentrant in (False, True):
    block.zero_grad(); x.grad = None
    torch.set_rng_state(state)
    y = checkpoint(block, x, use_reentrant=reentrant)
    y.pow(2).sum().backward()
    again = [p.grad for p in block.parameters()] + [x.grad]
    print(reentrant, all((a - b).abs().max().item() < 1e-6 for a, b in zip(plain, again)), y.grad_fn.name())
"#;
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "False True AddmmBackward0\nTrue True CheckpointFunctionBackward\n"
    );
}

#[test]
fn autograd_grad_returns_backwards_gradients_and_makes_only_those_asked_for() {
    let code = r#"import torch
from torch import nn
net = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 4)).cuda()
x = torch.randn(32, 64, device="cuda", requires_grad=True)
net(x).pow(2).sum().backward()
want = [x.grad.clone(), net[2].weight.grad.clone()]
net.zero_grad(set_to_none=True); x.grad = None
before = torch.cuda.memory_allocated()
gx, gw = torch.autograd.grad(net(x).pow(2).sum(), [x, net[2].weight])
print(torch.equal(gx, want[0]), torch.equal(gw, want[1]), x.grad, net[0].weight.grad)
print(torch.cuda.memory_allocated() - before == (gx.numel() + gw.numel()) * 4)
(h,) = torch.autograd.grad((x * 2).sum(), x)
print(h[0, :2].tolist())
u = torch.ones(3, requires_grad=True)
for call in (lambda: torch.autograd.grad(x.sum(), [x, u]),
             lambda: torch.autograd.grad(x.sum(), torch.ones(2)),
             lambda: torch.autograd.grad(x.sum(), x, create_graph=True)):
    try:
        call()
    except (RuntimeError, NotImplementedError) as e:
        print(type(e).__name__, str(e).split(";")[0].split(". ")[0])
print(torch.autograd.grad(x.sum(), [x, u], allow_unused=True)[1], torch.autograd.grad(x.sum(), [x, u], materialize_grads=True)[1].tolist())
"#;
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "True True None None\nTrue\n[2.0, 2.0]\n\
         RuntimeError One of the differentiated Tensors appears to not have been used in the graph\n\
         RuntimeError One of the differentiated Tensors does not require grad\n\
         NotImplementedError torchlet: torch.autograd.grad(create_graph=True) (a graph of the gradients, for a second derivative) is not supported yet\n\
         None [0.0, 0.0, 0.0]\n"
    );
}

#[test]
fn backward_with_inputs_fills_only_their_grad() {
    let code = r#"import torch
from torch import nn
net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
x = torch.randn(4, 8, requires_grad=True)
net(x).pow(2).sum().backward()
want = net[2].weight.grad.clone()
net.zero_grad(set_to_none=True); x.grad = None
net(x).pow(2).sum().backward(inputs=[net[2].weight])
print(torch.equal(net[2].weight.grad, want), net[2].bias.grad, net[0].weight.grad, x.grad)
h = net[0](x)
try:
    h.sum().backward(inputs=[h])
except NotImplementedError as e:
    print(str(e).split(";")[0])
torch.autograd.backward([h.sum()], inputs=x)
print(x.grad.shape, net[0].weight.grad)
"#;
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "True None None None\n\
         torchlet: backward(inputs=…) with a tensor that is not a leaf is not supported yet\n\
         torch.Size([4, 8]) None\n"
    );
}

#[test]
fn an_error_in_the_recomputed_function_names_the_function_and_keeps_the_session() {
    let code = "import torch\nfrom torch.utils.checkpoint import checkpoint\n\
                calls = []\n\
                def f(x):\n    calls.append(1)\n    if len(calls) > 1:\n        raise ValueError('second run')\n    return x.exp()\n\
                x = torch.randn(3, requires_grad=True)\n\
                y = checkpoint(f, x, use_reentrant=False)\n\
                try:\n    y.sum().backward()\n\
                except RuntimeError as e:\n    print('ValueError: second run' in str(e), 'run again by backward' in str(e))\n\
                print(x.sum().item() == x.sum().item())\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "True True\nTrue\n");
}

#[test]
fn lr_schedulers_set_the_learning_rates_pytorch_sets_and_the_step_uses_them() {
    let program = common::repo().join("tests/data/record_lr_schedulers.py");
    let out = python(&[program.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pytorch =
        std::fs::read_to_string(common::repo().join("tests/data/lr_schedulers.torch.txt"))
            .expect("PyTorch's output, recorded");
    assert_eq!(
        text(&out.stdout),
        pytorch,
        "the same program under PyTorch 2.11"
    );
}

#[test]
fn multihead_attention_computes_attention_with_and_without_weights() {
    let code = r#"
import math
import torch
import torch.nn as nn
torch.manual_seed(0)
mha = nn.MultiheadAttention(16, 4, batch_first=True).cuda()
with torch.no_grad():
    mha.in_proj_bias.copy_(torch.randn(48, device="cuda"))
x = torch.randn(2, 5, 16, device="cuda")
out, w = mha(x, x, x)
# The definition, written out: per head softmax(q kᵀ / √d) v, then the output projection.
qkv = x @ mha.in_proj_weight.t() + mha.in_proj_bias
q, k, v = (t.view(2, 5, 4, 4).transpose(1, 2) for t in qkv.split(16, dim=-1))
p = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(4), dim=-1)
ref = (p @ v).transpose(1, 2).reshape(2, 5, 16) @ mha.out_proj.weight.t() + mha.out_proj.bias
print(tuple(out.shape), tuple(w.shape), (out - ref).abs().max().item() < 1e-5,
      (w - p.mean(dim=1)).abs().max().item() < 1e-6)
mask = torch.triu(torch.full((5, 5), float("-inf"), device="cuda"), diagonal=1)
causal, none = mha(x, x, x, attn_mask=mask, need_weights=False)
pc = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(4) + mask, dim=-1)
refc = (pc @ v).transpose(1, 2).reshape(2, 5, 16) @ mha.out_proj.weight.t() + mha.out_proj.bias
print(none, (causal - refc).abs().max().item() < 1e-5)
causal.sum().backward()
print(mha.in_proj_weight.grad.shape, mha.out_proj.weight.grad is not None)
"#;
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "(2, 5, 16) (2, 5, 5) True True\nNone True\ntorch.Size([48, 16]) True\n"
    );
}

#[test]
fn one_rank_of_a_fake_world_and_the_refusals_name_what_to_do() {
    let code = "import torch\nimport torch.distributed as dist\n\
                from torch.testing._internal.distributed.fake_pg import FakeStore\n\
                try:\n    dist.init_process_group('nccl', rank=0, world_size=8)\n\
                except NotImplementedError as e:\n    print('fake' in str(e))\n\
                dist.init_process_group('fake', rank=3, world_size=8, store=FakeStore())\n\
                print(dist.get_rank(), dist.get_world_size(), dist.is_initialized())\n\
                x = torch.ones(4, device='cuda')\n\
                dist.all_reduce(x)\n\
                print(x.sum().item(), torch.cuda.memory_allocated())\n\
                from torch.distributed.fsdp import fully_shard\n\
                try:\n    fully_shard(torch.nn.Linear(2, 2).cuda(), reshard_after_forward=3)\n\
                except ValueError as e:\n    print('divides the world size 8' in str(e))\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "True\n3 8 True\n4.0 512\nTrue\n");
}

#[test]
fn ddp_trains_like_its_module_and_refuses_the_options_it_lacks() {
    let code = "import torch\nimport torch.distributed as dist\nfrom torch import nn\n\
                dist.init_process_group('nccl', rank=0, world_size=1)\n\
                torch.manual_seed(0)\n\
                model = nn.Linear(4, 2).cuda()\n\
                ddp = nn.parallel.DistributedDataParallel(model)\n\
                x = torch.randn(3, 4, device='cuda')\n\
                print(torch.equal(ddp(x), model(x)))\n\
                try:\n    nn.parallel.DistributedDataParallel(model, static_graph=True)\n\
                except NotImplementedError as e:\n    print('static_graph' in str(e))\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "True\nTrue\n");
}

#[test]
fn ddp_rebuilds_its_buckets_after_the_first_synchronized_backward_only() {
    // Counted in allocations: the rebuild adds four (its int32 bucket indices and sizes, and the
    // two new buckets of 4198400 bytes each), and frees the first bucket before it makes them.
    let code = "import torch, torch.distributed as dist\nfrom torch import nn\n\
                dist.init_process_group('nccl', rank=0, world_size=1)\n\
                model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()\n\
                ddp = nn.parallel.DistributedDataParallel(model)\n\
                x = torch.randn(8, 1024, device='cuda')\n\
                made, grown = [], []\n\
                for sync in (False, False, True, True, True):\n\
                \x20   count, before = torch.cuda.memory_stats()['allocation.all.allocated'], torch.cuda.memory_allocated()\n\
                \x20   if sync:\n        ddp(x).sum().backward()\n\
                \x20   else:\n        with ddp.no_sync():\n            ddp(x).sum().backward()\n\
                \x20   made.append(torch.cuda.memory_stats()['allocation.all.allocated'] - count)\n\
                \x20   grown.append(torch.cuda.memory_allocated() - before)\n\
                print([m - made[-1] for m in made[1:]], grown[1:])\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "[0, 0, 4, 0] [0, 0, 0, 0]\n");
}

#[test]
fn fully_shard_keeps_this_ranks_padded_shard_and_trains_on_it() {
    // Linear(3, 10)'s weight has 10 rows: chunks of 3 over 4 ranks, so rank 3 holds 1 row in a
    // 3-row tensor (36 bytes, one 512-byte block) and the bias 1 of 3 elements (another block).
    let code = "import torch, torch.distributed as dist\nfrom torch import nn\n\
                from torch.distributed.fsdp import fully_shard, FSDPModule\n\
                from torch.testing._internal.distributed.fake_pg import FakeStore\n\
                dist.init_process_group('fake', rank=3, world_size=4, store=FakeStore())\n\
                model = fully_shard(nn.Linear(3, 10).cuda())\n\
                print(isinstance(model, FSDPModule), type(model).__name__, torch.cuda.memory_allocated())\n\
                print([tuple(p.shape) for p in model.parameters()])\n\
                opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
                model(torch.ones(2, 3, device='cuda')).sum().backward()\n\
                print([tuple(p.grad.shape) for p in model.parameters()], [tuple(p.shape) for p in model.parameters()])\n\
                opt.step()\n\
                from torch.distributed._composable.fsdp import fully_shard as older\n\
                from torch.distributed.fsdp import FullyShardedDataParallel\n\
                try:\n    FullyShardedDataParallel(nn.Linear(2, 2))\n\
                except NotImplementedError as e:\n    print(older is fully_shard, 'fully_shard(model)' in str(e))\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "True FSDPLinear 1024\n[(1, 3), (1,)]\n[(1, 3), (1,)] [(1, 3), (1,)]\nTrue True\n"
    );
}

/// `torch.save` takes no device memory and `torch.load` makes each saved storage once on its
/// device (views share it), with the values saved; the optimizer's state_dict is PyTorch's packed
/// form over its own tensors; a file torchlet did not write is refused by name.
#[test]
fn save_and_load_round_trip_with_pytorchs_device_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt.pt");
    let code = format!(
        "import torch\nfrom torch import nn\n\
         model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()\n\
         opt = torch.optim.AdamW(model.parameters())\n\
         model(torch.randn(8, 1024, device='cuda')).sum().backward()\n\
         opt.step()\n\
         sd = opt.state_dict()\n\
         print(list(sd['state'][0]), sd['param_groups'][0]['params'])\n\
         before = torch.cuda.memory_allocated()\n\
         t = torch.arange(12.0, device='cuda').view(3, 4)\n\
         torch.save({{'model': model.state_dict(), 'optimizer': sd, 'views': [t, t.t()]}}, {path:?})\n\
         print(torch.cuda.memory_allocated() - before)\n\
         ck = torch.load({path:?})\n\
         print(torch.cuda.memory_allocated() - before)\n\
         a, b = ck['views']\n\
         print(torch.equal(ck['model']['0.weight'], model[0].weight.detach()), torch.equal(b, t.t()),\n\
         \x20     a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())\n\
         print(torch.load({path:?}, map_location='cpu')['model']['2.bias'].device)\n\
         open({path:?}, 'w').write('not a checkpoint')\n\
         try:\n\
         \x20   torch.load({path:?})\n\
         except RuntimeError as e:\n\
         \x20   print(str(e).split(';')[0])\n",
        path = ckpt.to_str().unwrap()
    );
    let out = python(&["-c", &code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Loaded: the model's four storages and AdamW's two moments of each (its steps live on the
    // host), 4239872 bytes a set once rounded to blocks, and t's 48 bytes in one 512-byte block.
    assert_eq!(
        text(&out.stdout),
        "['step', 'exp_avg', 'exp_avg_sq'] [0, 1, 2, 3]\n512\n12720640\nTrue True True\ncpu\n\
         torch.load: this file was not written by torchlet's torch.save\n"
    );
}

/// `retain_grad` keeps a non-leaf's gradient as PyTorch does: after the tensor's own hooks (even
/// one registered later), added up over backwards, and without keeping the tensor alive; and
/// `softmax(dtype=)` gives that dtype forward and the input's dtype backward.
#[test]
fn retain_grad_and_softmax_dtype_behave_as_pytorchs() {
    let code = "import torch\n\
                x = torch.ones(2, 3, requires_grad=True)\n\
                y = x * 2\n\
                y.retain_grad()\n\
                y.register_hook(lambda g: g * 10)\n\
                (y * y).sum().backward(retain_graph=True)\n\
                print(y.retains_grad, x.retains_grad, y.grad.tolist()[0], x.grad.tolist()[0])\n\
                (y * y).sum().backward()\n\
                print(y.grad.tolist()[0])\n\
                w = torch.ones(1024, 1024, device='cuda', requires_grad=True)\n\
                before = torch.cuda.memory_allocated()\n\
                a = w * 3\n\
                a.retain_grad()\n\
                del a\n\
                print(torch.cuda.memory_allocated() - before)\n\
                h = torch.randn(4, 8, dtype=torch.float16, requires_grad=True)\n\
                p = torch.softmax(h, -1, dtype=torch.float32)\n\
                p.sum().backward()\n\
                print(p.dtype, h.grad.dtype, round(p.sum().item(), 3))\n\
                try:\n\
                \x20   torch.ones(2).retain_grad()\n\
                except RuntimeError as e:\n\
                \x20   print(e)\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // d(y²)/dy = 2y = 4, times 10 from y's hook: y keeps 40, x gets 80; a second backward adds.
    assert_eq!(
        text(&out.stdout),
        "True False [40.0, 40.0, 40.0] [80.0, 80.0, 80.0]\n[80.0, 80.0, 80.0]\n0\n\
         torch.float32 torch.float16 4.0\n\
         can't retain_grad on Tensor that has requires_grad=False\n"
    );
}

#[test]
fn hooks_autograd_functions_and_final_callbacks_run_where_pytorch_runs_them() {
    let code = "import torch\nfrom torch import nn\n\
                x = torch.ones(3, requires_grad=True)\n\
                y = x * 2\n\
                handle = y.register_hook(lambda g: g * 10)\n\
                x.register_hook(lambda g: print('leaf hook', g.tolist()))\n\
                class Square(torch.autograd.Function):\n\
                \x20   @staticmethod\n\
                \x20   def forward(ctx, a):\n\
                \x20       ctx.save_for_backward(a)\n\
                \x20       return a * a\n\
                \x20   @staticmethod\n\
                \x20   def backward(ctx, g):\n\
                \x20       (a,) = ctx.saved_tensors\n\
                \x20       torch.autograd.Variable._execution_engine.queue_callback(lambda: print('callback'))\n\
                \x20       return 2 * a * g\n\
                z = Square.apply(y)\n\
                print(z.grad_fn.name(), z.requires_grad)\n\
                z.sum().backward()\n\
                print(x.grad.tolist())\n\
                m = nn.Linear(2, 2)\n\
                m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))\n\
                h = m.register_forward_hook(lambda mod, args, out: out.sum())\n\
                print(m(torch.ones(1, 2)).item() == m.bias.sum().item())\n\
                h.remove()\n\
                print(tuple(m(torch.ones(1, 2)).shape))\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // z = y², so dz/dy = 2y = 4, times 10 from y's hook, times 2 into x.
    assert_eq!(
        text(&out.stdout),
        "SquareBackward True\nleaf hook [80.0, 80.0, 80.0]\ncallback\n[80.0, 80.0, 80.0]\nTrue\n(1, 2)\n"
    );
}

#[test]
fn ddp_gradients_as_bucket_views_alias_the_bucket_and_keep_their_values() {
    let code = "import torch, torch.distributed as dist\nfrom torch import nn\n\
                dist.init_process_group('nccl', rank=0, world_size=1)\n\
                torch.manual_seed(0)\n\
                model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 4)).cuda()\n\
                x = torch.randn(8, 64, device='cuda')\n\
                model(x).sum().backward()\n\
                expected = [p.grad.clone() for p in model.parameters()]\n\
                model.zero_grad()\n\
                ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)\n\
                for set_to_none in (True, False):\n\
                \x20   ddp(x).sum().backward()\n\
                \x20   bucket = ddp._buckets[0].untyped_storage().data_ptr()\n\
                \x20   print([p.grad.untyped_storage().data_ptr() == bucket for p in model.parameters()],\n\
                \x20         all(torch.equal(p.grad, e) for p, e in zip(model.parameters(), expected)))\n\
                \x20   model.zero_grad(set_to_none=set_to_none)\n\
                unused = nn.parallel.DistributedDataParallel(nn.Linear(4, 4).cuda(), find_unused_parameters=True)\n\
                print(unused._used_map.dtype, tuple(unused._used_map.shape))\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[True, True, True, True] True\n[True, True, True, True] True\ntorch.int32 (2,)\n"
    );
}

/// A model built on the meta device takes no memory; `Module.to` refuses it with PyTorch's advice,
/// `to_empty` makes it on the GPU, and FSDP2 refuses to train shards still on meta.
#[test]
fn a_model_built_on_meta_is_made_on_the_gpu_by_to_empty() {
    let code = "import torch\nfrom torch import nn\n\
         import torch.distributed as dist\n\
         from torch.distributed.fsdp import fully_shard\n\
         from torch.testing._internal.distributed.fake_pg import FakeStore\n\
         with torch.device('meta'):\n\
         \x20   model = nn.Sequential(nn.Linear(1000, 1000), nn.LayerNorm(1000))\n\
         print(model[0].bias[:2], torch.cuda.memory_allocated())\n\
         try:\n\
         \x20   model.cuda()\n\
         except NotImplementedError as e:\n\
         \x20   print(e)\n\
         try:\n\
         \x20   model.to('cuda')\n\
         except NotImplementedError as e:\n\
         \x20   print(e)\n\
         model.to_empty(device='cuda')\n\
         print(model[0].weight.device, torch.cuda.memory_allocated())\n\
         dist.init_process_group('fake', rank=0, world_size=4, store=FakeStore())\n\
         with torch.device('meta'):\n\
         \x20   sharded = fully_shard(nn.Linear(1000, 1000))\n\
         try:\n\
         \x20   sharded(torch.randn(2, 1000, device='cuda'))\n\
         except RuntimeError as e:\n\
         \x20   print(str(e).splitlines()[0])\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // 1000x1000 and three 1000-float tensors, each in its own block: 4000256 + 3 x 4096 bytes.
    assert_eq!(
        text(&out.stdout),
        "tensor(..., device='meta', size=(2,), grad_fn=<SliceBackward0>) 0\n\
         Cannot copy out of meta tensor; no data!\n\
         Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() instead \
         of torch.nn.Module.to() when moving module from meta to a different device.\n\
         cuda:0 4012544\n\
         FSDP parameters should be materialized from meta device before training, but the \
         following were still on meta device: ['weight', 'bias']\n"
    );
}

/// The elementwise ops of model code beyond the basics: activations, rounding, the tests of
/// `isnan`/`isinf`/`isfinite`, bool logic and slices with a step, with PyTorch's values and its
/// refusals (a negative step); integer bitwise ops are refused by name.
#[test]
fn model_code_elementwise_ops_and_strided_slices_give_pytorchs_values() {
    let code = "import torch\nimport torch.nn.functional as F\n\
         x = torch.tensor([-2.0, -0.5, 0.0, 1.5])\n\
         r = lambda t: [round(v, 4) for v in t.tolist()]\n\
         print(r(F.leaky_relu(x, 0.25)), r(F.elu(x)), r(F.softplus(x)), r(F.mish(x)), r(F.hardswish(x)))\n\
         print(x.round().tolist(), torch.floor(x).tolist(), x.ceil().tolist(), x.trunc().tolist())\n\
         m = x > 0\n\
         print((m | ~m).all().item(), (m & ~m).any().item(), (m ^ m).any().item(),\n\
         \x20     (m & False).any().item(), (m | True).all().item(), torch.equal(m ^ True, ~m))\n\
         y = torch.tensor([1.0, float('nan'), float('inf')])\n\
         print(y.isnan().tolist(), y.isinf().tolist(), torch.isfinite(y).tolist())\n\
         h = torch.arange(12.0).view(3, 4)\n\
         print(h[:, ::2].tolist(), h[::2, 1::2].tolist(), h[..., 1::4].shape)\n\
         g = torch.zeros(3, 4)\n\
         g[:, ::2] = 1.0\n\
         print(g.sum().item())\n\
         try:\n\
         \x20   h[::-1]\n\
         except ValueError as e:\n\
         \x20   print(e)\n\
         try:\n\
         \x20   torch.tensor([1, 2]) & torch.tensor([3, 4])\n\
         except NotImplementedError as e:\n\
         \x20   print(e)\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "[-0.5, -0.125, 0.0, 1.5] [-0.8647, -0.3935, 0.0, 1.5] [0.1269, 0.4741, 0.6931, 1.7014] \
         [-0.2525, -0.2207, 0.0, 1.4034] [-0.3333, -0.2083, 0.0, 1.125]\n\
         [-2.0, -0.0, 0.0, 2.0] [-2.0, -1.0, 0.0, 1.0] [-2.0, -0.0, 0.0, 2.0] [-2.0, -0.0, 0.0, 1.0]\n\
         True False False False True True\n\
         [False, True, False] [False, False, True] [True, False, False]\n\
         [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]] [[1.0, 3.0], [9.0, 11.0]] torch.Size([3, 1])\n\
         6.0\n\
         step must be greater than zero\n\
         torchlet: & runs on bool tensors only yet (no integer bitwise ops)\n"
    );
}

/// `torch.einsum` is PyTorch's algorithm: its values, and the allocations PyTorch 2.11 made for
/// these two equations on an H100 (`tests/parity/py_sampling.py`, events 126 to 130:
/// each output once, the first product's cuBLAS workspace after it, no copies); a diagonal is
/// refused by name.
#[test]
fn einsum_contracts_as_pytorchs_and_allocates_what_it_does() {
    let code = "import torch\n\
         a = torch.randn(3, 4, dtype=torch.float64)\n\
         q = torch.randn(2, 4, 6, 8, dtype=torch.float64)\n\
         k = torch.randn(2, 4, 7, 8, dtype=torch.float64)\n\
         s = torch.einsum('bhqd,bhkd->bhqk', q, k)\n\
         print(tuple(s.shape), (s - q @ k.transpose(-1, -2)).abs().max().item() < 1e-12)\n\
         print((torch.einsum('ij,ij->i', a, a) - (a * a).sum(1)).abs().max().item() < 1e-12,\n\
         \x20     torch.einsum('ij->ji', a).shape, abs(torch.einsum('ij', a).sum().item() - a.sum().item()) < 1e-12)\n\
         try:\n\
         \x20   torch.einsum('ii->i', a[:, :3])\n\
         except NotImplementedError as e:\n\
         \x20   print(e)\n\
         qc = torch.randn(2, 4, 128, 64, device='cuda')\n\
         kc = torch.randn(2, 4, 128, 64, device='cuda')\n\
         torch.cuda.memory._record_memory_history()\n\
         scores = torch.einsum('bhqd,bhkd->bhqk', qc, kc)\n\
         w = torch.randn(64, 32, device='cuda')\n\
         proj = torch.einsum('bhqd,de->bhqe', qc, w)\n\
         trace = torch.cuda.memory._snapshot()['device_traces'][0]\n\
         print([(e['action'], e['size']) for e in trace if e['action'] != 'free_requested'])\n";
    let out = python(&["-c", code]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "(2, 4, 6, 7) True\n\
         True torch.Size([4, 3]) True\n\
         torchlet: einsum with a label repeated in one operand ('ii': a diagonal) is not supported yet\n\
         [('alloc', 524288), ('segment_alloc', 33554432), ('alloc', 33554432), ('alloc', 8192), ('alloc', 131072)]\n"
    );
}
