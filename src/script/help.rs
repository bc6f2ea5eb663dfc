//! The language's names with a one-line doc each: for `help(name)`, `name?`, completion and `:vars`.

/// One documented name: what to type, and one line saying what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name as typed (`zeros`, `shape`, `memory_allocated`).
    pub name: &'static str,
    /// Usage and purpose on one line.
    pub doc: &'static str,
}

use std::sync::LazyLock;

use crate::tensor::UNARY_METHODS;

const fn e(name: &'static str, doc: &'static str) -> Entry {
    Entry { name, doc }
}

/// Functions callable at top level.
pub static FUNCTIONS: &[Entry] = &[
    e("tensor", "tensor(nested_array[, opts]) — a tensor holding these values; opts: #{dtype, device, requires_grad}"),
    e("zeros", "zeros(d0, d1, …) or zeros(shape_array[, opts]) — a tensor filled with 0"),
    e("ones", "ones(d0, d1, …) or ones(shape_array[, opts]) — a tensor filled with 1"),
    e("empty", "empty(d0, d1, …) or empty(shape_array[, opts]) — an uninitialised tensor"),
    e("rand", "rand(d0, d1, …) or rand(shape_array[, opts]) — uniform samples in [0, 1)"),
    e("randn", "randn(d0, d1, …) or randn(shape_array[, opts]) — standard normal samples"),
    e("full", "full(shape_array, value[, opts]) — a tensor filled with value"),
    e("arange", "arange(end) or arange(start, end[, step][, opts]) — evenly spaced values in [start, end)"),
    e("linspace", "linspace(start, end, steps[, opts]) — steps values from start to end inclusive"),
    e("eye", "eye(n[, m][, opts]) — an identity matrix"),
    e("zeros_like", "zeros_like(t) — zeros with t's shape, dtype and device"),
    e("ones_like", "ones_like(t) — ones with t's shape, dtype and device"),
    e("empty_like", "empty_like(t) — uninitialised, with t's shape, dtype and device"),
    e("randn_like", "randn_like(t) — normal samples with t's shape, dtype and device"),
    e("manual_seed", "manual_seed(n) — seed the random generators, for repeatable runs"),
    e("mse_loss", "mse_loss(input, target) — mean squared error"),
    e("cross_entropy", "cross_entropy(logits, targets) — softmax cross-entropy; targets are int64 class indices"),
    e("matmul", "matmul(a, b) — matrix product (also a.matmul(b), a.mm(b))"),
    e("is_grad_enabled", "is_grad_enabled() — whether operations record the autograd graph now"),
    e("empty_cache", "empty_cache() — release cached, wholly free GPU segments (cuda::empty_cache)"),
    e("memory_holders", "memory_holders([device]) — every live GPU block, biggest first, with what holds it (variables, .grad, graphs)"),
    e("empty_cache_report", "empty_cache_report([device]) — the segments empty_cache() cannot release, and the variables that pin each"),
    e("explain_free", "explain_free(x) — what del x, x = x.cpu(), empty_cache() and both would free right now, and why; .ways gives the rows"),
    e("memory_allocated", "memory_allocated([device]) — bytes held by live tensors on the GPU"),
    e("max_memory_allocated", "max_memory_allocated([device]) — peak of memory_allocated"),
    e("memory_reserved", "memory_reserved([device]) — bytes the caching allocator holds from the GPU"),
    e("max_memory_reserved", "max_memory_reserved([device]) — peak of memory_reserved"),
    e("memory_summary", "memory_summary([#{device, abbreviated}]) — the allocator's table, as text"),
    e("print", "print(x, …) — write the values, separated by spaces, and a newline to standard output"),
    e("eprint", "eprint(x) — write x and a newline to standard error"),
    e("display", "display(x) — show x as rich output (HTML in a notebook)"),
    e("plot_memory", "plot_memory([device]) — chart GPU memory by variable over the recorded statements (SVG in a notebook); needs cuda::record_memory_history()"),
    e("clear_output", "clear_output([wait]) — clear the cell's output (notebooks)"),
    e("input", "input([prompt]) — read a line of text"),
    e("help", "help(name) or name? — what a function, method, property or cuda:: member does"),
    e("range", "range(n) or range(start, end[, step]) — the ints start..end, for for loops (Python's range)"),
    e("exit", "exit([status]) — end the script or the REPL (Python's exit; a notebook cell just stops)"),
    e("quit", "quit([status]) — the same as exit([status])"),
    e("device", "device(\"cuda:0\") — a device name, checked (PyTorch's torch.device)"),
    e("floordiv", "floordiv(a, b) — Python's a // b (rounds toward -infinity); `//` starts a comment here"),
    e("int", "int(x) — a number or string (\"42\") as an int, truncating floats toward zero; t.item() for a tensor"),
    e("float", "float(x) — a number or string (\"2.5\", \"inf\") as a float; t.float() is a float32 tensor"),
    e("round", "round(x) — the nearest int, ties to even (round(2.5) == 2); round(x, n) — to n decimals"),
    e("abs", "abs(x) — a number's absolute value (t.abs() for a tensor)"),
    e("min", "min(a, b) or min(array) — the smaller number, or the smallest in an array (t.min() for a tensor)"),
    e("max", "max(a, b) or max(array) — the larger number, or the largest in an array (t.max() for a tensor)"),
    e("bool", "bool(x) — Python's truth value: a one-element tensor is true when nonzero; () and empty are false"),
    e("fmt_bytes", "fmt_bytes(n) — a byte count in binary units: fmt_bytes(4000256) is \"3.81 MiB\""),
];

