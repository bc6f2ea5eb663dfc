//! The `:commands` (`:mem`, `:vars`, `:trace on` …) shared by the REPL and the Jupyter kernel's magics: one table whose rows carry their handlers.
use std::time::Instant;

use super::memory;
use super::{DisplayData, Outcome, ScriptError, Session};
use torchlet_rhai::surface::help;

/// One `:command`: its name, its arguments, what it does, and the handler that does it.
#[derive(Clone, Copy, Debug)]
pub struct CommandInfo {
    /// The name after the colon.
    pub name: &'static str,
    /// Other names that run it (`:q` for `:quit`); `:help` and completion show only the name.
    pub aliases: &'static [&'static str],
    /// The arguments it takes, as shown in `:help`; empty for none, and then any is refused.
    pub args: &'static str,
    /// A one-line description.
    pub doc: &'static str,
    /// What Tab completes after the name.
    pub completes: Completes,
    /// Runs the command on the session with its argument text (trimmed).
    run: fn(&mut Session, &str) -> Answer,
}

/// What Tab completes in a command's argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completes {
    /// The names of code, as in any input.
    Code,
    /// Help topics: the language's names, `Tensor`, the commands.
    HelpTopics,
    /// File names (the REPL completes them from its directory).
    FileNames,
}

/// Every command, in the order `:help` lists them.
pub const COMMANDS: &[CommandInfo] = &[
    cmd(
        "help",
        "[name]",
        "list commands and functions, or show one function's help",
        help,
    )
    .completing(Completes::HelpTopics),
    cmd(
        "mem",
        "",
        "allocated, reserved and peak memory of each CUDA device",
        mem,
    ),
    cmd(
        "summary",
        "",
        "the allocator's memory_summary() of each CUDA device",
        summary,
    ),
    cmd(
        "vars",
        "",
        "variables: type, shape, dtype, device, bytes, shared storage",
        |session, _| shown(session.vars()),
    ),
    cmd(
        "holders",
        "[device]",
        "every live GPU block, biggest first, and what holds it",
        holders,
    ),
    cmd(
        "why",
        "NAME",
        "what del, .cpu(), empty_cache() would free of NAME right now",
        why,
    ),
    cmd(
        "ledger",
        "CODE",
        "run CODE and show, per line: runs, Δallocated, Δreserved, peak, segments",
        ledger,
    ),
    cmd(
        "trace",
        "on|off",
        "after each input, print how device memory changed",
        trace,
    ),
    cmd(
        "time",
        "on|off",
        "after each input, print the time it took",
        time,
    ),
    cmd(
        "memplot",
        "on|off",
        "after each input, redraw one chart of GPU memory by variable (a notebook's SVG)",
        memplot,
    ),
    cmd(
        "reset",
        "",
        "forget every variable and function (frees their tensors)",
        reset,
    ),
    cmd("load", "FILE", "run a .rhai file in this session", load).completing(Completes::FileNames),
    cmd(
        "prompt",
        "mem|plain",
        "show device memory in the prompt (REPL only)",
        prompt,
    ),
    cmd(
        "quit",
        "",
        "leave the REPL (Ctrl-D does the same)",
        |_, _| Ok(Done::Act(Action::Quit)),
    )
    .aliased(&["q", "exit"]),
];

const fn cmd(
    name: &'static str,
    args: &'static str,
    doc: &'static str,
    run: fn(&mut Session, &str) -> Answer,
) -> CommandInfo {
    CommandInfo {
        name,
        aliases: &[],
        args,
        doc,
        completes: Completes::Code,
        run,
    }
}

impl CommandInfo {
    const fn completing(self, completes: Completes) -> CommandInfo {
        CommandInfo { completes, ..self }
    }

    const fn aliased(self, aliases: &'static [&'static str]) -> CommandInfo {
        CommandInfo { aliases, ..self }
    }

    /// Whether `name` (without the colon) runs this command.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// The command `name` (without the colon) runs, if any.
pub fn find_command(name: &str) -> Option<&'static CommandInfo> {
    COMMANDS.iter().find(|c| c.is_named(name))
}

/// Whether `line` is a `:command` rather than code (`::` is never a command).
pub fn is_command(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with(':') && !line.starts_with("::")
}

/// A `:command` line's name and argument text (trimmed); `None` for code.
fn split_command(line: &str) -> Option<(&str, &str)> {
    if !is_command(line) {
        return None;
    }
    let text = line.trim()[1..].trim();
    let (name, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    Some((name, arg.trim()))
}

/// The command whose argument `line` (a line being typed) has reached: its name is complete.
pub fn command_with_argument(line: &str) -> Option<&'static CommandInfo> {
    let text = line.trim_start().strip_prefix(':')?;
    let (name, _) = text.split_once(char::is_whitespace)?;
    find_command(name)
}

