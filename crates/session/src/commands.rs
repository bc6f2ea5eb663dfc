//! The `:commands` (`:mem`, `:vars`, `:trace on` …) shared by the REPL and the Jupyter kernel's magics.
use std::time::Instant;

use super::memory;
use super::{DisplayData, Outcome, ScriptError, Session};
use torchlet_rhai::surface::help;

/// One `:command`: its name, its arguments, and what it does.
#[derive(Clone, Copy, Debug)]
pub struct CommandInfo {
    /// The name after the colon.
    pub name: &'static str,
    /// The arguments it takes, as shown in `:help`.
    pub args: &'static str,
    /// A one-line description.
    pub doc: &'static str,
}

/// Every command, in the order `:help` lists them.
pub const COMMANDS: &[CommandInfo] = &[
    cmd(
        "help",
        "[name]",
        "list commands and functions, or show one function's help",
    ),
    cmd(
        "mem",
        "",
        "allocated, reserved and peak memory of each CUDA device",
    ),
    cmd(
        "summary",
        "",
        "the allocator's memory_summary() of each CUDA device",
    ),
    cmd(
        "vars",
        "",
        "variables: type, shape, dtype, device, bytes, shared storage",
    ),
    cmd(
        "holders",
        "[device]",
        "every live GPU block, biggest first, and what holds it",
    ),
    cmd(
        "why",
        "NAME",
        "what del, .cpu(), empty_cache() would free of NAME right now",
    ),
    cmd(
        "ledger",
        "CODE",
        "run CODE and show, per line: runs, Δallocated, Δreserved, peak, segments",
    ),
    cmd(
        "trace",
        "on|off",
        "after each input, print how device memory changed",
    ),
    cmd("time", "on|off", "after each input, print the time it took"),
    cmd(
        "memplot",
        "on|off",
        "after each input, redraw one chart of GPU memory by variable (a notebook's SVG)",
    ),
    cmd(
        "reset",
        "",
        "forget every variable and function (frees their tensors)",
    ),
    cmd("load", "FILE", "run a .rhai file in this session"),
    cmd(
        "prompt",
        "mem|plain",
        "show device memory in the prompt (REPL only)",
    ),
    cmd("quit", "", "leave the REPL (Ctrl-D does the same)"),
];

const fn cmd(name: &'static str, args: &'static str, doc: &'static str) -> CommandInfo {
    CommandInfo { name, args, doc }
}

/// An optional device index argument (default: the current device).
fn device_arg(name: &str, arg: &str) -> Result<usize, Failure> {
    if arg.is_empty() {
        return Ok(torchlet_core::device::current_device());
    }
    arg.parse().map_err(|_| {
        usage(format!(
            ":{name} takes a device index, e.g. :{name} 0, not '{arg}'"
        ))
    })
}

/// Whether `line` is a `:command` rather than code (`::` is never a command).
pub fn is_command(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with(':') && !line.starts_with("::")
}