/// Statements that are not function calls.
pub static KEYWORDS: &[Entry] = &[
    e("del", "del x, y — forget the variables; their tensors are freed at once if nothing else holds them"),
    e("no_grad", "no_grad { … } — run the block without recording the autograd graph"),
    e("enable_grad", "enable_grad { … } — record the autograd graph inside the block, even under no_grad"),
    e("inference_mode", "inference_mode { … } — like no_grad; tensors made inside are inference tensors"),
    e("import", "import torch (or import torch.nn.functional as F) — accepted and ignored: torch.NAME, torch.cuda.NAME and F.NAME are NAME and cuda::NAME"),
];

/// Methods of a tensor (`t.name(…)`).
pub static TENSOR_METHODS: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    let unary = UNARY_METHODS.iter().map(|m| e(m.name, m.help));
    let head = METHODS_HEAD.iter().copied();
    head.chain(unary)
        .chain(METHODS_TAIL.iter().copied())
        .collect()
});

/// Tensor methods before the elementwise ones (those come from `tensor::UNARY_METHODS`).
const METHODS_HEAD: &[Entry] = &[
    e("cuda", "t.cuda([n]) — a copy on cuda:n (the current device, cuda::current_device(), by default)"),
    e("cpu", "t.cpu() — a copy in host memory"),
    e("to", "t.to(\"cuda:0\" | \"float16\" | #{device, dtype}) — a copy on that device or of that dtype"),
    e("half", "t.half() — a float16 copy"),
    e("float", "t.float() — a float32 copy"),
    e("double", "t.double() — a float64 copy"),
    e("bfloat16", "t.bfloat16() — a bfloat16 copy"),
    e("long", "t.long() — an int64 copy"),
    e("size", "t.size([dim]) — the shape as an array, or one dimension's length"),
    e("dim", "t.dim() — the number of dimensions"),
    e("numel", "t.numel() — the number of elements"),
    e("element_size", "t.element_size() — bytes per element"),
    e("data_ptr", "t.data_ptr() — address of the first element"),
    e("item", "t.item() — the value of a one-element tensor"),
    e("tolist", "t.tolist() — the values as (nested) arrays"),
    e("pow", "t.pow(exponent) — elementwise power by a number or a tensor (also t ** exponent)"),
    e("add", "a.add(b) — a + b"),
    e("sub", "a.sub(b) — a - b"),
    e("mul", "a.mul(b) — a * b"),
    e("div", "a.div(b) — a / b"),
    e("gt", "a.gt(b) — a > b elementwise, a bool tensor (b a tensor or a number)"),
    e("lt", "a.lt(b) — a < b elementwise, a bool tensor"),
    e("ge", "a.ge(b) — a >= b elementwise, a bool tensor"),
    e("le", "a.le(b) — a <= b elementwise, a bool tensor"),
    e("eq", "a.eq(b) — a == b elementwise, a bool tensor"),
    e("ne", "a.ne(b) — a != b elementwise, a bool tensor"),
    e("matmul", "a.matmul(b) — matrix product"),
    e("mm", "a.mm(b) — matrix product of two 2-D tensors"),
    e("t", "t.t() — transpose of a 2-D tensor (a view)"),
    e("transpose", "t.transpose(d0, d1) — swap two dimensions (a view)"),
    e("reshape", "t.reshape(shape_array) or t.reshape(d0, d1, …) — same values, new shape"),
    e("view", "t.view(shape_array) or t.view(d0, d1, …) — a view with a new shape"),
    e("flatten", "t.flatten() — a 1-D tensor of all elements"),
    e("unsqueeze", "t.unsqueeze(dim) — insert a dimension of size 1"),
    e("squeeze", "t.squeeze([dim]) — remove dimensions of size 1"),
    e("permute", "t.permute(dims_array) — reorder dimensions (a view)"),
    e("contiguous", "t.contiguous() — a contiguous tensor with the same values"),
    e("clone", "t.clone() — a copy with its own memory"),
    e("detach", "t.detach() — the same memory, cut from the autograd graph"),
];

