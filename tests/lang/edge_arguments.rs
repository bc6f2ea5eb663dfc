//! Every tensor method and many functions over edge-case arguments (0-d, empty, transposed, half,
//! bool tensors; negative, zero and huge numbers; wrong types) give a value or an error, never a
//! panic or an abort, and the session answers afterwards, on every device.
//!
//! A sweep like this, run one snippet a process, found `t.size(0)` of a 0-d tensor panicking and
//! `eye(1 << 20)`, `linspace(0, 1, 1 << 40)` and `zeros(0).chunk(1 << 40)` aborting on host memory.
use crate::common;
use common::device_test;

use torchlet_session::Session;

/// Tensors to call methods on; `dev` is bound to the device's options.
const SUBJECTS: &[&str] = &[
    "tensor(1.0, dev)",
    "zeros([0], dev)",
    "zeros([0, 3], dev)",
    "ones([2, 3], dev)",
    "arange(6).to(devname).reshape(2, 3)",
    "ones([2, 3], dev).t()",
    "ones([2, 3], dev).half()",
    "tensor([true, false], dev)",
];

/// Method calls, each applied to every subject.
const METHODS: &[&str] = &[
    "sum(0)",
    "sum(-1)",
    "sum(5)",
    "mean(0)",
    "max()",
    "max(0)",
    "min()",
    "argmax()",
    "argmax(0)",
    "argmin()",
    "argmin(0)",
    "softmax(0)",
    "softmax(-1)",
    "log_softmax(0)",
    "size(0)",
    "size(-1)",
    "stride(0)",
    "stride()",
    "storage_offset()",
    "is_contiguous()",
    "view(-1)",
    "view(0)",
    "reshape(-1, 0)",
    "reshape(0, -1)",
    "unsqueeze(0)",
    "unsqueeze(-1)",
    "unsqueeze(5)",
    "squeeze()",
    "squeeze(0)",
    "transpose(0, 1)",
    "permute([1, 0])",
    "permute([0])",
    "flatten()",
    "narrow(0, 0, 0)",
    "narrow(0, 5, 1)",
    "narrow(0, -1, 1)",
    "expand(3, -1)",
    "repeat(2, 2)",
    "repeat(0)",
    "select(0, 0)",
    "item()",
    "tolist()",
    "t()",
    "masked_fill(tensor(true), 1.0)",
    "clamp(#{min: 1.0})",
    "pow(2)",
    "matmul(ones(3))",
    "mm(ones(3, 1))",
    "float()",
    "long()",
    "half()",
    "to(\"int64\")",
    "abs()",
    "neg()",
    "exp()",
    "gelu()",
    "relu()",
    "detach()",
    "clone()",
    "contiguous()",
    "backward()",
    "requires_grad_()",
    "zero_()",
    "fill_(2)",
    "add_(1)",
    "div_(0)",
    "cuda()",
    "cpu()",
    "[0]",
    "[-1]",
    "[5]",
    "[0][0]",
];

/// Whole expressions; `{a}` is replaced by each of `VALUES`.
const CALLS: &[&str] = &[
    "zeros({a})",
    "ones({a}, 2)",
    "randn({a})",
    "arange({a})",
    "full({a}, 1.0)",
    "tensor({a})",
    "empty({a})",
    "eye({a})",
    "linspace(0, 1, {a})",
    "cat([{a}, {a}])",
    "stack([{a}, {a}])",
    "matmul({a}, {a})",
    "{a} + ones(2, 3)",
    "{a} / 0",
    "{a} ** -1",
    "{a}.chunk({a})",
    "ones(2, 3).split({a})",
    "ones(2, 3).expand({a})",
    "ones(6).view({a})",
    "ones(2, 3).topk({a})",
    "ones(2).index_select(0, {a})",
    "cross_entropy({a}, {a})",
    "mse_loss({a}, ones(2))",
    "dropout(ones(2), {a})",
    "randint({a}, 5)",
    "memory_holders({a})",
    "fmt_bytes({a})",
    "cuda::set_device({a})",
    "cuda::memory_stats({a})",
    "cuda::set_per_process_memory_fraction({a})",
];

const VALUES: &[&str] = &[
    "tensor(1.0)",
    "zeros(0)",
    "ones(2, 3)",
    "5",
    "-1",
    "0",
    "2.5",
    "\"x\"",
    "[]",
    "[1, 2]",
    "()",
    "#{}",
    "1 << 40",
    "true",
];

/// Run `code` in `s`; a panic (which the session reports as an InternalError) is returned as an
/// error naming the snippet.
fn survives(s: &mut Session, code: &str) -> Result<(), String> {
    let outcome = s.execute(&format!("try {{ let r = {code}; }} catch (e) {{ }}"));
    match outcome.error {
        Some(e) if e.kind == "InternalError" => Err(format!("panicked: {code}: {}", e.message)),
        _ => Ok(()),
    }
}

fn session(device: &str) -> Session {
    common::session_with(
        "<edge>",
        &format!("let devname = \"{device}\"; let dev = #{{device: devname}};"),
    )
}

device_test!(
    fn edge_arguments_give_values_or_errors_never_panics(device: &str) {
        let _g = common::exclusive();
        let mut panics = Vec::new();
        let mut ran = 0;
        let mut s = session(device);
        for subject in SUBJECTS {
            for method in METHODS {
                let dot = if method.starts_with('[') { "" } else { "." };
                ran += 1;
                if let Err(e) = survives(&mut s, &format!("{subject}{dot}{method}")) {
                    panics.push(format!("{device}: {e}"));
                }
            }
        }
        for call in CALLS {
            for value in VALUES {
                ran += 1;
                if let Err(e) = survives(&mut s, &call.replace("{a}", value)) {
                    panics.push(format!("{device}: {e}"));
                }
            }
        }
        // The session still computes after all of it.
        let outcome = s.execute("(ones([2, 2], dev) * 3).sum().item()");
        assert_eq!(
            outcome.value.map(|v| v.plain),
            Some("12.0".into()),
            "{device}"
        );
        assert!(
            panics.is_empty(),
            "{} of {ran} snippets panicked:\n{}",
            panics.len(),
            panics.join("\n")
        );
    }
);