impl Session {
    /// Run `line` if it is a `:command`; `None` when it is code for `execute`.
    pub fn run_command(&mut self, line: &str) -> Option<Outcome> {
        if !is_command(line) {
            return None;
        }
        let started = Instant::now();
        let text = line.trim()[1..].trim();
        let (name, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let arg = arg.trim();
        let result = match name {
            "help" => self.help(arg),
            "mem" => no_arg(name, arg).and_then(|_| mem()).map(|shown| {
                shown.map(|mut data| {
                    if let Some(line) = super::memplot::sparkline(&self.memplot) {
                        data.plain = format!("{}\n{line}", data.plain);
                    }
                    data
                })
            }),
            "summary" => no_arg(name, arg).and_then(|_| summary()),
            "vars" => no_arg(name, arg).map(|_| Some(self.vars())),
            "holders" => device_arg(name, arg)
                .map(|d| Some(super::holders::table(d, &self.memory_holders(d)))),
            "why" => match self.explain_free(arg, torchlet_core::device::current_device()) {
                Some(ways) => Ok(Some(super::explain_free::table(arg, &ways))),
                None if arg.is_empty() => Err(usage(":why needs a variable: :why x".into())),
                None => Err(usage(format!("name '{arg}' is not defined"))),
            },
            "trace" => switch(name, arg).map(|on| {
                self.reports.trace = on;
                Some(DisplayData::text(trace_state(on)))
            }),
            "time" => switch(name, arg).map(|on| {
                self.reports.time = on;
                Some(DisplayData::text(format!("timing {}", on_off(on))))
            }),
            "memplot" => switch(name, arg).and_then(|on| {
                super::memplot::switch(&self.memplot, on)
                    .map(|text| Some(DisplayData::text(text)))
                    .map_err(usage)
            }),
            "reset" => no_arg(name, arg).map(|_| {
                self.reset();
                Some(DisplayData::text(
                    "session reset: all variables and functions are gone",
                ))
            }),
            "load" => return Some(self.load(arg, started)),
            "ledger" => return Some(self.ledger(text[name.len()..].trim_start())),
            "quit" | "prompt" => Err(usage(format!(":{name} works in the terminal REPL only"))),
            _ => Err(usage(format!(
                "unknown command ':{name}'; type :help to list the commands"
            ))),
        };
        Some(match result {
            Ok(value) => Outcome {
                value,
                error: None,
                elapsed: started.elapsed(),
            },
            Err(failure) => Outcome {
                value: None,
                error: Some(failure.into_error()),
                elapsed: started.elapsed(),
            },
        })
    }

    /// `:ledger CODE`: run CODE with the per-line ledger and show it after the code's own output.
    fn ledger(&mut self, code: &str) -> Outcome {
        if code.trim().is_empty() {
            return Outcome {
                value: None,
                error: Some(usage(":ledger needs code to run: :ledger CODE".into()).into_error()),
                elapsed: Default::default(),
            };
        }
        let (mut outcome, lines) = self.execute_with_ledger(code);
        if let Some(value) = outcome.value.take() {
            self.frontend.display(&value);
        }
        outcome.value = Some(super::ledger::table(&lines, code));
        outcome
    }

    /// `:load FILE`: run the file in this session; errors name the file and line.
    fn load(&mut self, path: &str, started: Instant) -> Outcome {
        let failed = |failure: Failure| Outcome {
            value: None,
            error: Some(failure.into_error()),
            elapsed: started.elapsed(),
        };
        if path.is_empty() {
            return failed(usage(":load needs a file: :load FILE".into()));
        }
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => return failed(usage(format!(":load: cannot read {path}: {e}"))),
        };
        let previous = self.options.source_name.replace(path.to_string());
        let outcome = self.execute(&text);
        self.options.source_name = previous;
        outcome
    }

    /// `:help` lists commands and the language's names; `:help name` explains one.
    fn help(&self, name: &str) -> Answer {
        if name.is_empty() {
            return Ok(Some(DisplayData::text(help_index())));
        }
        let name = name.trim_start_matches('.');
        let command = name.strip_prefix(':').unwrap_or(name);
        if let Some(c) = COMMANDS.iter().find(|c| c.name == command) {
            let text = format!(":{} {}\n    {}", c.name, c.args, c.doc);
            return Ok(Some(DisplayData::text(text.replace(" \n", "\n"))));
        }
        if matches!(name, "Tensor" | "cuda") || help::doc(name).is_some() {
            let text = torchlet_rhai::surface::output::help_text(name);
            return Ok(Some(DisplayData::text(text.trim_end())));
        }
        // Not part of the language: a function the user defined, or one of Rhai's own.
        let found = self.signatures(name);
        if found.is_empty() {
            return Err(usage(format!(
                "no function or command named '{name}'; type :help to list them"
            )));
        }
        Ok(Some(DisplayData::text(found.join("\n"))))
    }