/// Tensor methods after the elementwise ones.
const METHODS_TAIL: &[Entry] = &[
    e("clamp", "t.clamp(min, max) — limit values to [min, max]; pass () for no bound"),
    e("sum", "t.sum([dim[, keepdim]]) — sum of all elements, or along dim"),
    e("mean", "t.mean([dim[, keepdim]]) — mean of all elements, or along dim"),
    e("max", "t.max([dim[, keepdim]]) — largest element, or along dim"),
    e("min", "t.min([dim[, keepdim]]) — smallest element, or along dim"),
    e("argmax", "t.argmax([dim[, keepdim]]) — index of the largest element"),
    e("softmax", "t.softmax(dim) — softmax along dim"),
    e("log_softmax", "t.log_softmax(dim) — log of softmax along dim"),
    e("add_", "t.add_(other) — add in place (also t += other)"),
    e("sub_", "t.sub_(other) — subtract in place (also t -= other)"),
    e("mul_", "t.mul_(other) — multiply in place (also t *= other)"),
    e("div_", "t.div_(other) — divide in place (also t /= other); an integer t cannot hold the result"),
    e("zero_", "t.zero_() — fill with 0 in place"),
    e("fill_", "t.fill_(value) — fill with value in place"),
    e("narrow", "t.narrow(dim, start, length) — a slice along dim (a view)"),
    e("select", "t.select(dim, i) — the i-th slice along dim, which goes away (a view; t[[.., i]] for dim 1)"),
    e("requires_grad_", "t.requires_grad_([flag]) — start (or stop) recording gradients for t"),
    e("backward", "t.backward([#{retain_graph: true}]) — compute gradients into the leaves' .grad"),
];

/// Properties of a tensor (`t.name`).
pub static TENSOR_PROPERTIES: &[Entry] = &[
    e("shape", "t.shape — the shape, as an array"),
    e("dtype", "t.dtype — the element type, e.g. \"float32\""),
    e("device", "t.device — where the data lives, e.g. \"cuda:0\""),
    e("is_cuda", "t.is_cuda — whether the data is on a GPU"),
    e(
        "nbytes",
        "t.nbytes — bytes of the elements (numel × element_size)",
    ),
    e(
        "requires_grad",
        "t.requires_grad — whether gradients are recorded for t (settable)",
    ),
    e(
        "grad",
        "t.grad — the accumulated gradient, or (); set to () to free it",
    ),
    e(
        "grad_fn",
        "t.grad_fn — name of the graph node that made t, or ()",
    ),
    e(
        "T",
        "t.T — t with its dimensions reversed: the transpose of a 2-D tensor (a view)",
    ),
    e(
        "is_leaf",
        "t.is_leaf — whether t was made by the user rather than by a recorded op",
    ),
];

