//! The Python front ends' magics (`%mem`, `%vars`, `%holders`, `%why NAME`, `%trace on` …): the
//! Rhai language's `:commands` that make sense for Python, read through a Python session's
//! names. One table drives running them, `%help` and completion.

use std::time::Duration;

use torchlet_core::tensor::Tensor;
use torchlet_python::Python;

use super::memory::{self, DeviceMemory};
use super::{explain_free, holders, DisplayData};

/// What a magic gives: what to show, or why it was refused.
pub type MagicAnswer = Result<DisplayData, String>;

/// One magic: its name, its arguments, what it does, and the handler that does it.
#[derive(Clone, Copy)]
pub struct PythonMagic {
    /// The name after `%`.
    pub name: &'static str,
    /// Its arguments, as `%help` shows them.
    pub args: &'static str,
    /// A one-line description.
    pub doc: &'static str,
    run: fn(&mut PythonMagics, &Python, &str) -> MagicAnswer,
}

/// Every magic, in the order `%help` lists them.
pub const PYTHON_MAGICS: &[PythonMagic] = &[
    magic("help", "", "list the magics", |_, _, _| Ok(help())),
    magic(
        "mem",
        "",
        "allocated, reserved and peak memory of each CUDA device",
        |magics, _, _| {
            let text = memory::mem_text(&magics.memplot)?;
            Ok(DisplayData::preformatted(text))
        },
    ),
    magic(
        "summary",
        "",
        "the allocator's memory_summary() of each CUDA device",
        |_, _, _| Ok(DisplayData::preformatted(memory::summaries_text()?)),
    ),
    magic(
        "vars",
        "",
        "variables: tensors by path (model.fc.weight), shape, dtype, device, bytes, storage",
        |_, python, _| Ok(vars(python)),
    ),
    magic(
        "holders",
        "[device]",
        "every live GPU block, biggest first, and what holds it",
        |_, python, arg| {
            let device = device_arg(arg)?;
            Ok(holders::table(device, &python.memory_holders(device)))
        },
    ),
    magic(
        "why",
        "NAME",
        "what del, .cpu(), empty_cache() would free of NAME (x, model.fc.weight) right now",
        |_, python, name| why(python, name),
    ),
    magic(
        "trace",
        "on|off",
        "after each input, print how device memory changed",
        |magics, _, arg| {
            magics.trace = switch("trace", arg)?;
            Ok(switched("memory trace", magics.trace))
        },
    ),
    magic(
        "memplot",
        "on|off",
        "after each input, draw one chart of GPU memory by variable (a notebook's SVG)",
        |magics, _, arg| {
            let on = switch("memplot", arg)?;
            Ok(DisplayData::text(super::memplot::switch(
                &magics.memplot,
                on,
            )?))
        },
    ),
    magic(
        "time",
        "on|off",
        "after each input, print the time it took",
        |magics, _, arg| {
            magics.time = switch("time", arg)?;
            Ok(switched("timing", magics.time))
        },
    ),
];

const fn magic(
    name: &'static str,
    args: &'static str,
    doc: &'static str,
    run: fn(&mut PythonMagics, &Python, &str) -> MagicAnswer,
) -> PythonMagic {
    PythonMagic {
        name,
        args,
        doc,
        run,
    }
}

/// The switches the magics set, kept by the front end for the session's life.
#[derive(Default)]
pub struct PythonMagics {
    /// `%trace on`: print the change in device memory after each input.
    pub trace: bool,
    /// `%time on`: print each input's wall time.
    pub time: bool,
    /// `%memplot on`'s chart and `%mem`'s samples.
    memplot: std::cell::RefCell<super::memplot::MemPlot>,
}

/// What to show after an input: the trace and time lines, and the memory chart when it is on.
pub struct AfterInput {
    /// Lines for standard output.
    pub lines: Vec<String>,
    /// `%memplot on`'s chart, redrawn.
    pub picture: Option<super::Picture>,
}

/// Device memory before an input ran, when tracing.
pub struct Before(Option<Vec<DeviceMemory>>);

impl PythonMagics {
    /// Run one magic line (`mem`, `why model.fc.weight`: the text after `%`).
    pub fn run(&mut self, python: &Python, line: &str) -> MagicAnswer {
        let (name, arg) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        let Some(found) = PYTHON_MAGICS.iter().find(|m| m.name == name) else {
            return Err(format!(
                "UsageError: Line magic function `%{name}` not found; %help lists torchlet's"
            ));
        };
        (found.run)(self, python, arg.trim())
    }

    /// What the trace compares the next input against.
    pub fn before_input(&self) -> Before {
        Before(self.trace.then(|| memory::sample().ok()).flatten())
    }