/// What a command gives its front end: an outcome to show, or something only the front end does.
#[derive(Debug)]
// One per command, moved once to the front end: boxing the outcome would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// A value or an error, shown as any input's outcome is.
    Show(Outcome),
    /// Something the session cannot do itself, for the front end to carry out.
    Act(Action),
}

/// What only a front end can do, asked for by a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// End the front end (`:quit`).
    Quit,
    /// Show device memory in the prompt, or not (`:prompt mem|plain`).
    PromptMemory(bool),
}

impl Action {
    /// The command that asks for this action.
    pub fn command(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::PromptMemory(_) => "prompt",
        }
    }
}

impl Reply {
    /// The outcome for a front end without a terminal: an action is refused as REPL-only.
    pub fn into_outcome(self) -> Outcome {
        match self {
            Reply::Show(outcome) => outcome,
            Reply::Act(action) => {
                let why = usage(format!(
                    ":{} works in the terminal REPL only",
                    action.command()
                ));
                failed(why, Instant::now())
            }
        }
    }
}

impl Session {
    /// Run `line` if it is a `:command`; `None` when it is code for `execute`. Commands only a
    /// terminal can carry out (`:quit`, `:prompt`) come back as errors saying so.
    pub fn run_command(&mut self, line: &str) -> Option<Outcome> {
        self.command(line).map(Reply::into_outcome)
    }

    /// Run `line` if it is a `:command`: what to show, or what the front end should do.
    pub fn command(&mut self, line: &str) -> Option<Reply> {
        let (name, arg) = split_command(line)?;
        let started = Instant::now();
        let Some(command) = find_command(name) else {
            let why = usage(format!(
                "unknown command ':{name}'; type :help to list the commands"
            ));
            return Some(Reply::Show(failed(why, started)));
        };
        let answer = if command.args.is_empty() && !arg.is_empty() {
            Err(usage(format!(
                ":{} takes no argument (got '{arg}')",
                command.name
            )))
        } else {
            (command.run)(self, arg)
        };
        Some(match answer {
            Ok(Done::Shown(value)) => Reply::Show(Outcome {
                value,
                error: None,
                elapsed: started.elapsed(),
            }),
            Ok(Done::Ran(outcome)) => Reply::Show(outcome),
            Ok(Done::Act(action)) => Reply::Act(action),
            Err(failure) => Reply::Show(failed(failure, started)),
        })
    }
}

/// An outcome that is only the failure's error.
fn failed(failure: Failure, started: Instant) -> Outcome {
    Outcome {
        value: None,
        error: Some(failure.into_error()),
        elapsed: started.elapsed(),
    }
}