/// Members of the `cuda` module (`cuda::name(…)`); each takes an optional device (n or "cuda:n").
pub static CUDA_MEMBERS: &[Entry] = &[
    e("is_available", "cuda::is_available() — whether a GPU (real or simulated) can be used"),
    e("device_count", "cuda::device_count() — how many GPUs there are"),
    e("get_device_name", "cuda::get_device_name([device]) — the GPU's name"),
    e("current_device", "cuda::current_device() — the index `cuda` without a number means"),
    e("set_device", "cuda::set_device(device) — choose what `cuda` without a number means"),
    e("synchronize", "cuda::synchronize([device]) — wait for the GPU's queued work"),
    e("mem_get_info", "cuda::mem_get_info([device]) — [free, total] bytes device-wide"),
    e("memory_allocated", "cuda::memory_allocated([device]) — bytes held by live tensors"),
    e("max_memory_allocated", "cuda::max_memory_allocated([device]) — peak of memory_allocated"),
    e("memory_reserved", "cuda::memory_reserved([device]) — bytes the caching allocator holds"),
    e("max_memory_reserved", "cuda::max_memory_reserved([device]) — peak of memory_reserved"),
    e("memory_stats", "cuda::memory_stats([device]) — the allocator's statistics, PyTorch's flat keys"),
    e("memory_summary", "cuda::memory_summary([#{device, abbreviated}]) — the allocator's table, as text"),
    e("reset_peak_memory_stats", "cuda::reset_peak_memory_stats([device]) — restart the peak figures"),
    e("reset_accumulated_memory_stats", "cuda::reset_accumulated_memory_stats([device]) — zero the counters"),
    e("empty_cache", "cuda::empty_cache() — release cached, wholly free segments to the GPU"),
    e("memory_snapshot", "cuda::memory_snapshot([device]) — segments and blocks, as a map"),
    e("dump_snapshot", "cuda::dump_snapshot(path) — write segments and history for PyTorch's memory viewer (.json, or .pickle)"),
    e("record_memory_history", "cuda::record_memory_history([enabled[, max_entries[, device]]]) — trace allocations (\"all\", \"state\" or ())"),
    e("all_reduce", "cuda::all_reduce([t0, t1, …][, op]) — in place: each tensor (one per CUDA device) becomes the \"sum\" (or \"prod\", \"max\", \"min\") of all; NCCL on real GPUs"),
    e("broadcast", "cuda::broadcast([t0, t1, …][, src]) — in place: each tensor (one per CUDA device) becomes a copy of the list's element src (default 0)"),
    e("all_gather", "cuda::all_gather([t0, t1, …]) — one new tensor per device, shaped [len, …shape], whose row r is the list's tensor r"),
    e("set_per_process_memory_fraction", "cuda::set_per_process_memory_fraction(fraction[, device]) — cap what the allocator may reserve"),
];

fn find(table: &'static [Entry], name: &str) -> Option<&'static Entry> {
    table.iter().find(|entry| entry.name == name)
}

/// Names of the top-level functions.
pub fn names() -> Vec<&'static str> {
    FUNCTIONS.iter().map(|entry| entry.name).collect()
}

/// Names of tensor methods and properties, for completion after `t.`.
pub fn tensor_member_names() -> Vec<&'static str> {
    TENSOR_METHODS
        .iter()
        .chain(TENSOR_PROPERTIES)
        .map(|entry| entry.name)
        .collect()
}

/// Names of the `cuda` module's members, for completion after `cuda::`.
pub fn cuda_names() -> Vec<&'static str> {
    CUDA_MEMBERS.iter().map(|entry| entry.name).collect()
}

/// Names of the statements `del`, `no_grad` …
pub fn keyword_names() -> Vec<&'static str> {
    KEYWORDS.iter().map(|entry| entry.name).collect()
}

/// Whether `name` is part of the language (function, keyword, tensor member or cuda member).
pub fn is_known(name: &str) -> bool {
    doc(name).is_some()
}

