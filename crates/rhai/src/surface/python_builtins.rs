//! Python's and PyTorch's spellings that are functions: `range(n)`, `print(a, b)`, `exit()`, `a @ b`, `t.T`, `device("cuda")`.
use super::documented::Documented;
use rhai::{Dynamic, Engine, ImmutableString, NativeCallContext, INT};

use super::convert::{device_of, OrRaise, Res};
use super::errors::raise;
use super::output::text_of;
use torchlet_core::tensor::Tensor;

/// Most arguments `print(a, b, …)` takes (Rhai registers each arity on its own).
const MAX_PRINT_ARGS: usize = 10;

/// Register the Python spellings.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_doc("range", &["range(n) or range(start, end[, step]) — the ints start..end, for for loops (Python's range)"], |end: INT| 0..end);
    register_print(engine);
    for (name, doc) in [("exit", "exit([status]) — end the script or the REPL (Python's exit; a notebook cell just stops)"), ("quit", "quit([status]) — the same as exit([status])")] {
        engine
            .register_doc(name, &[doc], || -> Res<()> { Err(raise("SystemExit", "")) })
            .register_fn(
                name,
                |context: NativeCallContext, code: Dynamic| -> Res<()> {
                    let text = if code.is_unit() {
                        String::new()
                    } else {
                        text_of(&context, code)
                    };
                    Err(raise("SystemExit", text))
                },
            );
    }
    // `a @ b` is Python's matrix product, with `*`'s precedence as in Python.
    engine
        .register_custom_operator("@", 180)
        .expect("@ is a reserved symbol Rhai lets a custom operator use");
    engine.register_fn("@", |a: Tensor, b: Tensor| {
        let out = a.matmul(&b);
        // CPython drops the left operand first (see operators.rs).
        drop(a);
        drop(b);
        out.or_raise()
    });
    // PyTorch's `.T` reverses every dimension (for 2-D tensors that is `t()`).
    engine.register_get_doc(
        "T",
        "t.T — t with its dimensions reversed: the transpose of a 2-D tensor (a view)",
        |t: &mut Tensor| {
            let reversed: Vec<isize> = (0..t.dim() as isize).rev().collect();
            t.permute(&reversed).or_raise()
        },
    );
    engine.register_doc(
        "device",
        &["device(\"cuda:0\") — a device name, checked (PyTorch's torch.device)"],
        |spec: &str| -> Res<String> {
            device_of(&Dynamic::from(ImmutableString::from(spec)))?;
            Ok(spec.trim().to_string())
        },
    );
}

/// `print()` and `print(a, b, …)`: the values' text separated by spaces, as Python prints them.
/// Rhai's own one-argument `print` stays as it is; Rhai sends what a `print` function returns to
/// the engine's print callback, so these return the line rather than write it.
fn register_print(engine: &mut Engine) {
    engine.register_doc(
        "print",
        &["print(x, …) — write the values, separated by spaces, and a newline to standard output"],
        String::new,
    );
    for arity in 2..=MAX_PRINT_ARGS {
        let types = vec![std::any::TypeId::of::<Dynamic>(); arity];
        engine.register_raw_fn("print", types, move |context, args| {
            let parts: Vec<String> = args
                .iter_mut()
                .map(|a| text_of(&context, std::mem::take(*a)))
                .collect();
            Ok(parts.join(" "))
        });
    }
}
