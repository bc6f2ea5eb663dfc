//! Everything `help()` lists, called from script text with its result checked; and the structure of
//! `cuda::memory_stats()` and `cuda::memory_snapshot()` against PyTorch's.
//!
//! To cover a new function, add one row to [`ROWS`]: its name as help's tables spell it (`zeros`,
//! `del`, `t.sum` for a method, `t.shape` for a property, `cuda::memory_reserved`), a snippet whose
//! last expression is what to check, and the text that value echoes as. The snippet runs in a fresh
//! session on the CPU and on cuda:0 (simulated, or real with TORCHLET_TEST_DEVICE=cuda) after
//! [`PRELUDE`], with `{dev}` in the expected text standing for the device (`cpu` or `cuda:0`) and
//! `{X}`, `{TWO_X}`, `{SEGMENT}`, `{X_REQUESTED}` for the article's figures (tests/common).
//! What the snippet prints, shows or clears is appended to its value as ` | stdout: "…"`,
//! ` | stderr: "…"`, ` | display: "…"` and ` | clear_output`. A name help lists without a row, a
//! row for a name help does not list, or a row whose snippet does not call its name fails
//! `every_help_entry_has_exactly_one_row_that_calls_it`, so nothing new goes untested.
//!
//! `cuda::memory_stats()` is compared key by key with what PyTorch recorded on the H200 for the same
//! program (tests/data/torch_traces/article_del_empty_cache.json): the same 122 keys, every value
//! an int, every value equal (on top of what the process held before). `cuda::memory_snapshot()` is
//! checked field by field against the fields of PyTorch's `torch.cuda.memory._snapshot()`, less the
//! `frames` torchlet does not record, with the blocks and trace of the article's x and temp.
use crate::common;
use common::device_test;

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use common::figures::{SEGMENT, TAIL_AFTER_TWO_X, TWO_X, X, X_REQUESTED};
use rhai::{Dynamic, Map};
use torchlet_rhai::surface::help::{self, Kind};
use torchlet_session::{CapturedOutput, OutputEvent, Session, SessionOptions};

/// Bound before every row: `dev` (the row's device as options), `gpu` (cuda:0 as options),
/// `devname`, three tensors on `dev`, and `vals`/`desc` to print a tensor's values rounded to four
/// decimals (so the real GPU's last bits do not matter).
const PRELUDE: &str = r#"
fn r4(v) { if type_of(v) == "f64" { (v * 10000.0).round() / 10000.0 } else { v } }
fn vals(t) { t.flatten().tolist().map(|v| r4(v)) }
fn desc(t) { [t.shape, t.dtype, vals(t)] }
let dev = #{device: devname};
let gpu = #{device: "cuda"};
let m = tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dev);
let v = tensor([-1.5, 0.0, 2.0], dev);
let i = tensor([3, 1, 2], dev);
"#;