/// The one-line doc of `name`: `zeros`, `cuda::memory_allocated`, `Tensor.shape`, or a bare member name.
pub fn doc(name: &str) -> Option<&'static str> {
    let name = name.trim();
    if let Some(member) = name.strip_prefix("cuda::") {
        return find(CUDA_MEMBERS, member).map(|entry| entry.doc);
    }
    if let Some(member) = name
        .strip_prefix("Tensor.")
        .or_else(|| name.strip_prefix("torch.Tensor."))
    {
        return find(&TENSOR_METHODS, member)
            .or_else(|| find(TENSOR_PROPERTIES, member))
            .map(|entry| entry.doc);
    }
    find(FUNCTIONS, name)
        .or_else(|| find(KEYWORDS, name))
        .or_else(|| find(&TENSOR_METHODS, name))
        .or_else(|| find(TENSOR_PROPERTIES, name))
        .or_else(|| find(CUDA_MEMBERS, name))
        .map(|entry| entry.doc)
}

/// What `help()` with no argument prints: every name, grouped.
pub fn overview() -> String {
    let line = |title: &str, names: Vec<&str>| format!("{title}:\n  {}\n", names.join(", "));
    let mut text = String::from("torchlet — help(name) or name? explains one name.\n");
    text += &line("Functions", names());
    text += &line("Statements", keyword_names());
    text += &line(
        "Tensor methods",
        TENSOR_METHODS.iter().map(|e| e.name).collect(),
    );
    text += &line(
        "Tensor properties",
        TENSOR_PROPERTIES.iter().map(|e| e.name).collect(),
    );
    text += &line("cuda:: members", cuda_names());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_documented_once_per_table() {
        for table in [
            FUNCTIONS,
            KEYWORDS,
            &TENSOR_METHODS,
            TENSOR_PROPERTIES,
            CUDA_MEMBERS,
        ] {
            let mut names: Vec<_> = table.iter().map(|e| e.name).collect();
            let count = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), count, "a name is listed twice");
            assert!(table
                .iter()
                .all(|e| !e.doc.is_empty() && !e.doc.contains('\n')));
        }
    }

    /// The names the engine really has, by kind: `name(`, `get$name(`, `cuda::name(`.
    fn registered() -> Vec<String> {
        let frontend = std::rc::Rc::new(crate::session::CapturedOutput::default());
        let engine = crate::script::new_engine(frontend, Default::default());
        engine.gen_fn_signatures(false)
    }

    #[test]
    fn every_documented_name_is_registered() {
        let signatures = registered();
        let has = |prefix: String| signatures.iter().any(|s| s.starts_with(&prefix));
        // Custom syntax (they read the caller's variables), not registered functions.
        let syntax = ["memory_holders", "explain_free", "empty_cache_report"];
        for entry in FUNCTIONS
            .iter()
            .chain(TENSOR_METHODS.iter())
            .filter(|e| e.name != "print" && !syntax.contains(&e.name))
        {
            assert!(
                has(format!("{}(", entry.name)),
                "{} is documented but not registered",
                entry.name
            );
        }
        for entry in TENSOR_PROPERTIES {
            assert!(
                has(format!("get${}(", entry.name)),
                "property {} is not registered",
                entry.name
            );
        }
        for entry in CUDA_MEMBERS {
            assert!(
                has(format!("cuda::{}(", entry.name)),
                "cuda::{} is not registered",
                entry.name
            );
        }
    }

    #[test]
    fn every_registered_name_is_documented() {
        let internal = [
            "to_string",
            "to_debug",
            "index$get$",
            "get$kind",
            "get$message",
            // explain_free's report: its help entry says what `.ways` holds.
            "get$ways",
        ];
        for signature in registered() {
            let name = signature.split('(').next().unwrap();
            let bare = name.trim_start_matches("get$").trim_start_matches("set$");
            let symbol = !bare.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            // `__discard`, `__assign`, `__line`: called by the lifetime rewrite, not by users.
            let rewrite_helper = name.starts_with("__");
            if symbol || rewrite_helper || internal.contains(&name) {
                continue;
            }
            assert!(doc(bare).is_some(), "{signature} has no help entry");
        }
    }

    #[test]
    fn qualified_names_find_their_table() {
        assert!(doc("cuda::memory_allocated").unwrap().starts_with("cuda::"));
        assert!(doc("memory_allocated")
            .unwrap()
            .starts_with("memory_allocated("));
        assert!(doc("Tensor.shape").unwrap().starts_with("t.shape"));
        assert_eq!(doc("cuda::zeros"), None);
        assert_eq!(doc("nonsense"), None);
    }
}
