//! Output and help functions: `eprint`, `display`, `clear_output`, `input`, `help` (`print` is Rhai's).
use super::documented::Documented;
use std::rc::Rc;

use rhai::{Dynamic, Engine, ImmutableString, NativeCallContext};

use super::errors::raise;
use super::help::{self, Kind};
use crate::Frontend;

/// How a value prints: through the script's own `to_string`, so tensors print as PyTorch does.
pub fn text_of(context: &NativeCallContext, value: Dynamic) -> String {
    if let Some(text) = value.read_lock::<ImmutableString>() {
        return text.to_string();
    }
    context
        .call_native_fn::<ImmutableString>("to_string", (value.clone(),))
        .map(|s| s.to_string())
        .unwrap_or_else(|_| value.to_string())
}

/// What `help(name)` prints.
pub fn help_text(name: &str) -> String {
    match name.trim() {
        "" => help::overview(),
        "Tensor" | "tensor methods" => {
            let lines: Vec<&str> = help::of_kind(Kind::Property)
                .chain(help::of_kind(Kind::Method))
                .map(|entry| entry.doc.as_str())
                .collect();
            format!(
                "Tensor — properties and methods:\n  {}\n",
                lines.join("\n  ")
            )
        }
        "cuda" => {
            let lines: Vec<&str> = help::of_kind(Kind::CudaMember)
                .map(|entry| entry.doc.as_str())
                .collect();
            format!("cuda — GPU memory and devices:\n  {}\n", lines.join("\n  "))
        }
        other => match help::doc(other) {
            Some(doc) => format!("{doc}\n"),
            None => format!("No help for '{other}'. help() lists every name.\n"),
        },
    }
}

/// Register the output and help functions, writing to `frontend`.
pub(crate) fn register(engine: &mut Engine, frontend: Rc<dyn Frontend>) {
    let out = frontend.clone();
    engine.register_doc(
        "eprint",
        &["eprint(x) — write x and a newline to standard error"],
        move |context: NativeCallContext, value: Dynamic| {
            out.stderr(&format!("{}\n", text_of(&context, value)));
        },
    );
    let out = frontend.clone();
    engine.register_doc(
        "display",
        &["display(x) — show x as rich output (HTML in a notebook)"],
        move |value: Dynamic| {
            if let Some(data) = super::display::of_value(&value) {
                out.display(&data);
            }
        },
    );
    let out = frontend.clone();
    engine.register_doc(
        "clear_output",
        &["clear_output([wait]) — clear the cell's output (notebooks)"],
        move || out.clear_output(false),
    );
    let out = frontend.clone();
    engine.register_fn("clear_output", move |wait: bool| out.clear_output(wait));
    let out = frontend.clone();
    engine.register_doc(
        "input",
        &["input([prompt]) — read a line of text"],
        move || read_line(&*out, ""),
    );
    let out = frontend.clone();
    engine.register_fn("input", move |prompt: &str| read_line(&*out, prompt));
    let out = frontend.clone();
    engine.register_doc(
        "help",
        &["help(name) or name? — what a function, method, property or cuda:: member does"],
        move || out.stdout(&help::overview()),
    );
    let out = frontend;
    engine.register_fn("help", move |topic: Dynamic| {
        if let Some(t) = topic.read_lock::<torchlet_core::tensor::Tensor>() {
            return out.stdout(&describe_tensor(&t));
        }
        let name = match topic.read_lock::<ImmutableString>() {
            Some(name) => name.to_string(),
            None => topic.type_name().to_string(),
        };
        out.stdout(&help_text(&name));
    });
}

/// `help(t)` / `t?` for a tensor value: what it is and where its memory lives.
fn describe_tensor(t: &torchlet_core::tensor::Tensor) -> String {
    format!(
        "Tensor of shape {:?}, {}, on {}, {} bytes, requires_grad={}{}; help(\"Tensor\") lists its methods\n",
        t.shape(),
        t.dtype().name(),
        t.device(),
        t.nbytes(),
        t.requires_grad(),
        t.grad_fn_name().map(|n| format!(", grad_fn={n}")).unwrap_or_default(),
    )
}

fn read_line(
    frontend: &dyn Frontend,
    prompt: &str,
) -> Result<ImmutableString, Box<rhai::EvalAltResult>> {
    frontend
        .input(prompt, false)
        .map(Into::into)
        .map_err(|message| raise("EOFError", message))
}

/// Turn a whole input of the form `name?` (or `?name`, `cuda::name?`, `t.name?`) into `help("name")`,
/// or into `help(name)` when `name` is one of the session's variables (`is_variable`).
pub fn rewrite_help_query_in(code: &str, is_variable: impl Fn(&str) -> bool) -> Option<String> {
    let text = code.trim();
    let name = text
        .strip_suffix('?')
        .or_else(|| text.strip_prefix('?'))?
        .trim();
    // As in Python, a name asks about the value it is bound to.
    if is_variable(name) {
        return Some(format!("help({name})"));
    }
    rewrite_help_query(code)
}

/// Turn a whole input of the form `name?` (or `?name`, `cuda::name?`, `t.name?`) into `help("name")`.
pub fn rewrite_help_query(code: &str) -> Option<String> {
    let text = code.trim();
    let name = text
        .strip_suffix('?')
        .or_else(|| text.strip_prefix('?'))?
        .trim();
    let is_word = |w: &str| {
        !w.is_empty()
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !w.starts_with(|c: char| c.is_ascii_digit())
    };
    // PyTorch's module paths name torchlet's names (as the session's spelling rewrite reads them).
    let cuda_member = name
        .strip_prefix("torch.cuda.")
        .map(|m| format!("cuda::{m}"));
    let name = match &cuda_member {
        Some(member) => member.as_str(),
        None => ["torch.nn.functional.", "torch.", "F."]
            .iter()
            .find_map(|p| name.strip_prefix(p))
            .unwrap_or(name),
    };
    let topic = if let Some(member) = name.strip_prefix("cuda::") {
        is_word(member).then(|| name.to_string())
    } else if let Some((_, member)) = name.split_once('.') {
        // `t.sum?` asks about the method, whatever `t` is.
        is_word(member).then(|| format!("Tensor.{member}"))
    } else {
        is_word(name).then(|| name.to_string())
    }?;
    Some(format!("help({topic:?})"))
}