/// `:help` lists commands and the language's names; `:help name` explains one.
fn help(session: &mut Session, name: &str) -> Answer {
    if name.is_empty() {
        return shown(DisplayData::text(help_index()));
    }
    let name = name.trim_start_matches('.');
    if let Some(c) = find_command(name.strip_prefix(':').unwrap_or(name)) {
        let text = format!(":{} {}\n    {}", c.name, c.args, c.doc);
        return shown(DisplayData::text(text.replace(" \n", "\n")));
    }
    if matches!(name, "Tensor" | "cuda") || help::doc(name).is_some() {
        let text = torchlet_rhai::surface::output::help_text(name);
        return shown(DisplayData::text(text.trim_end()));
    }
    // Not part of the language: a function the user defined, or one of Rhai's own.
    let found = session.signatures(name);
    if found.is_empty() {
        return Err(usage(format!(
            "no function or command named '{name}'; type :help to list them"
        )));
    }
    shown(DisplayData::text(found.join("\n")))
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

/// `:mem`: each device's memory table, with the sparkline of recent inputs when `:memplot` is on.
fn mem(session: &mut Session, _: &str) -> Answer {
    let text = memory::mem_text(&session.memplot).map_err(device_error)?;
    shown(DisplayData::preformatted(text))
}

/// `:summary`: the allocator's `memory_summary()` of each device, each headed by its name when
/// there are several.
fn summary(_: &mut Session, _: &str) -> Answer {
    let text = memory::summaries_text().map_err(device_error)?;
    shown(DisplayData::preformatted(text))
}

fn holders(session: &mut Session, arg: &str) -> Answer {
    let device = device_arg("holders", arg)?;
    shown(super::holders::table(
        device,
        &session.memory_holders(device),
    ))
}

fn why(session: &mut Session, name: &str) -> Answer {
    match session.explain_free(name, torchlet_core::device::current_device()) {
        Some((path, ways)) => shown(super::explain_free::table(&path, &ways)),
        None if name.is_empty() => Err(usage(":why needs a variable: :why x".into())),
        None => Err(usage(format!("name '{name}' is not defined"))),
    }
}

/// `:ledger CODE`: run CODE with the per-line ledger and show it after the code's own output.
fn ledger(session: &mut Session, code: &str) -> Answer {
    if code.is_empty() {
        return Err(usage(":ledger needs code to run: :ledger CODE".into()));
    }
    let (mut outcome, lines) = session.execute_with_ledger(code);
    if let Some(value) = outcome.value.take() {
        session.frontend.display(&value);
    }
    outcome.value = Some(super::ledger::table(&lines, code));
    Ok(Done::Ran(outcome))
}

fn trace(session: &mut Session, arg: &str) -> Answer {
    let on = switch("trace", arg)?;
    session.reports.trace = on;
    let text = match (on, memory::sample()) {
        (true, Err(why)) => format!("memory trace on, but there is nothing to trace: {why}"),
        (on, _) => format!("memory trace {}", on_off(on)),
    };
    shown(DisplayData::text(text))
}

fn time(session: &mut Session, arg: &str) -> Answer {
    session.reports.time = switch("time", arg)?;
    let text = format!("timing {}", on_off(session.reports.time));
    shown(DisplayData::text(text))
}

fn memplot(session: &mut Session, arg: &str) -> Answer {
    let on = switch("memplot", arg)?;
    let text = super::memplot::switch(&session.memplot, on).map_err(usage)?;
    shown(DisplayData::text(text))
}

fn reset(session: &mut Session, _: &str) -> Answer {
    session.reset();
    shown(DisplayData::text(
        "session reset: all variables and functions are gone",
    ))
}

/// `:load FILE`: run the file in this session; errors name the file and line.
fn load(session: &mut Session, path: &str) -> Answer {
    if path.is_empty() {
        return Err(usage(":load needs a file: :load FILE".into()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!(":load: cannot read {path}: {e}")))?;
    let previous = session.options.source_name.replace(path.to_string());
    let outcome = session.execute(&text);
    session.options.source_name = previous;
    Ok(Done::Ran(outcome))
}

fn prompt(_: &mut Session, arg: &str) -> Answer {
    match arg {
        "mem" => Ok(Done::Act(Action::PromptMemory(true))),
        "plain" => Ok(Done::Act(Action::PromptMemory(false))),
        _ => Err(usage(":prompt takes mem or plain, e.g. :prompt mem".into())),
    }
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

/// What a handler did: text to show, code it ran, or an action for the front end.
enum Done {
    /// Text (or nothing) to show.
    Shown(Option<DisplayData>),
    /// Code ran: its own outcome, value, error and time.
    Ran(Outcome),
    /// Something for the front end to do.
    Act(Action),
}

/// What a handler answers, or why it failed.
type Answer = Result<Done, Failure>;

fn shown(value: DisplayData) -> Answer {
    Ok(Done::Shown(Some(value)))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn error(outcome: Outcome) -> String {
        outcome.error.expect("an error").to_string()
    }

    #[test]
    fn every_name_and_alias_runs_one_command() {
        let mut seen = Vec::new();
        for c in COMMANDS {
            for name in std::iter::once(&c.name).chain(c.aliases) {
                assert!(!seen.contains(name), ":{name} is in two rows");
                assert_eq!(find_command(name).map(|f| f.name), Some(c.name));
                seen.push(name);
            }
        }
    }

    #[test]
    fn terminal_actions_reach_the_terminal_and_are_refused_elsewhere() {
        let (mut s, _) = Session::captured("<test>");
        assert!(matches!(s.command(":q"), Some(Reply::Act(Action::Quit))));
        let prompt = s.command("  :prompt mem");
        assert!(matches!(
            prompt,
            Some(Reply::Act(Action::PromptMemory(true)))
        ));
        let refused = error(s.run_command(":exit").unwrap());
        assert!(
            refused.contains(":quit works in the terminal REPL only"),
            "{refused}"
        );
        let bad = error(s.run_command(":prompt loud").unwrap());
        assert!(bad.contains(":prompt takes mem or plain"), "{bad}");
    }

    #[test]
    fn a_row_without_args_refuses_one() {
        let (mut s, _) = Session::captured("<test>");
        let refused = error(s.run_command(":quit now").unwrap());
        assert_eq!(refused, "UsageError: :quit takes no argument (got 'now')");
        assert!(s.run_command(":reset").unwrap().error.is_none());
    }

    #[test]
    fn the_argument_being_typed_names_its_command() {
        let load = command_with_argument("  :load some/fi").map(|c| c.completes);
        assert_eq!(load, Some(Completes::FileNames));
        let help = command_with_argument(":help zer").map(|c| c.completes);
        assert_eq!(help, Some(Completes::HelpTopics));
        assert!(command_with_argument(":load").is_none());
        assert!(command_with_argument("let load = 1").is_none());
    }
}