    /// Signatures of the functions named `name`, the user's first, each with its doc's first line.
    pub(crate) fn signatures(&self, name: &str) -> Vec<String> {
        let with_doc = |signature: String, doc: Option<String>| match doc {
            Some(doc) => format!("{signature}\n    {doc}"),
            None => signature,
        };
        let mut found: Vec<String> = self
            .functions
            .iter_functions()
            .filter(|f| f.name == name)
            .map(|f| {
                let signature = format!("fn {}({})", f.name, f.params.join(", "));
                with_doc(signature, f.comments.iter().find_map(|c| first_doc_line(c)))
            })
            .collect();
        let mut native = self.engine.collect_fn_metadata(
            None,
            |f| {
                let shown = f
                    .metadata
                    .name
                    .trim_start_matches("get$")
                    .trim_start_matches("set$");
                let qualified = match f.namespace.is_empty() {
                    true => shown.to_string(),
                    false => format!("{}::{shown}", f.namespace),
                };
                if shown != name && qualified != name {
                    return None;
                }
                let mut signature = f.metadata.gen_signature(|t| t.into());
                if !f.namespace.is_empty() {
                    signature = format!("{}::{signature}", f.namespace);
                }
                let doc = f.metadata.comments.iter().find_map(|c| first_doc_line(c));
                Some(with_doc(signature, doc))
            },
            true,
        );
        native.sort();
        native.dedup();
        found.extend(native);
        found
    }
}

/// `:help` without a name: the commands, then every name of the language.
fn help_index() -> String {
    let mut out = String::from("Commands:\n");
    for c in COMMANDS {
        let usage = format!(":{} {}", c.name, c.args);
        out += &format!("  {usage:<22} {}\n", c.doc);
    }
    out += "\n";
    out += &help::overview();
    out += "\n:help NAME (or NAME?) explains one name; Tab completes names.";
    out
}

fn mem() -> Answer {
    let devices = memory::sample().map_err(device_error)?;
    Ok(Some(DisplayData::text(memory::table(&devices))))
}

fn summary() -> Answer {
    let summaries = memory::summaries().map_err(device_error)?;
    let many = summaries.len() > 1;
    let text: Vec<String> = summaries
        .into_iter()
        .map(|(i, s)| match many {
            true => format!("cuda:{i}\n{s}"),
            false => s,
        })
        .collect();
    Ok(Some(DisplayData::text(text.join("\n").trim_end())))
}

fn trace_state(on: bool) -> String {
    match (on, memory::sample()) {
        (true, Err(why)) => format!("memory trace on, but there is nothing to trace: {why}"),
        (on, _) => format!("memory trace {}", on_off(on)),
    }
}

fn first_doc_line(comment: &str) -> Option<String> {
    let line = comment
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("///")
                .trim_start_matches("/**")
                .trim()
        })
        .find(|l| !l.is_empty())?;
    Some(line.to_string())
}

fn no_arg(name: &str, arg: &str) -> Result<(), Failure> {
    match arg {
        "" => Ok(()),
        _ => Err(usage(format!(":{name} takes no argument (got '{arg}')"))),
    }
}

fn switch(name: &str, arg: &str) -> Result<bool, Failure> {
    match arg {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(usage(format!(":{name} takes on or off, e.g. :{name} on"))),
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// What a command answers: text to show, or why it failed.
type Answer = Result<Option<DisplayData>, Failure>;

/// Why a command failed; it becomes the outcome's `ScriptError`.
struct Failure {
    kind: &'static str,
    message: String,
}

impl Failure {
    fn into_error(self) -> ScriptError {
        ScriptError::unplaced(self.kind, self.message)
    }
}

fn device_error(message: String) -> Failure {
    Failure {
        kind: "RuntimeError",
        message,
    }
}

/// A command used wrongly, named as IPython names a misused magic.
fn usage(message: String) -> Failure {
    Failure {
        kind: "UsageError",
        message,
    }
}