/// (name as help spells it, snippet, expected text).
const ROWS: &[(&str, &str, &str)] = &[
    // ---- functions
    (
        "tensor",
        "[desc(tensor([[1, 2], [3, 4]], dev)), desc(tensor([1.5, -2.0])), tensor(7, dev).shape]",
        r#"[[[2, 2], "int64", [1, 2, 3, 4]], [[2], "float32", [1.5, -2.0]], []]"#,
    ),
    (
        "zeros",
        "[desc(zeros([2, 3], dev)), zeros(2, 1).shape, zeros([2], #{device: devname, dtype: \"int64\"}).dtype]",
        r#"[[[2, 3], "float32", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], [2, 1], "int64"]"#,
    ),
    (
        "ones",
        "[desc(ones([2, 2], dev)), ones(3).shape]",
        r#"[[[2, 2], "float32", [1.0, 1.0, 1.0, 1.0]], [3]]"#,
    ),
    (
        "empty",
        "let t = empty([3, 4], dev); [t.shape, t.dtype, t.device, empty(2, 5).numel()]",
        r#"[[3, 4], "float32", "{dev}", 10]"#,
    ),
    (
        "rand",
        "let t = rand([10000], dev); [t.shape, t.min().item() >= 0.0, t.max().item() < 1.0, (t.mean().item() - 0.5).abs() < 0.02, rand(2, 3).shape]",
        "[[10000], true, true, true, [2, 3]]",
    ),
    (
        "randn",
        "let t = randn([10000], dev); [t.shape, t.mean().item().abs() < 0.05, ((t * t).mean().item() - 1.0).abs() < 0.05, randn(4, 1).shape]",
        "[[10000], true, true, [4, 1]]",
    ),
    (
        "full",
        "[desc(full([2], 7.5, dev)), desc(full([1, 2], 3))]",
        r#"[[[2], "float32", [7.5, 7.5]], [[1, 2], "int64", [3, 3]]]"#,
    ),
    (
        "arange",
        "[desc(arange(4)), desc(arange(1, 7, 2, dev)), vals(arange(0.0, 1.0, 0.25))]",
        r#"[[[4], "int64", [0, 1, 2, 3]], [[3], "int64", [1, 3, 5]], [0.0, 0.25, 0.5, 0.75]]"#,
    ),
    (
        "linspace",
        "[desc(linspace(0.0, 1.0, 5, dev)), vals(linspace(2.0, 3.0, 1, dev)), linspace(0.0, 1.0, 0, dev).shape]",
        r#"[[[5], "float32", [0.0, 0.25, 0.5, 0.75, 1.0]], [2.0], [0]]"#,
    ),
    (
        "eye",
        "[desc(eye(2, 3, dev)), vals(eye(2))]",
        r#"[[[2, 3], "float32", [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]], [1.0, 0.0, 0.0, 1.0]]"#,
    ),
    (
        "zeros_like",
        "let t = zeros_like(i); [desc(t), t.device]",
        r#"[[[3], "int64", [0, 0, 0]], "{dev}"]"#,
    ),
    (
        "ones_like",
        "let t = ones_like(m); [desc(t), t.device]",
        r#"[[[2, 3], "float32", [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]], "{dev}"]"#,
    ),
    (
        "empty_like",
        "let t = empty_like(m.half()); [t.shape, t.dtype, t.device]",
        r#"[[2, 3], "float16", "{dev}"]"#,
    ),
    (
        "randn_like",
        "let t = randn_like(zeros([100, 100], dev)); [t.shape, t.dtype, t.device, ((t * t).mean().item() - 1.0).abs() < 0.1]",
        r#"[[100, 100], "float32", "{dev}", true]"#,
    ),
    (
        "manual_seed",
        "manual_seed(7); let a = randn([5], dev).tolist(); manual_seed(7); let b = randn([5], dev).tolist(); manual_seed(8); let c = randn([5], dev).tolist(); [a == b, a == c]",
        "[true, false]",
    ),
    (
        "mse_loss",
        "let a = tensor([1.0, 2.0, 3.0], dev); let b = tensor([1.0, 4.0, 0.0], dev); \
         [desc(mse_loss(a, b)), vals(mse_loss(a, b, #{reduction: \"none\"}))]",
        r#"[[[], "float32", [4.3333]], [0.0, 4.0, 9.0]]"#,
    ),
    (
        "cross_entropy",
        "let x = tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dev); let t = tensor([2, 0], dev); \
         [desc(cross_entropy(x, t)), r4(cross_entropy(x, t, #{ignore_index: 0}).item())]",
        // (log(e + e² + e³) - 3 + log 3) / 2 = (0.407606 + 1.098612) / 2; the first row alone
        r#"[[[], "float32", [0.7531]], 0.4076]"#,
    ),
    (
        "matmul",
        "desc(matmul(tensor([[1.0, 2.0], [3.0, 4.0]], dev), tensor([[5.0], [6.0]], dev)))",
        r#"[[2, 1], "float32", [17.0, 39.0]]"#,
    ),
    (
        "is_grad_enabled",
        "let outside = is_grad_enabled(); let inside = true; no_grad { inside = is_grad_enabled(); }; [outside, inside]",
        "[true, false]",
    ),
    (
        "empty_cache",
        "empty_cache(); let r0 = memory_reserved(); let x = empty([1000, 1000], gpu); let r1 = memory_reserved(); del x; let r2 = memory_reserved(); empty_cache(); [r1 - r0, r2 - r0, memory_reserved() - r0]",
        "[{SEGMENT}, {SEGMENT}, 0]",
    ),
    (
        "memory_allocated",
        "let a0 = memory_allocated(); let x = empty([1000, 1000], gpu); [memory_allocated() - a0, memory_allocated(0) - a0, memory_allocated(\"cuda:0\") - a0]",
        "[{X}, {X}, {X}]",
    ),
    (
        "max_memory_allocated",
        "cuda::reset_peak_memory_stats(); let a0 = memory_allocated(); let x = empty([1000, 1000], gpu); let y = empty([1000, 1000], gpu); del y; [max_memory_allocated() - a0, memory_allocated() - a0]",
        "[{TWO_X}, {X}]",
    ),
    (
        "memory_reserved",
        "empty_cache(); let r0 = memory_reserved(); let x = empty([1000, 1000], gpu); [memory_reserved() - r0, memory_reserved(0) - r0]",
        "[{SEGMENT}, {SEGMENT}]",
    ),
    (
        "max_memory_reserved",
        "empty_cache(); cuda::reset_peak_memory_stats(); let r0 = memory_reserved(); let x = empty([1000, 1000], gpu); del x; empty_cache(); [max_memory_reserved() - r0, memory_reserved() - r0]",
        "[{SEGMENT}, 0]",
    ),
    (
        "memory_summary",
        "let s = memory_summary(); [s.contains(\"memory summary, device ID 0\"), s.contains(\"Allocated memory\"), memory_summary(#{abbreviated: true}).len() < s.len()]",
        "[true, true, true]",
    ),
    (
        "print",
        "print(\"hi\"); print(v.shape)",
        r#"() | stdout: "hi\n" | stdout: "[3]\n""#,
    ),
    ("eprint", "eprint(\"oops\")", r#"() | stderr: "oops\n""#),
    (
        "display",
        "display(tensor([1, 2]))",
        r#"() | display: "tensor([1, 2])""#,
    ),
    (
        "plot_memory",
        "cuda::record_memory_history(); let x = empty([1000, 1000], gpu); plot_memory(); cuda::record_memory_history(()); let k = \"\"; try { plot_memory() } catch (e) { k = e.kind; } k",
        r#"RuntimeError | picture: svg=true"#,
    ),
    (
        "clear_output",
        "print(\"a\"); clear_output(); clear_output(true)",
        r#"() | stdout: "a\n" | clear_output | clear_output"#,
    ),
    (
        "input",
        "let name = input(\"name? \"); name + \"!\"",
        "Ada!",
    ),
    (
        "help",
        "help(\"zeros\"); help(i)",
        r#"() | stdout: "zeros(d0, d1, …) or zeros(shape_array[, opts]) — a tensor filled with 0\n" | stdout: "Tensor of shape [3], int64, on {dev}, 24 bytes, requires_grad=false; help(\"Tensor\") lists its methods\n""#,
    ),
    // ---- statements
    (
        "del",
        "let a0 = memory_allocated(); let x = empty([1000, 1000], gpu); let held = memory_allocated() - a0; del x; let gone = \"\"; try { x } catch (e) { gone = e.message; } [held, memory_allocated() - a0, gone]",
        r#"[{X}, 0, "Variable not found: x"]"#,
    ),
    (
        "no_grad",
        "let w = v.clone().requires_grad_(); let y = (); no_grad { y = w * 2; }; [y.requires_grad, vals(y), (w * 2).requires_grad]",
        "[false, [-3.0, 0.0, 4.0], true]",
    ),
    (
        "enable_grad",
        "let w = v.clone().requires_grad_(); let y = (); no_grad { enable_grad { y = w * 2; } }; [y.requires_grad, y.grad_fn != ()]",
        "[true, true]",
    ),
    (
        "inference_mode",
        "let w = v.clone().requires_grad_(); let y = (); let inside = true; inference_mode { inside = is_grad_enabled(); y = w * 2; }; [inside, y.requires_grad, vals(y), is_grad_enabled()]",
        "[false, false, [-3.0, 0.0, 4.0], true]",
    ),
    (
        "autocast",
        r#"let kind = if devname.starts_with("cuda") { "cuda" } else { "cpu" }; let a = (); autocast #{dtype: "bfloat16", device_type: kind} { a = m.matmul(m.t()); }; [a.dtype, m.matmul(m.t()).dtype]"#,
        r#"["bfloat16", "float32"]"#,
    ),
    (
        "checkpoint",
        r#"let w = m.t().clone().requires_grad_(); let y = checkpoint(|a, b| matmul(a, b).relu(), m, w); y.sum().backward(); [desc(y), desc(w.grad)]"#,
        r#"[[[2, 2], "float32", [14.0, 32.0, 32.0, 77.0]], [[3, 2], "float32", [5.0, 5.0, 7.0, 7.0, 9.0, 9.0]]]"#,
    ),
    (
        "arg",
        r#"[arg("batch", 8), arg("name", "gpt2")]"#,
        r#"[8, "gpt2"]"#,
    ),
    (
        "fit_value",
        r#"[fit_value(m.sum(), 0.5), fit_value(3, 4)]"#,
        r#"[21.0, 3]"#,
    ),
    // ---- tensor methods
    (
        "t.cuda",
        "let t = v.cuda(); [t.device, vals(t), v.cuda(0).device]",
        r#"["cuda:0", [-1.5, 0.0, 2.0], "cuda:0"]"#,
    ),
    (
        "t.cpu",
        "let t = m.cuda().cpu(); [t.device, vals(t)]",
        r#"["cpu", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]"#,
    ),
    (
        "t.to",
        "[desc(v.to(\"float16\")), v.to(\"cuda:0\").device, v.to(#{device: \"cpu\", dtype: \"float64\"}).dtype, desc(v.to(\"int64\"))]",
        r#"[[[3], "float16", [-1.5, 0.0, 2.0]], "cuda:0", "float64", [[3], "int64", [-1, 0, 2]]]"#,
    ),
    (
        "t.half",
        "[desc(v.half()), v.half().device]",
        r#"[[[3], "float16", [-1.5, 0.0, 2.0]], "{dev}"]"#,
    ),
    (
        "t.float",
        "desc(i.float())",
        r#"[[3], "float32", [3.0, 1.0, 2.0]]"#,
    ),
    (
        "t.double",
        "desc(v.double())",
        r#"[[3], "float64", [-1.5, 0.0, 2.0]]"#,
    ),
    (
        "t.bfloat16",
        "desc(v.bfloat16())",
        r#"[[3], "bfloat16", [-1.5, 0.0, 2.0]]"#,
    ),
    (
        "t.long",
        "desc(tensor([2.7, -1.2], dev).long())",
        r#"[[2], "int64", [2, -1]]"#,
    ),
    (
        "t.size",
        "[m.size(), m.size(1), m.size(-2)]",
        "[[2, 3], 3, 2]",
    ),
    (
        "t.dim",
        "[m.dim(), v.dim(), m.sum().dim()]",
        "[2, 1, 0]",
    ),
    (
        "t.numel",
        "[m.numel(), m.sum().numel(), zeros([0, 4]).numel()]",
        "[6, 1, 0]",
    ),
    (
        "t.element_size",
        "[m.element_size(), m.half().element_size(), i.element_size(), m.double().element_size()]",
        "[4, 2, 8, 8]",
    ),
    (
        "t.stride",
        "[m.stride(), m.t().stride(), m.stride(-1), zeros([2, 3, 4]).permute([2, 0, 1]).stride(), tensor(1.0).stride()]",
        "[[3, 1], [1, 3], 1, [1, 12, 4], []]",
    ),
    (
        "t.is_contiguous",
        "[m.is_contiguous(), m.t().is_contiguous(), m.t().contiguous().is_contiguous(), m.narrow(1, 1, 2).is_contiguous(), m.narrow(0, 1, 1).is_contiguous()]",
        "[true, false, true, false, true]",
    ),
    (
        "t.storage_offset",
        "[m.storage_offset(), m.narrow(1, 1, 2).storage_offset(), m[1].storage_offset(), m[1].clone().storage_offset()]",
        "[0, 1, 3, 0]",
    ),
    (
        "t.data_ptr",
        "[m.data_ptr() != 0, m.narrow(1, 1, 2).data_ptr() - m.data_ptr(), m.clone().data_ptr() != m.data_ptr()]",
        "[true, 4, true]",
    ),
    ("t.item", "[m.sum().item(), i.max().item()]", "[21.0, 3]"),
    (
        "t.tolist",
        "[m.tolist(), i.tolist(), m.sum().tolist()]",
        "[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [3, 1, 2], 21.0]",
    ),
    (
        "t.pow",
        "[vals(v.pow(2)), vals(v.pow(tensor([2.0, 3.0, 0.5], dev))), vals(m.pow(0.5))]",
        "[[2.25, 0.0, 4.0], [2.25, 0.0, 1.4142], [1.0, 1.4142, 1.7321, 2.0, 2.2361, 2.4495]]",
    ),
    (
        "t.add",
        "[desc(m.add(tensor([10.0, 20.0, 30.0], dev))), vals(v.add(1)), desc(i.add(2))]",
        r#"[[[2, 3], "float32", [11.0, 22.0, 33.0, 14.0, 25.0, 36.0]], [-0.5, 1.0, 3.0], [[3], "int64", [5, 3, 4]]]"#,
    ),
    (
        "t.sub",
        "[vals(v.sub(tensor([1.0, 1.0, 1.0], dev))), vals(v.sub(0.5))]",
        "[[-2.5, -1.0, 1.0], [-2.0, -0.5, 1.5]]",
    ),
    (
        "t.mul",
        "[vals(v.mul(v)), vals(v.mul(2))]",
        "[[2.25, 0.0, 4.0], [-3.0, 0.0, 4.0]]",
    ),
    (
        "t.div",
        "[vals(m.div(tensor([2.0, 4.0, 8.0], dev))), desc(i.div(2))]",
        r#"[[0.5, 0.5, 0.375, 2.0, 1.25, 0.75], [[3], "float32", [1.5, 0.5, 1.0]]]"#,
    ),
    (
        "t.matmul",
        "desc(m.matmul(tensor([[1.0], [0.0], [-1.0]], dev)))",
        r#"[[2, 1], "float32", [-2.0, -2.0]]"#,
    ),
    (
        "t.mm",
        "desc(m.mm(m.t()))",
        r#"[[2, 2], "float32", [14.0, 32.0, 32.0, 77.0]]"#,
    ),
    (
        "t.t",
        "[m.t().shape, vals(m.t()), m.t().data_ptr() == m.data_ptr()]",
        "[[3, 2], [1.0, 4.0, 2.0, 5.0, 3.0, 6.0], true]",
    ),
    (
        "t.transpose",
        "let x = m.transpose(0, 1); [x.shape, vals(x), x.data_ptr() == m.data_ptr(), zeros([2, 3, 4]).transpose(0, 2).shape]",
        "[[3, 2], [1.0, 4.0, 2.0, 5.0, 3.0, 6.0], true, [4, 3, 2]]",
    ),
    (
        "t.reshape",
        "[m.reshape([3, 2]).tolist(), m.reshape(6).shape, m.reshape(-1, 2).shape]",
        "[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [6], [3, 2]]",
    ),
    (
        "t.view",
        "let x = m.view(3, 2); [x.shape, x.data_ptr() == m.data_ptr(), m.view([6]).tolist()]",
        "[[3, 2], true, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]",
    ),
    (
        "t.flatten",
        "[m.flatten().shape, vals(m.t().flatten())]",
        "[[6], [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]]",
    ),
    (
        "t.unsqueeze",
        "[v.unsqueeze(0).shape, v.unsqueeze(1).shape, v.unsqueeze(-1).shape]",
        "[[1, 3], [3, 1], [3, 1]]",
    ),
    (
        "t.squeeze",
        "let x = zeros([1, 3, 1], dev); [x.squeeze().shape, x.squeeze(0).shape, x.squeeze(1).shape]",
        "[[3], [3, 1], [1, 3, 1]]",
    ),
    (
        "t.permute",
        "let x = arange(24).to(devname).reshape(2, 3, 4).permute([2, 0, 1]); [x.shape, x.tolist()[1][0], x.data_ptr() == x.contiguous().data_ptr()]",
        "[[4, 2, 3], [1, 5, 9], false]",
    ),
    (
        "t.contiguous",
        "let x = m.t(); let c = x.contiguous(); [c.shape, vals(c), c.data_ptr() != x.data_ptr(), m.contiguous().data_ptr() == m.data_ptr()]",
        "[[3, 2], [1.0, 4.0, 2.0, 5.0, 3.0, 6.0], true, true]",
    ),
    (
        "t.clone",
        "let c = v.clone(); c.add_(1.0); [vals(v), vals(c), c.data_ptr() != v.data_ptr()]",
        "[[-1.5, 0.0, 2.0], [-0.5, 1.0, 3.0], true]",
    ),
    (
        "t.detach",
        "let w = v.clone().requires_grad_(); let d = (w * 2).detach(); [d.requires_grad, d.grad_fn, vals(d), w.detach().data_ptr() == w.data_ptr()]",
        "[false, (), [-3.0, 0.0, 4.0], true]",
    ),
    ("t.exp", "vals(v.exp())", "[0.2231, 1.0, 7.3891]"),
    (
        "t.log",
        "vals(m.log())",
        "[0.0, 0.6931, 1.0986, 1.3863, 1.6094, 1.7918]",
    ),
    (
        "t.sqrt",
        "vals(m.sqrt())",
        "[1.0, 1.4142, 1.7321, 2.0, 2.2361, 2.4495]",
    ),
    (
        "t.rsqrt",
        "vals(m.rsqrt())",
        "[1.0, 0.7071, 0.5774, 0.5, 0.4472, 0.4082]",
    ),
    (
        "t.abs",
        "[vals(v.abs()), desc(tensor([-3, 4], dev).abs())]",
        r#"[[1.5, 0.0, 2.0], [[2], "int64", [3, 4]]]"#,
    ),
    (
        "t.neg",
        "[vals(m.neg()), vals(-i)]",
        "[[-1.0, -2.0, -3.0, -4.0, -5.0, -6.0], [-3, -1, -2]]",
    ),
    ("t.relu", "vals(v.relu())", "[0.0, 0.0, 2.0]"),
    (
        "t.relu_",
        "let r = v.clone(); let p = r.data_ptr(); [vals(r.relu_()), r.data_ptr() == p]",
        "[[0.0, 0.0, 2.0], true]",
    ),
    (
        "linear",
        "[vals(linear(m, tensor([[1.0, 0.0, -1.0]], dev), tensor([0.5], dev))), linear(m, m).shape]",
        "[[-1.5, -1.5], [2, 2]]",
    ),
    (
        "bmm",
        "vals(bmm(m.view(1, 2, 3), m.t().contiguous().view(1, 3, 2)))",
        "[14.0, 32.0, 32.0, 77.0]",
    ),
    (
        "layer_norm",
        "[vals(layer_norm(v, 3)), vals(layer_norm(m, [3], tensor([2.0, 2.0, 2.0], dev), tensor([1.0, 1.0, 1.0], dev)))]",
        "[[-1.1625, -0.1162, 1.2787], [-1.4495, 1.0, 3.4495, -1.4495, 1.0, 3.4495]]",
    ),
    ("conv2d", "vals(conv2d(m.view(1, 1, 2, 3), m.view(1, 1, 2, 3)))", "[91.0]"),
    (
        "conv3d",
        "[vals(conv3d(m.view(1, 1, 1, 2, 3), m.view(1, 1, 1, 2, 3))), conv3d(ones([1, 2, 4, 4, 4], dev), ones([3, 2, 3, 3, 3], dev), #{padding: 1, stride: [2, 1, 1]}).shape]",
        "[[91.0], [1, 3, 2, 4, 4]]",
    ),
    (
        "conv_transpose2d",
        "[vals(conv_transpose2d(m.view(1, 1, 2, 3), ones([1, 1, 1, 1], dev))), conv_transpose2d(m.view(1, 1, 2, 3), ones([1, 2, 2, 2], dev), #{stride: 2, output_padding: 1}).shape]",
        "[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 5, 7]]",
    ),
    (
        "conv_transpose3d",
        "[vals(conv_transpose3d(m.view(1, 1, 1, 2, 3), ones([1, 1, 1, 1, 1], dev))), conv_transpose3d(m.view(1, 1, 1, 2, 3), ones([1, 2, 2, 2, 2], dev), #{stride: 2, output_padding: 1}).shape]",
        "[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 3, 5, 7]]",
    ),
    (
        "unfold",
        "[vals(unfold(m.view(1, 1, 2, 3), 2)), unfold(m.view(1, 1, 2, 3), 2, #{padding: 1}).shape]",
        "[[1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 5.0, 6.0], [1, 4, 12]]",
    ),
    (
        "fold",
        "vals(fold(ones([1, 4, 4], dev), 3, 2))",
        "[1.0, 2.0, 1.0, 2.0, 4.0, 2.0, 1.0, 2.0, 1.0]",
    ),
    ("max_pool2d", "vals(max_pool2d(m.view(1, 1, 2, 3), 2))", "[5.0]"),
    ("avg_pool2d", "vals(avg_pool2d(m.view(1, 1, 2, 3), 2))", "[3.0]"),
    ("adaptive_avg_pool2d", "vals(adaptive_avg_pool2d(m.view(1, 1, 2, 3), 1))", "[3.5]"),
    (
        "batch_norm",
        "vals(batch_norm(m.view(1, 2, 3), tensor([0.0, 0.0], dev), tensor([1.0, 1.0], dev)))",
        "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]",
    ),
    (
        "nll_loss",
        "[vals(nll_loss(m, tensor([2, 0], dev))), nll_loss(m, tensor([2, 0], dev), #{reduction: \"sum\"}).item()]",
        "[[-3.5], -7.0]",
    ),
    (
        "l1_loss",
        "let a = tensor([1.0, 2.0, 3.0], dev); let b = tensor([1.0, 4.0, 0.0], dev); \
         [r4(l1_loss(a, b).item()), l1_loss(a, b, #{reduction: \"sum\"}).item()]",
        "[1.6667, 5.0]",
    ),
    (
        "smooth_l1_loss",
        "let a = tensor([1.0, 2.0, 3.0], dev); let b = tensor([1.0, 4.0, 0.0], dev); \
         [r4(smooth_l1_loss(a, b).item()), r4(smooth_l1_loss(a, b, #{beta: 4.0}).item())]",
        "[1.3333, 0.5417]",
    ),
    (
        "huber_loss",
        "let a = tensor([1.0, 2.0, 3.0], dev); let b = tensor([1.0, 4.0, 0.0], dev); \
         [r4(huber_loss(a, b).item()), vals(huber_loss(a, b, #{delta: 2.0, reduction: \"none\"}))]",
        "[1.3333, [0.0, 2.0, 4.0]]",
    ),
    (
        "binary_cross_entropy",
        "r4(binary_cross_entropy(tensor([0.5, 0.9], dev), tensor([1.0, 0.0], dev)).item())",
        // (-ln 0.5 - ln 0.1) / 2
        "1.4979",
    ),
    (
        "binary_cross_entropy_with_logits",
        "let x = tensor([0.0, 2.0], dev); let t = tensor([1.0, 0.0], dev); \
         [vals(binary_cross_entropy_with_logits(x, t, #{reduction: \"none\"})), \
          vals(binary_cross_entropy_with_logits(x, t, #{reduction: \"none\", pos_weight: tensor([2.0], dev)}))]",
        // ln 2 and ln(1 + e²); the positive one weighed twice
        "[[0.6931, 2.1269], [1.3863, 2.1269]]",
    ),
    (
        "kl_div",
        "r4(kl_div(tensor([0.5, 0.5], dev).log(), tensor([0.25, 0.75], dev), #{reduction: \"sum\"}).item())",
        // 0.25 ln(0.25 / 0.5) + 0.75 ln(0.75 / 0.5)
        "0.1308",
    ),
    (
        "t.scatter_add",
        "vals((v * 0.0).scatter_add(0, tensor([0, 2, 0], dev), tensor([1.0, 2.0, 3.0], dev)))",
        "[4.0, 0.0, 2.0]",
    ),
    (
        "t.scatter_add_",
        "let x = v.clone(); x.scatter_add_(0, tensor([0, 0, 1], dev), tensor([1.0, 2.0, 3.0], dev)); vals(x)",
        "[1.5, 3.0, 2.0]",
    ),
    (
        "t.index_add",
        "[vals(m.index_add(0, tensor([1, 0], dev), m)), vals(m.index_add(0, tensor([1, 0], dev), m, #{alpha: 0.5}))]",
        "[[5.0, 7.0, 9.0, 5.0, 7.0, 9.0], [3.0, 4.5, 6.0, 4.5, 6.0, 7.5]]",
    ),
    (
        "t.index_add_",
        "let x = m.clone(); x.index_add_(1, tensor([0], dev), tensor([[1.0], [2.0]], dev)); vals(x)",
        "[2.0, 2.0, 3.0, 6.0, 5.0, 6.0]",
    ),
    (
        "t.masked_scatter",
        "vals(m.masked_scatter(m > 3.5, tensor([10.0, 20.0, 30.0, 40.0], dev)))",
        "[1.0, 2.0, 3.0, 10.0, 20.0, 30.0]",
    ),
    (
        "t.masked_scatter_",
        "let x = m.clone(); x.masked_scatter_(m < 2.5, tensor([7.0, 8.0], dev)); vals(x)",
        "[7.0, 8.0, 3.0, 4.0, 5.0, 6.0]",
    ),
    (
        "t.roll",
        "[vals(m.roll(1, 1)), vals(roll(m, [1, 1], [0, 1]))]",
        "[[3.0, 1.0, 2.0, 6.0, 4.0, 5.0], [6.0, 4.0, 5.0, 3.0, 1.0, 2.0]]",
    ),
    (
        "scaled_dot_product_attention",
        "vals(scaled_dot_product_attention((m * 0.0).view(1, 1, 2, 3), m.view(1, 1, 2, 3), m.view(1, 1, 2, 3)))",
        "[2.5, 3.5, 4.5, 2.5, 3.5, 4.5]",
    ),
    (
        "dropout",
        "[vals(dropout(v, 0.5, false)), vals(dropout(v, 0.0)), vals(dropout(v, 1.0))]",
        "[[-1.5, 0.0, 2.0], [-1.5, 0.0, 2.0], [0.0, 0.0, 0.0]]",
    ),
    ("t.sigmoid", "vals(v.sigmoid())", "[0.1824, 0.5, 0.8808]"),
    ("t.tanh", "vals(v.tanh())", "[-0.9051, 0.0, 0.964]"),
    ("t.sin", "vals(v.sin())", "[-0.9975, 0.0, 0.9093]"),
    ("t.cos", "vals(v.cos())", "[0.0707, 1.0, -0.4161]"),
    (
        "t.gelu",
        r#"[vals(v.gelu()), vals(gelu(v)), vals(gelu(v, #{approximate: "tanh"}))]"#,
        "[[-0.1002, 0.0, 1.9545], [-0.1002, 0.0, 1.9545], [-0.1004, 0.0, 1.9546]]",
    ),
    ("t.silu", "[vals(v.silu()), vals(silu(v))]", "[[-0.2736, 0.0, 1.7616], [-0.2736, 0.0, 1.7616]]"),
    (
        "t.clamp",
        "[vals(v.clamp(-1.0, 1.0)), vals(v.clamp((), 0.5)), vals(v.clamp(0.0, ()))]",
        "[[-1.0, 0.0, 1.0], [-1.5, 0.0, 0.5], [0.0, 0.0, 2.0]]",
    ),
    (
        "t.sum",
        "[m.sum().item(), vals(m.sum(0)), vals(m.sum(1)), m.sum(1, true).shape, i.sum().dtype]",
        r#"[21.0, [5.0, 7.0, 9.0], [6.0, 15.0], [2, 1], "int64"]"#,
    ),
    (
        "t.mean",
        "[m.mean().item(), vals(m.mean(0)), m.mean(1, true).shape, vals(m.mean(-1))]",
        "[3.5, [2.5, 3.5, 4.5], [2, 1], [2.0, 5.0]]",
    ),
    (
        "t.max",
        "let x = tensor([[1.0, 9.0, 3.0], [7.0, 2.0, 8.0]], dev); [x.max().item(), vals(x.max(0)), vals(x.max(1)), x.max(1, true).shape]",
        "[9.0, [7.0, 9.0, 8.0], [9.0, 8.0], [2, 1]]",
    ),
    (
        "t.min",
        "let x = tensor([[1.0, 9.0, 3.0], [7.0, 2.0, 8.0]], dev); [x.min().item(), vals(x.min(0)), vals(x.min(1)), x.min(0, true).shape]",
        "[1.0, [1.0, 2.0, 3.0], [1.0, 2.0], [1, 3]]",
    ),
    (
        "t.argmax",
        "let x = tensor([[1.0, 9.0, 3.0], [7.0, 2.0, 8.0]], dev); [x.argmax().item(), vals(x.argmax(0)), vals(x.argmax(1)), x.argmax(1).dtype, x.argmax(1, true).shape]",
        r#"[1, [1, 0, 1], [1, 2], "int64", [2, 1]]"#,
    ),
    (
        "t.argmin",
        "let x = tensor([[1.0, 9.0, 1.0], [7.0, 0.0, 0.0]], dev); [x.argmin().item(), vals(x.argmin(0)), vals(x.argmin(-1)), x.argmin(1).dtype, x.argmin(1, true).shape, vals(argmin(x, 1)), argmin(tensor([3, 1, 2, 1], dev)).item()]",
        r#"[4, [0, 1, 1], [0, 1], "int64", [2, 1], [0, 1], 1]"#,
    ),
    (
        "t.softmax",
        "let x = tensor([[0.0, 0.0], [0.0, 1.0]], dev); [vals(x.softmax(1)), vals(x.softmax(0))]",
        "[[0.5, 0.5, 0.2689, 0.7311], [0.5, 0.2689, 0.5, 0.7311]]",
    ),
    (
        "t.log_softmax",
        "vals(tensor([[0.0, 0.0], [0.0, 1.0]], dev).log_softmax(1))",
        "[-0.6931, -0.6931, -1.3133, -0.3133]",
    ),
    (
        "t.add_",
        "let x = v.clone(); let r = x.add_(tensor([1.0, 1.0, 1.0], dev)); x.add_(2); [vals(x), r.data_ptr() == x.data_ptr()]",
        "[[1.5, 3.0, 5.0], true]",
    ),
    (
        "t.sub_",
        "let x = v.clone(); x.sub_(tensor([0.5, 0.5, 0.5], dev)); x.sub_(1); vals(x)",
        "[-3.0, -1.5, 0.5]",
    ),
    (
        "t.mul_",
        "let x = v.clone(); x.mul_(v); x.mul_(2); vals(x)",
        "[4.5, 0.0, 8.0]",
    ),
    (
        "t.zero_",
        "let x = m.clone(); x.zero_(); desc(x)",
        r#"[[2, 3], "float32", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]"#,
    ),
    (
        "t.fill_",
        "let x = i.clone(); x.fill_(7); let y = v.clone(); y.fill_(2.5); [desc(x), vals(y)]",
        r#"[[[3], "int64", [7, 7, 7]], [2.5, 2.5, 2.5]]"#,
    ),
    (
        "t.narrow",
        "let x = m.narrow(1, 1, 2); [x.shape, vals(x), x.data_ptr() - m.data_ptr()]",
        "[[2, 2], [2.0, 3.0, 5.0, 6.0], 4]",
    ),
    (
        "t.requires_grad_",
        "let w = v.clone(); w.requires_grad_(); let on = w.requires_grad; w.requires_grad_(false); [on, w.requires_grad, w.is_leaf]",
        "[true, false, true]",
    ),
    (
        "t.backward",
        "let w = tensor([1.0, 2.0, 3.0], #{device: devname, requires_grad: true}); (w * w).sum().backward(); let g = vals(w.grad); let y = (w * 3.0).sum(); y.backward(#{retain_graph: true}); y.backward(); [g, vals(w.grad)]",
        "[[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]",
    ),
    // ---- tensor properties
    (
        "t.shape",
        "[m.shape, m.sum().shape, zeros([0, 4]).shape]",
        "[[2, 3], [], [0, 4]]",
    ),
    (
        "t.dtype",
        "[m.dtype, i.dtype, m.half().dtype, m.bfloat16().dtype, m.double().dtype]",
        r#"["float32", "int64", "float16", "bfloat16", "float64"]"#,
    ),
    (
        "t.device",
        "[m.device, m.cuda().device, m.cpu().device]",
        r#"["{dev}", "cuda:0", "cpu"]"#,
    ),
    (
        "t.is_cuda",
        "[m.cuda().is_cuda, m.cpu().is_cuda]",
        "[true, false]",
    ),
    (
        "t.nbytes",
        "[m.nbytes, m.half().nbytes, i.nbytes, zeros([0]).nbytes]",
        "[24, 12, 24, 0]",
    ),
    (
        "t.requires_grad",
        "let w = v.clone(); let before = w.requires_grad; w.requires_grad = true; [before, w.requires_grad, (w * 2).requires_grad]",
        "[false, true, true]",
    ),
    (
        "t.grad",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let before = w.grad; (w * 5.0).sum().backward(); let g = vals(w.grad); w.grad = (); [before, g, w.grad]",
        "[(), [5.0, 5.0], ()]",
    ),
    (
        "t.grad_fn",
        "let w = v.clone().requires_grad_(); [w.grad_fn, (w * 2).grad_fn, (w + 1).sum().grad_fn]",
        r#"[(), "MulBackward0", "SumBackward0"]"#,
    ),
    (
        "t.is_leaf",
        "let w = v.clone().requires_grad_(); [w.is_leaf, (w * 2).is_leaf, v.is_leaf]",
        "[true, false, true]",
    ),
    // ---- the cuda module
    ("cuda::is_available", "cuda::is_available()", "true"),
    (
        "cuda::device_count",
        "let n = cuda::device_count(); [n >= 1, zeros([1], #{device: `cuda:${n - 1}`}).device == `cuda:${n - 1}`]",
        "[true, true]",
    ),
    (
        "cuda::get_device_name",
        "let name = cuda::get_device_name(); [name.len() > 0, name == cuda::get_device_name(0), name == cuda::get_device_name(\"cuda:0\")]",
        "[true, true, true]",
    ),
    ("cuda::current_device", "cuda::current_device()", "0"),
    (
        "cuda::set_device",
        "cuda::set_device(0); [cuda::current_device(), zeros([1]).cuda().device]",
        r#"[0, "cuda:0"]"#,
    ),
    (
        "cuda::synchronize",
        "let x = ones([4], gpu) * 3.0; cuda::synchronize(); cuda::synchronize(0); vals(x)",
        "[3.0, 3.0, 3.0, 3.0]",
    ),
    (
        "cuda::mem_get_info",
        "let info = cuda::mem_get_info(); [info.len(), info[0] <= info[1], info[1] > 1 << 30, cuda::mem_get_info(0)[1] == info[1]]",
        "[2, true, true, true]",
    ),
    (
        "cuda::memory_allocated",
        "let a0 = cuda::memory_allocated(); let x = empty([1000, 1000], gpu); [cuda::memory_allocated() - a0, cuda::memory_allocated(\"cuda:0\") - a0]",
        "[{X}, {X}]",
    ),
    (
        "cuda::max_memory_allocated",
        "cuda::reset_peak_memory_stats(); let a0 = cuda::memory_allocated(); let x = empty([1000, 1000], gpu); del x; [cuda::max_memory_allocated() - a0, cuda::max_memory_allocated(0) - a0, cuda::memory_allocated() - a0]",
        "[{X}, {X}, 0]",
    ),
    (
        "cuda::memory_reserved",
        "cuda::empty_cache(); let r0 = cuda::memory_reserved(); let x = empty([1000, 1000], gpu); cuda::memory_reserved(0) - r0",
        "{SEGMENT}",
    ),
    (
        "cuda::max_memory_reserved",
        "cuda::empty_cache(); cuda::reset_peak_memory_stats(); let r0 = cuda::memory_reserved(); let x = empty([1000, 1000], gpu); del x; cuda::empty_cache(); [cuda::max_memory_reserved() - r0, cuda::memory_reserved() - r0]",
        "[{SEGMENT}, 0]",
    ),
    (
        "cuda::memory_stats",
        "let before = cuda::memory_stats(); let x = empty([1000, 1000], gpu); let s = cuda::memory_stats(0); [s.len(), s[\"allocation.all.current\"] - before[\"allocation.all.current\"], s[\"allocated_bytes.all.current\"] - before[\"allocated_bytes.all.current\"], s[\"max_split_size\"]]",
        "[122, 1, {X}, -1]",
    ),
    (
        "cuda::memory_summary",
        "let s = cuda::memory_summary(); [s.contains(\"memory summary, device ID 0\"), cuda::memory_summary(#{device: 0, abbreviated: true}).len() < s.len()]",
        "[true, true]",
    ),
    (
        "cuda::reset_peak_memory_stats",
        "cuda::reset_peak_memory_stats(); let x = empty([1000, 1000], gpu); del x; let above = cuda::max_memory_allocated() - cuda::memory_allocated(); cuda::reset_peak_memory_stats(); [above, cuda::max_memory_allocated() == cuda::memory_allocated()]",
        "[{X}, true]",
    ),
    (
        "cuda::reset_accumulated_memory_stats",
        "let x = empty([1000, 1000], gpu); del x; cuda::reset_accumulated_memory_stats(); let s = cuda::memory_stats(); [s[\"allocation.all.allocated\"], s[\"allocation.all.freed\"], s[\"num_device_alloc\"], s[\"allocated_bytes.all.current\"] == memory_allocated()]",
        "[0, 0, 0, true]",
    ),
    (
        "cuda::empty_cache",
        "cuda::empty_cache(); let r0 = cuda::memory_reserved(); let x = empty([1000, 1000], gpu); let r1 = cuda::memory_reserved(); del x; cuda::empty_cache(); [r1 - r0, cuda::memory_reserved() - r0]",
        "[{SEGMENT}, 0]",
    ),
    (
        "cuda::memory_snapshot",
        "cuda::empty_cache(); let x = empty([1000, 1000], gpu); let p = x.data_ptr(); let snap = cuda::memory_snapshot(); let mine = snap.segments.filter(|g| g.address <= p && p < g.address + g.total_size); [snap.keys(), mine.len(), mine[0].total_size, mine[0].blocks[0].address == p, mine[0].blocks[0].state, cuda::memory_snapshot(0).segments.len() == snap.segments.len()]",
        r#"[["allocator_settings", "device_traces", "segments"], 1, {SEGMENT}, true, "active_allocated", true]"#,
    ),
    (
        "cuda::record_memory_history",
        "cuda::empty_cache(); cuda::record_memory_history(\"all\"); let x = empty([1000, 1000], gpu); del x; let trace = cuda::memory_snapshot().device_traces[0]; cuda::record_memory_history(()); [trace.map(|e| e.action), trace.map(|e| e.size), cuda::memory_snapshot().device_traces[0].len()]",
        r#"[["segment_alloc", "alloc", "free_requested", "free_completed"], [{SEGMENT}, {X_REQUESTED}, {X_REQUESTED}, {X_REQUESTED}], 0]"#,
    ),
    (
        "cuda::dump_snapshot",
        "cuda::record_memory_history(()); let k = []; try { cuda::dump_snapshot(\"s.json\") } catch (e) { k.push(e.kind); } cuda::record_memory_history(); let x = empty([1000, 1000], gpu); try { cuda::dump_snapshot(\"/no/such/dir/s.pickle\") } catch (e) { k.push(e.kind); } cuda::record_memory_history(()); k",
        r#"["RuntimeError", "OSError"]"#,
    ),
    (
        "cuda::all_reduce",
        "let n = cuda::device_count(); let ts = []; let total = 0.0; for d in 0..n { ts.push(full([2], 2.0 + d, #{device: `cuda:${d}`})); total += 2.0 + d; } cuda::all_reduce(ts); let summed = ts.all(|t| vals(t) == [total, total]); for d in 0..n { ts[d].fill_(2.0 + d); } cuda::all_reduce(ts, \"min\"); [summed, ts.all(|t| vals(t) == [2.0, 2.0]), ts[n - 1].device == `cuda:${n - 1}`]",
        "[true, true, true]",
    ),
    (
        "cuda::broadcast",
        "let n = cuda::device_count(); let ts = []; for d in 0..n { ts.push(full([2], 5.0 + d, #{device: `cuda:${d}`})); } cuda::broadcast(ts); let from_first = ts.all(|t| vals(t) == [5.0, 5.0]); for d in 0..n { ts[d].fill_(5.0 + d); } cuda::broadcast(ts, n - 1); [from_first, ts.all(|t| vals(t) == [4.0 + n, 4.0 + n])]",
        "[true, true]",
    ),
    (
        "cuda::all_gather",
        "let n = cuda::device_count(); let ts = []; for d in 0..n { ts.push(full([2], 1.0 + d, #{device: `cuda:${d}`})); } let g = cuda::all_gather(ts); [g.len() == n, g[n - 1].shape == [n, 2], g[n - 1].device == `cuda:${n - 1}`, vals(g[0]).len() == 2 * n, vals(g[n - 1][0])]",
        "[true, true, true, true, [1.0, 1.0]]",
    ),
    (
        "cuda::set_per_process_memory_fraction",
        "let kind = \"\"; cuda::set_per_process_memory_fraction(0.0001); try { let big = empty([1000, 1000, 10], gpu); } catch (e) { kind = e.kind; } cuda::set_per_process_memory_fraction(1.0); let after = empty([1000, 1000, 10], gpu); [kind, after.shape]",
        r#"["OutOfMemoryError", [1000, 1000, 10]]"#,
    ),
    // ---- optimizers and parameters
    (
        "SGD",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::SGD([w], #{lr: 0.5}); (w * w).sum().backward(); opt.step(); vals(w)",
        "[0.0, 0.0]",
    ),
    (
        "Adam",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::Adam([w], #{lr: 0.1}); w.sum().backward(); opt.step(); vals(w)",
        "[0.9, 1.9]",
    ),
    (
        "AdamW",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::AdamW([w], #{lr: 0.1}); w.sum().backward(); opt.step(); vals(w)",
        "[0.899, 1.898]",
    ),
    (
        "RMSprop",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::RMSprop([w], #{lr: 0.1, alpha: 0.75}); w.sum().backward(); opt.step(); [vals(w), opt.state[w].keys()]",
        r#"[[0.8, 1.8], ["square_avg", "step"]]"#,
    ),
    (
        "Adagrad",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::Adagrad([w], #{lr: 0.5}); let made = opt.state[w].keys(); w.sum().backward(); opt.step(); [vals(w), made]",
        r#"[[0.5, 1.5], ["step", "sum"]]"#,
    ),
    (
        "step",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::SGD([w], #{lr: 1.0}); w.sum().backward(); opt.step(); vals(w)",
        "[0.0, 1.0]",
    ),
    (
        "zero_grad",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::SGD([w]); w.sum().backward(); opt.zero_grad(#{set_to_none: false}); let zeroed = vals(w.grad); opt.zero_grad(); [zeroed, w.grad == ()]",
        "[[0.0, 0.0], true]",
    ),
    (
        "t.state",
        "let w = tensor([1.0, 2.0], #{device: devname, requires_grad: true}); let opt = optim::SGD([w], #{momentum: 0.9}); let before = opt.state[w].len(); w.sum().backward(); opt.step(); [before, opt.state[w].keys(), vals(opt.state[w].momentum_buffer)]",
        r#"[0, ["momentum_buffer"], [1.0, 1.0]]"#,
    ),
    (
        "linear_params",
        "let l = nn::linear_params(4, 3, dev); [l.weight.shape, l.bias.shape, l.weight.requires_grad, l.weight.device == devname || devname == \"cuda\", l.weight.abs().max().item() <= 0.5]",
        "[[3, 4], [3], true, true, true]",
    ),
    (
        "parameters",
        "let l = nn::linear_params(4, 3, dev); nn::parameters([l, v]).map(|t| t.shape)",
        "[[3, 4], [3], [3]]",
    ),
    // ---- torch.distributed as one rank of a world (`dist::`)
    (
        "init_process_group",
        "dist::init_process_group(\"fake\", #{rank: 3, world_size: 8}); let k = \"\"; try { dist::init_process_group(\"fake\") } catch (e) { k = e.kind; } [dist::get_rank(), dist::get_world_size(), k]",
        r#"[3, 8, "ValueError"]"#,
    ),
    (
        "is_initialized",
        "let before = dist::is_initialized(); dist::init_process_group(\"gloo\"); [before, dist::is_initialized()]",
        "[false, true]",
    ),
    (
        "destroy_process_group",
        "dist::init_process_group(\"fake\", #{world_size: 2}); dist::destroy_process_group(); dist::is_initialized()",
        "false",
    ),
    (
        "get_rank",
        "let k = \"\"; try { dist::get_rank() } catch (e) { k = e.kind; } dist::init_process_group(\"fake\", #{rank: 1, world_size: 2}); [k, dist::get_rank()]",
        r#"["ValueError", 1]"#,
    ),
    (
        "get_world_size",
        "let k = \"\"; try { dist::init_process_group(\"nccl\", #{world_size: 4}) } catch (e) { k = e.kind; } dist::init_process_group(\"nccl\"); [k, dist::get_world_size()]",
        r#"["NotImplementedError", 1]"#,
    ),
    (
        "get_backend",
        "dist::init_process_group(\"fake\", #{world_size: 4}); dist::get_backend()",
        "fake",
    ),
    (
        "barrier",
        "dist::init_process_group(\"fake\", #{world_size: 4}); dist::barrier(); dist::get_world_size()",
        "4",
    ),
    (
        "all_reduce",
        "dist::init_process_group(\"fake\", #{world_size: 4}); let t = ones(3, dev); let before = cuda::memory_allocated(); dist::all_reduce(t); let k = \"\"; try { dist::all_reduce(3) } catch (e) { k = e.kind; } [vals(t), cuda::memory_allocated() - before, k]",
        r#"[[1.0, 1.0, 1.0], 0, "TypeError"]"#,
    ),
    (
        "broadcast",
        "dist::init_process_group(\"fake\", #{world_size: 4}); let t = ones(3, dev); dist::broadcast(t, 0); vals(t)",
        "[1.0, 1.0, 1.0]",
    ),
    (
        "all_gather_into_tensor",
        "dist::init_process_group(\"fake\", #{world_size: 4}); let out = empty([8], dev); dist::all_gather_into_tensor(out, ones(2, dev)); out.shape",
        "[8]",
    ),
    (
        "reduce_scatter_tensor",
        "dist::init_process_group(\"fake\", #{world_size: 4}); let out = empty([2], dev); dist::reduce_scatter_tensor(out, ones(8, dev)); out.shape",
        "[2]",
    ),
    (
        "all_gather",
        "dist::init_process_group(\"nccl\"); let t = ones([1024], gpu); let out = [empty([1024], gpu)]; cuda::reset_peak_memory_stats(); let base = cuda::memory_allocated(); dist::all_gather(out, t); [cuda::max_memory_allocated() - base, cuda::memory_allocated() - base]",
        "[4096, 0]",
    ),
    // ---- Python's spellings and the memory explainers
    ("range", "let s = 0; for i in range(4) { s += i; } s", "6"),
    ("exit", "let k = \"\"; try { exit(3) } catch (e) { k = e.kind; } k", "SystemExit"),
    ("quit", "let k = \"\"; try { quit() } catch (e) { k = e.kind; } k", "SystemExit"),
    ("device", "device(\"cuda:0\")", "cuda:0"),
    ("import", "import torch\ntorch.zeros(2, dev).shape", "[2]"),
    ("t.T", "ones(2, 3, dev).T.shape", "[3, 2]"),
    ("t.select", "tensor([[1, 2], [3, 4]], dev).select(1, 0).tolist()", "[1, 3]"),
    (
        "memory_holders",
        "let mine = ones(256, 1024).cuda(); memory_holders().filter(|b| b.holders.contains(\"mine\")).map(|b| b.size)",
        "[1048576]",
    ),
    (
        "explain_free",
        "let mine = ones(256, 1024).cuda(); explain_free(mine).ways.map(|w| w.allocated)",
        "[-1048576, -1048576, 0, -1048576]",
    ),
    (
        "empty_cache_report",
        "empty_cache_report().starts_with(\"cuda:0: empty_cache\")",
        "true",
    ),
    // ---- Python's numbers, truth and comparisons
    ("abs", "[abs(-3), abs(-2.5)]", "[3, 2.5]"),
    ("bool", "[bool(ones(1, dev)), bool(zeros(1, dev)), bool(())]", "[true, false, false]"),
    ("float", "float(\"2.5\") + float(1)", "3.5"),
    ("floordiv", "[floordiv(7, 2), floordiv(-7, 2)]", "[3, -4]"),
    ("fmt_bytes", "fmt_bytes(4000256)", "3.81 MiB"),
    ("int", "[int(2.9), int(\"42\"), int(-2.9)]", "[2, 42, -2]"),
    ("max", "[max(1, 5), max([3, 9, 2])]", "[5, 9]"),
    ("min", "[min(1, 5), min([3, 9, 2])]", "[1, 2]"),
    ("round", "[round(2.5), round(3.14159, 2)]", "[2, 3.14]"),
    ("t.div_", "let t = tensor([2.0, 4.0], dev); t.div_(2); vals(t)", "[1.0, 2.0]"),
    ("t.eq", "tensor([1, 2], dev).eq(tensor([1, 3], dev)).tolist()", "[true, false]"),
    ("t.ge", "tensor([1.0, 2.0], dev).ge(2.0).tolist()", "[false, true]"),
    ("t.gt", "tensor([1.0, 2.0], dev).gt(1.0).tolist()", "[false, true]"),
    ("t.le", "tensor([1.0, 2.0], dev).le(1.0).tolist()", "[true, false]"),
    ("t.lt", "tensor([1.0, 2.0], dev).lt(2.0).tolist()", "[true, false]"),
    ("t.ne", "tensor([1.0, 2.0], dev).ne(1.0).tolist()", "[false, true]"),
    // ---- shape and index ops
    (
        "cat",
        "desc(cat([m, m], #{dim: -1}))",
        r#"[[2, 6], "float32", [1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 4.0, 5.0, 6.0]]"#,
    ),
    (
        "stack",
        "desc(stack([v, v], 1))",
        r#"[[3, 2], "float32", [-1.5, -1.5, 0.0, 0.0, 2.0, 2.0]]"#,
    ),
    (
        "split",
        "split(m, [1, 2], 1).map(|p| p.shape)",
        "[[2, 1], [2, 2]]",
    ),
    (
        "chunk",
        "chunk(m, 2, #{dim: 1}).map(|p| vals(p))",
        "[[1.0, 2.0, 4.0, 5.0], [3.0, 6.0]]",
    ),
    ("where", "vals(where(v > 0, v, 9))", "[9.0, 9.0, 2.0]"),
    ("triu", "vals(triu(m, 1))", "[0.0, 2.0, 3.0, 0.0, 0.0, 6.0]"),
    ("tril", "vals(tril(m))", "[1.0, 0.0, 0.0, 4.0, 5.0, 0.0]"),
    (
        "index_select",
        "vals(index_select(m, 1, tensor([2, 0], dev)))",
        "[3.0, 1.0, 6.0, 4.0]",
    ),
    ("gather", "vals(gather(m, 1, tensor([[2], [0]], dev)))", "[3.0, 4.0]"),
    (
        "t.amax",
        "[m.amax().item(), vals(m.amax(0)), vals(m.amax(1)), m.amax(1, true).shape]",
        "[6.0, [4.0, 5.0, 6.0], [3.0, 6.0], [2, 1]]",
    ),
    ("t.amin", "[m.amin().item(), vals(m.amin(1))]", "[1.0, [1.0, 4.0]]"),
    (
        "t.prod",
        "[m.prod().item(), vals(m.prod(1)), i.prod().dtype]",
        r#"[720.0, [6.0, 120.0], "int64"]"#,
    ),
    (
        "sort",
        "let r = sort(v, 0, true); let c = m.sort(#{dim: 0, descending: true}); [vals(r[0]), vals(r[1]), vals(c[0])]",
        "[[2.0, 0.0, -1.5], [2, 1, 0], [4.0, 5.0, 6.0, 1.0, 2.0, 3.0]]",
    ),
    ("argsort", "[vals(argsort(i)), vals(i.argsort(0, true))]", "[[1, 2, 0], [0, 2, 1]]"),
    (
        "topk",
        "let r = topk(m, 2); let s = m.topk(1, #{dim: 0, largest: false}); [vals(r[0]), vals(r[1]), vals(s[0])]",
        "[[3.0, 2.0, 6.0, 5.0], [2, 1, 2, 1], [1.0, 2.0, 3.0]]",
    ),
    (
        "cumsum",
        "[vals(cumsum(m, 1)), vals(m.cumsum(0)), cumsum(i, 0).dtype]",
        r#"[[1.0, 3.0, 6.0, 4.0, 9.0, 15.0], [1.0, 2.0, 3.0, 5.0, 7.0, 9.0], "int64"]"#,
    ),
    ("flip", "vals(flip(m, [1]))", "[3.0, 2.0, 1.0, 6.0, 5.0, 4.0]"),
    ("t.log1p", "vals(tensor([0.5, 0.0], dev).log1p())", "[0.4055, 0.0]"),
    ("t.expm1", "vals(tensor([0.5, 0.0], dev).expm1())", "[0.6487, 0.0]"),
    ("t.erf", "vals(tensor([0.5, -0.5], dev).erf())", "[0.5205, -0.5205]"),
    ("t.sign", "[vals(v.sign()), vals(i.sign())]", "[[-1.0, 0.0, 1.0], [1, 1, 1]]"),
    ("maximum", "vals(maximum(v, tensor([0.0, -1.0, 3.0], dev)))", "[0.0, 0.0, 3.0]"),
    ("minimum", "vals(v.minimum(tensor([0.0, -1.0, 3.0], dev)))", "[-1.5, -1.0, 2.0]"),
    (
        "remainder",
        "[vals(remainder(i, 2)), vals(tensor([-7, 7], dev) % tensor([3, -3], dev)), vals(-7 % tensor([3], dev))]",
        "[[1, 1, 0], [2, -2], [2]]",
    ),
    ("floor_divide", "[vals(floor_divide(i, 2)), vals(tensor([-7], dev).floor_divide(2))]", "[[1, 0, 1], [-4]]"),
    ("clamp_min", "vals(clamp_min(v, 0.0))", "[0.0, 0.0, 2.0]"),
    ("clamp_max", "vals(v.clamp_max(1))", "[-1.5, 0.0, 1.0]"),
    ("lerp", "vals(lerp(v, tensor([0.5, 1.0, 2.0], dev), 0.5))", "[-0.5, 0.5, 2.0]"),
    ("addcmul", "[vals(addcmul(v, v, v)), vals(v.addcmul(v, v, 0.5))]", "[[0.75, 0.0, 6.0], [-0.375, 0.0, 4.0]]"),
    (
        "norm",
        "[r4(norm(m).item()), vals(norm(m, 1.0, [1])), norm(m, 2.0, [0], true).shape]",
        "[9.5394, [6.0, 15.0], [1, 3]]",
    ),
    (
        "scatter",
        "[vals(scatter(m, 1, tensor([[0], [2]], dev), 0.0)), vals(m.scatter(0, tensor([[1, 0, 1]], dev), v.view(1, 3)))]",
        "[[0.0, 2.0, 3.0, 4.0, 5.0, 0.0], [1.0, 0.0, 3.0, -1.5, 5.0, 2.0]]",
    ),
    (
        "multinomial",
        "let p = tensor([[0.0, 1.0], [1.0, 0.0]], dev); [vals(multinomial(p, 1)), vals(p.multinomial(3, true))]",
        "[[1, 0], [1, 1, 1, 0, 0, 0]]",
    ),
    (
        "nonzero",
        "[vals(nonzero(m > 4.0)), nonzero(m > 9.0).shape, vals(m[m > 4.0]), vals(m[tensor([false, true], dev)])]",
        "[[1, 1, 1, 2], [0, 2], [5.0, 6.0], [4.0, 5.0, 6.0]]",
    ),
    (
        "masked_select",
        "[vals(masked_select(m, m > 4.0)), vals(m.masked_select(m < 2.0))]",
        "[[5.0, 6.0], [1.0]]",
    ),
    (
        "std",
        "[r4(std(m).item()), vals(std(m, 1)), vals(m.std(1, false))]",
        "[1.8708, [1.0, 1.0], [0.8165, 0.8165]]",
    ),
    ("variance", "[variance(m).item(), vals(variance(m, 0)), vals(m.variance(1, false))]", "[3.5, [4.5, 4.5, 4.5], [0.6667, 0.6667]]"),
    ("logsumexp", "[vals(logsumexp(m, 1)), logsumexp(m, 0, true).shape]", "[[3.4076, 6.4076], [1, 3]]"),
    (
        "embedding",
        "desc(embedding(tensor([1, 0, 1], dev), m))",
        r#"[[3, 3], "float32", [4.0, 5.0, 6.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]"#,
    ),
    (
        "randint",
        "let r = randint(0, 3, [50], dev); [r.dtype, r.shape, r.min().item() >= 0, r.max().item() < 3]",
        r#"["int64", [50], true, true]"#,
    ),
    (
        "t.expand",
        "let x = v.expand(2, -1); [x.shape, vals(x), x.data_ptr() == v.data_ptr()]",
        "[[2, 3], [-1.5, 0.0, 2.0, -1.5, 0.0, 2.0], true]",
    ),
    (
        "t.repeat",
        "desc(v.repeat(2))",
        r#"[[6], "float32", [-1.5, 0.0, 2.0, -1.5, 0.0, 2.0]]"#,
    ),
    (
        "t.masked_fill",
        "vals(m.masked_fill(m > 4, 0))",
        "[1.0, 2.0, 3.0, 4.0, 0.0, 0.0]",
    ),
    (
        "t.masked_fill_",
        "let x = m.clone(); x.masked_fill_(x < 3, -1); vals(x)",
        "[-1.0, -1.0, 3.0, 4.0, 5.0, 6.0]",
    ),
];

/// The key a help entry's row is filed under.
fn keys_help_lists() -> BTreeSet<String> {
    help::entries()
        .iter()
        .map(|entry| match entry.kind {
            Kind::Function | Kind::Keyword => entry.name.clone(),
            Kind::Method | Kind::Property => format!("t.{}", entry.name),
            Kind::CudaMember => format!("cuda::{}", entry.name),
        })
        .collect()
}

/// Whether `snippet` really uses the entry its row is filed under.
fn calls(key: &str, snippet: &str) -> bool {
    if let Some(member) = key.strip_prefix("t.") {
        let property = help::of_kind(Kind::Property).any(|e| e.name == member);
        let used = if property {
            format!(".{member}")
        } else {
            format!(".{member}(")
        };
        snippet.contains(&used)
    } else if key.starts_with("cuda::") {
        snippet.contains(&format!("{key}("))
    } else if help::of_kind(Kind::Keyword).any(|e| e.name == key) {
        snippet.contains(&format!("{key} "))
    } else {
        snippet.contains(&format!("{key}("))
    }
}

#[test]
fn every_help_entry_has_exactly_one_row_that_calls_it() {
    let listed = keys_help_lists();
    let mut rows = BTreeMap::new();
    for (key, snippet, _) in ROWS {
        assert!(rows.insert(*key, *snippet).is_none(), "two rows for {key}");
    }
    let missing: Vec<&String> = listed
        .iter()
        .filter(|k| !rows.contains_key(k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "help() lists these, but tests/lang/surface.rs has no row for them: {missing:?}; add \
         (\"NAME\", \"snippet\", \"expected text\") to ROWS"
    );
    let stale: Vec<&&str> = rows.keys().filter(|k| !listed.contains(**k)).collect();
    assert!(
        stale.is_empty(),
        "rows for names help() does not list: {stale:?}"
    );
    for (key, snippet) in &rows {
        assert!(
            calls(key, snippet),
            "the row for {key} does not call it: {snippet}"
        );
    }
}

/// `expected` with the article's figures in place of `{X}`, `{TWO_X}`, `{SEGMENT}`, `{X_REQUESTED}`.
fn figures_in(expected: &str) -> String {
    [
        ("{X}", X),
        ("{TWO_X}", TWO_X),
        ("{SEGMENT}", SEGMENT),
        ("{X_REQUESTED}", X_REQUESTED),
    ]
    .iter()
    .fold(expected.to_string(), |text, (name, value)| {
        text.replace(name, &value.to_string())
    })
}

/// A session with `input()` answered by "Ada", the prelude run for `device`.
fn session(device: &str) -> (Session, Rc<CapturedOutput>) {
    let out = Rc::new(CapturedOutput::with_inputs(vec!["Ada".into()]));
    let options = SessionOptions {
        source_name: Some("<surface>".into()),
        ..Default::default()
    };
    let mut s = Session::new(options, out.clone());
    let prelude = format!("let devname = \"{device}\";\n{PRELUDE}");
    let outcome = s.execute(&prelude);
    assert!(outcome.error.is_none(), "prelude: {:?}", outcome.error);
    out.clear();
    (s, out)
}

/// What a row gives: the echoed value (`()` for none), then what it printed or showed.
fn observe(s: &mut Session, out: &CapturedOutput, snippet: &str) -> Result<String, String> {
    let outcome = s.execute(snippet);
    if let Some(e) = outcome.error {
        return Err(format!("{}: {}", e.kind, e.message));
    }
    let mut text = outcome.value.map_or_else(|| "()".to_string(), |v| v.plain);
    for event in out.events() {
        text += &match event {
            OutputEvent::Stdout(s) => format!(" | stdout: {s:?}"),
            OutputEvent::Stderr(s) => format!(" | stderr: {s:?}"),
            OutputEvent::Display(d) => format!(" | display: {:?}", d.plain),
            OutputEvent::ClearOutput => " | clear_output".to_string(),
            OutputEvent::Picture(p) => format!(" | picture: svg={}", p.svg.starts_with("<svg")),
        };
    }
    Ok(text)
}

device_test!(
    fn every_row_gives_its_expected_value_on_every_device(device: &str) {
        let (_g, _a) = common::gpu();
        // The first matrix product makes this thread's cuBLAS workspace, which lives as long as the
        // process: make it now, in a segment of its own, not in the tail of one a row left cached.
        let (mut s, _) = session("cuda");
        common::run(
            &mut s,
            "matmul(ones([2, 2], gpu), ones([2, 2], gpu)); empty_cache();",
        );
        drop(s);
        let mut failures = Vec::new();
        let shown = if device == "cuda" { "cuda:0" } else { device };
        for (key, snippet, expected) in ROWS {
            let (mut s, out) = session(device);
            let want = figures_in(expected).replace("{dev}", shown);
            match observe(&mut s, &out, snippet) {
                Ok(got) if got == want => {}
                Ok(got) => failures.push(format!(
                "{key} on {device}:\n  snippet:  {snippet}\n  expected: {want}\n  got:      {got}"
            )),
                Err(e) => failures.push(format!(
                    "{key} on {device}:\n  snippet:  {snippet}\n  failed:   {e}"
                )),
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} rows differ:\n{}",
            failures.len(),
            ROWS.len(),
            failures.join("\n")
        );
    }
);

fn int(value: &Dynamic) -> i64 {
    value
        .as_int()
        .unwrap_or_else(|t| panic!("an int expected, got {t}: {value}"))
}

fn map(value: &Dynamic) -> Map {
    value
        .clone()
        .try_cast::<Map>()
        .unwrap_or_else(|| panic!("a map expected, got {}", value.type_name()))
}

fn array(value: &Dynamic) -> Vec<Dynamic> {
    value
        .clone()
        .into_array()
        .unwrap_or_else(|t| panic!("an array expected, got {t}"))
}

fn keys(m: &Map) -> BTreeSet<String> {
    m.keys().map(|k| k.to_string()).collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// The article's fourth method, as tests/parity/article_del_empty_cache.{py,rhai} run it, with the
/// checkpoint at which PyTorch recorded its statistics after each step.
const ARTICLE_STEPS: &[(&str, &str)] = &[
    (
        "let x = randn(1000, 1000).cuda(); let temp = x * 2;",
        "after x, temp = x * 2",
    ),
    ("del temp;", "after del temp"),
    ("empty_cache();", "after empty_cache()"),
    ("del x; empty_cache();", "after del x; empty_cache()"),
];

/// Statistics whose values on a real GPU depend on where the driver puts segments (as in
/// tests/memory/parity.rs): compared on the simulated GPU only.
const PLACEMENT_STATS: &str = "inactive_split";

#[test]
fn memory_stats_has_pytorchs_keys_and_values_after_the_articles_steps() {
    let (_g, a) = common::gpu();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/torch_traces/article_del_empty_cache.json"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("json");
    let (mut s, _) = Session::captured("<stats>");
    common::run(&mut s, "cuda::reset_accumulated_memory_stats();");
    // What other tests of this process left: the steps' figures come on top of it.
    let base = map(&common::dynamic(&mut s, "cuda::memory_stats()"));
    assert_eq!(
        int(&base["inactive_split_bytes.large_pool.current"]),
        0,
        "no cached large block may take x's place"
    );
    for (code, label) in ARTICLE_STEPS {
        common::run(&mut s, code);
        let torch = record["checkpoints"]
            .as_array()
            .expect("checkpoints")
            .iter()
            .find(|c| c["label"] == *label)
            .unwrap_or_else(|| panic!("PyTorch's record has no checkpoint {label:?}"))
            ["memory_stats"]
            .as_object()
            .expect("memory_stats")
            .clone();
        let got = map(&common::dynamic(&mut s, "cuda::memory_stats()"));
        let torch_keys: BTreeSet<String> = torch.keys().cloned().collect();
        assert_eq!(
            keys(&got),
            torch_keys,
            "{label}: the keys differ from PyTorch's"
        );
        assert_eq!(torch_keys.len(), 122);
        let mut differ = Vec::new();
        for (key, want) in &torch {
            let want = want.as_i64().expect("PyTorch's statistics are ints");
            let value = &got[key.as_str()];
            assert!(
                value.is_int(),
                "{label}: {key} is a {}, PyTorch's an int",
                value.type_name()
            );
            let value = int(value);
            // Figures that live (current, peak) add to what was there; totals and counters
            // (allocated, freed, num_*) were zeroed by reset_accumulated_memory_stats.
            let expected = match key.rsplit_once('.') {
                Some((stat, "current" | "peak")) => {
                    want + int(&base[format!("{stat}.current").as_str()])
                }
                _ => want,
            };
            let compared = !(common::real_gpu() && key.starts_with(PLACEMENT_STATS));
            if compared && value != expected {
                differ.push(format!(
                    "{key}: expected {expected} (PyTorch {want}), got {value}"
                ));
            }
        }
        assert!(differ.is_empty(), "{label}:\n{}", differ.join("\n"));
        let from_rust: BTreeMap<String, i64> =
            got.iter().map(|(k, v)| (k.to_string(), int(v))).collect();
        assert_eq!(
            from_rust,
            a.memory_stats(),
            "{label}: the script sees the allocator's map"
        );
    }
}

const SEGMENT_FIELDS: &[&str] = &[
    "device",
    "address",
    "total_size",
    "allocated_size",
    "active_size",
    "requested_size",
    "stream",
    "segment_type",
    "segment_pool_id",
    "is_expandable",
    "blocks",
];
const BLOCK_FIELDS: &[&str] = &["address", "size", "requested_size", "state"];
const BLOCK_STATES: &[&str] = &["active_allocated", "active_pending_free", "inactive"];
const TRACE_ACTIONS: &[&str] = &[
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "oom",
    "snapshot",
];

/// Every segment and block has PyTorch's fields with PyTorch's types, and the blocks tile their
/// segment.
fn check_segments(segments: &[Dynamic]) {
    for segment in segments {
        let seg = map(segment);
        assert_eq!(keys(&seg), set(SEGMENT_FIELDS), "segment fields");
        for field in [
            "device",
            "address",
            "total_size",
            "allocated_size",
            "active_size",
            "requested_size",
            "stream",
        ] {
            assert!(seg[field].is_int(), "segment {field}: {}", seg[field]);
        }
        let kind = seg["segment_type"].to_string();
        assert!(kind == "large" || kind == "small", "segment_type {kind}");
        assert!(seg["is_expandable"].is_bool());
        assert_eq!(seg["segment_pool_id"].to_string(), "[0, 0]");
        let mut address = int(&seg["address"]);
        let (mut allocated, mut active, mut requested) = (0, 0, 0);
        for block in array(&seg["blocks"]) {
            let b = map(&block);
            let optional = b.contains_key("tag") as usize;
            assert_eq!(keys(&b).len(), BLOCK_FIELDS.len() + optional, "{b:?}");
            assert!(
                set(BLOCK_FIELDS).is_subset(&keys(&b)),
                "block fields: {b:?}"
            );
            let state = b["state"].to_string();
            assert!(BLOCK_STATES.contains(&state.as_str()), "state {state}");
            assert_eq!(int(&b["address"]), address, "blocks tile the segment");
            address += int(&b["size"]);
            if state != "inactive" {
                active += int(&b["size"]);
                requested += int(&b["requested_size"]);
            }
            if state == "active_allocated" {
                allocated += int(&b["size"]);
            }
        }
        assert_eq!(address, int(&seg["address"]) + int(&seg["total_size"]));
        assert_eq!(allocated, int(&seg["allocated_size"]));
        assert_eq!(active, int(&seg["active_size"]));
        assert_eq!(requested, int(&seg["requested_size"]));
    }
}

/// Every trace entry has PyTorch's fields: action, addr (device_free for an oom), size, stream,
/// time_us; torchlet adds the allocation's tag where there is one, and has no `frames`.
fn check_trace(trace: &[Dynamic]) {
    let mut last_time = 0;
    for entry in trace {
        let e = map(entry);
        let action = e["action"].to_string();
        assert!(TRACE_ACTIONS.contains(&action.as_str()), "action {action}");
        let address = if action == "oom" {
            "device_free"
        } else {
            "addr"
        };
        let mut want = set(&["action", address, "size", "stream", "time_us"]);
        if e.contains_key("tag") {
            want.insert("tag".into());
        }
        assert_eq!(keys(&e), want, "{action} entry");
        for field in [address, "size", "stream", "time_us"] {
            assert!(e[field].is_int(), "{action} {field}: {}", e[field]);
        }
        let time = int(&e["time_us"]);
        assert!(time >= last_time, "entries are oldest first");
        last_time = time;
    }
}

/// (action, address, size) of each entry.
fn events(trace: &[Dynamic]) -> Vec<(String, i64, i64)> {
    trace
        .iter()
        .map(|entry| {
            let e = map(entry);
            let address = e.get("addr").or_else(|| e.get("device_free")).unwrap();
            (e["action"].to_string(), int(address), int(&e["size"]))
        })
        .collect()
}

#[test]
fn memory_snapshot_has_pytorchs_fields_and_the_articles_blocks() {
    let (_g, _a) = common::gpu();
    let (mut s, _) = Session::captured("<snapshot>");
    common::run(
        &mut s,
        "cuda::record_memory_history(()); cuda::record_memory_history(\"all\");
         let x = randn(1000, 1000).cuda(); let temp = x * 2;",
    );
    let snap = map(&common::dynamic(&mut s, "cuda::memory_snapshot()"));
    let (px, ptemp) = (
        int(&common::dynamic(&mut s, "x.data_ptr()")),
        int(&common::dynamic(&mut s, "temp.data_ptr()")),
    );
    assert_eq!(
        keys(&snap),
        set(&["segments", "device_traces", "allocator_settings"])
    );
    let settings = map(&snap["allocator_settings"]);
    assert_eq!(int(&settings["max_split_size"]), -1);
    assert_eq!(settings["garbage_collection_threshold"].as_float(), Ok(0.0));
    assert_eq!(settings["expandable_segments"].as_bool(), Ok(false));
    assert!(settings["roundup_power2_divisions"].is_map());

    let segments = array(&snap["segments"]);
    check_segments(&segments);
    let addresses: Vec<i64> = segments.iter().map(|g| int(&map(g)["address"])).collect();
    assert!(
        addresses.windows(2).all(|w| w[0] < w[1]),
        "sorted by address"
    );
    // Reference scenario C, step 2: x and temp carved from one 20 MiB segment.
    let mine = segments
        .iter()
        .map(map)
        .find(|g| int(&g["address"]) == px)
        .expect("x starts a segment");
    let figures = |names: &[&str]| -> Vec<i64> { names.iter().map(|n| int(&mine[*n])).collect() };
    let (x, two_x, x_requested) = (X as i64, TWO_X as i64, X_REQUESTED as i64);
    assert_eq!(
        figures(&[
            "device",
            "total_size",
            "allocated_size",
            "active_size",
            "requested_size",
            "stream"
        ]),
        [0, SEGMENT as i64, two_x, two_x, 2 * x_requested, 0]
    );
    assert_eq!(mine["segment_type"].to_string(), "large");
    assert_eq!(mine["is_expandable"].as_bool(), Ok(false));
    let blocks: Vec<(i64, i64, i64, String)> = array(&mine["blocks"])
        .iter()
        .map(|b| {
            let b = map(b);
            let n = |k: &str| int(&b[k]);
            (
                n("address"),
                n("size"),
                n("requested_size"),
                b["state"].to_string(),
            )
        })
        .collect();
    let active = "active_allocated".to_string();
    assert_eq!(
        blocks,
        [
            (px, x, x_requested, active.clone()),
            (ptemp, x, x_requested, active),
            (
                ptemp + x,
                TAIL_AFTER_TWO_X as i64,
                0,
                "inactive".to_string()
            ),
        ]
    );

    let traces = array(&snap["device_traces"]);
    assert_eq!(traces.len(), 1, "one trace per device");
    let trace = array(&traces[0]);
    check_trace(&trace);
    let s20 = SEGMENT as i64;
    assert_eq!(
        events(&trace),
        [
            ("segment_alloc".to_string(), px, s20),
            ("alloc".to_string(), px, x_requested),
            ("alloc".to_string(), ptemp, x_requested),
        ]
    );

    // A free, and an out-of-memory error: its entry has device_free instead of addr.
    common::run(
        &mut s,
        "del temp; try { let huge = empty([1 << 40], #{device: \"cuda\"}); } catch (e) { }",
    );
    let trace = array(
        &array(&map(&common::dynamic(&mut s, "cuda::memory_snapshot()"))["device_traces"])[0],
    );
    check_trace(&trace);
    let got = events(&trace);
    assert_eq!(got.len(), 7, "{got:?}");
    assert_eq!(got[3].0, "snapshot", "the first snapshot is recorded");
    assert_eq!(got[4], ("free_requested".to_string(), ptemp, x_requested));
    assert_eq!(got[5], ("free_completed".to_string(), ptemp, x_requested));
    let (free, total) = {
        let info = array(&common::dynamic(&mut s, "cuda::mem_get_info()"));
        (int(&info[0]), int(&info[1]))
    };
    assert_eq!(got[6].0, "oom");
    assert!(
        got[6].1 > 0 && got[6].1 <= total,
        "device_free {} of {total}",
        got[6].1
    );
    if !common::real_gpu() {
        assert_eq!(got[6].1, free, "the simulated device's free bytes");
    }
    assert_eq!(got[6].2, 4 << 40, "the rounded request");
    common::run(&mut s, "cuda::record_memory_history(()); del x;");
    assert!(array(
        &array(&map(&common::dynamic(&mut s, "cuda::memory_snapshot()"))["device_traces"])[0]
    )
    .is_empty());
}