    /// What `%trace on`, `%time on` and `%memplot on` show after an input that took `elapsed`.
    pub fn after_input(&self, before: Before, elapsed: Duration) -> AfterInput {
        let mut lines = Vec::new();
        if let (Some(before), Ok(after)) = (before.0, memory::sample()) {
            lines.push(super::trace::change(&before, &after));
        }
        if self.time {
            lines.push(format!("Wall time: {}", super::trace::duration(elapsed)));
        }
        AfterInput {
            lines,
            picture: super::memplot::redrawn(&self.memplot),
        }
    }
}

/// A cell's leading magic lines (`%mem`, the text after `%`) and the Python after them, padded
/// with blank lines so that its line numbers stay the cell's.
pub fn split_magics(cell: &str) -> (Vec<&str>, String) {
    let mut magics = Vec::new();
    let mut lines = cell.lines();
    let mut skipped = 0;
    for line in lines.by_ref() {
        skipped += 1;
        match line.trim_start().strip_prefix('%') {
            Some(m) if !m.starts_with('%') && line.starts_with('%') => magics.push(m),
            _ if line.trim().is_empty() => {}
            _ => {
                let rest: Vec<&str> = std::iter::once(line).chain(lines).collect();
                let padding = "\n".repeat(skipped - 1);
                return (magics, format!("{padding}{}", rest.join("\n")));
            }
        }
    }
    (magics, String::new())
}

/// The magic names that complete `prefix`.
pub fn complete_magic(prefix: &str) -> Vec<String> {
    PYTHON_MAGICS
        .iter()
        .filter(|m| m.name.starts_with(prefix))
        .map(|m| format!("%{}", m.name))
        .collect()
}

fn help() -> DisplayData {
    let mut text = String::from("torchlet's magics (a line of its own, before the code):\n");
    for m in PYTHON_MAGICS {
        let usage = format!("%{} {}", m.name, m.args);
        text += &format!("  {:<22} {}\n", usage.trim_end(), m.doc);
    }
    text +=
        "  %%ledger (first line)  run the rest of the cell with the per-line ledger (notebook)\n";
    text += "In code: import torchlet; torchlet.memory_holders(), torchlet.explain_free(x).";
    DisplayData::preformatted(text)
}

fn why(python: &Python, name: &str) -> MagicAnswer {
    if name.is_empty() {
        return Err("UsageError: %why needs a variable: %why x".into());
    }
    match python.explain_free(name, torchlet_core::device::current_device()) {
        Some((path, ways)) => Ok(explain_free::table(&path, &ways)),
        None => Err(format!(
            "NameError: nothing named '{name}' holds a value (a variable, or a path into one \
             such as model.fc.weight)"
        )),
    }
}

/// `%vars`: the tensors every variable reaches, by path, then the other variables.
fn vars(python: &Python) -> DisplayData {
    let walked = python.named_values();
    let mut paths = torchlet_explain::value::tensor_paths(walked.iter());
    paths.sort_by(|(a, _), (b, _)| super::vars::root(a).cmp(super::vars::root(b)));
    let tensors: Vec<(&str, Tensor)> = paths.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    super::vars::vars_display(&tensors, python.other_variables())
}

fn device_arg(arg: &str) -> Result<usize, String> {
    if arg.is_empty() {
        return Ok(torchlet_core::device::current_device());
    }
    let index = arg.trim_start_matches("cuda:");
    index
        .parse()
        .map_err(|_| format!("UsageError: %holders takes a device index (0, cuda:1), not `{arg}`"))
}

/// `memory trace on`: what a switch now is.
fn switched(what: &str, on: bool) -> DisplayData {
    DisplayData::text(format!("{what} {}", if on { "on" } else { "off" }))
}

fn switch(name: &str, arg: &str) -> Result<bool, String> {
    match arg {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("UsageError: %{name} takes on or off, not `{arg}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_magic_lines_split_from_the_code_whose_lines_keep_their_numbers() {
        let (magics, code) = split_magics("%trace on\n\n%why x\ny = x * 2\n%mem\n");
        assert_eq!(magics, ["trace on", "why x"]);
        assert_eq!(code, "\n\n\ny = x * 2\n%mem");
        let (magics, code) = split_magics("x = 1\n%mem");
        assert!(magics.is_empty());
        assert_eq!(code, "x = 1\n%mem");
        // A cell magic (`%%time`) and an indented `%` are no line magics of torchlet's.
        assert_eq!(split_magics("%%time\nx").0, Vec::<&str>::new());
        assert_eq!(split_magics("  %mem").0, Vec::<&str>::new());
    }

    #[test]
    fn magics_complete_from_the_table() {
        assert_eq!(complete_magic("ho"), ["%holders"]);
        assert_eq!(complete_magic("t"), ["%trace", "%time"]);
        assert_eq!(complete_magic("me"), ["%mem", "%memplot"]);
    }
}
