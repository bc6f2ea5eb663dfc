//! One interpreter session: a persistent scope, `execute(code)`, completion, and an interrupt flag.
//!
//! Every front end (the script runner, the REPL, the Jupyter kernel) drives a `Session` and sees
//! nothing below it. Output produced while code runs goes to the session's `Frontend` as it
//! happens, so a notebook shows `print` lines before a long cell finishes.
//!
//! Map: this file runs inputs (spelling, Python scoping, the lifetime rewrite, evaluation);
//! `outcome` and `traceback` shape what comes back, and `oom_notes` adds torchlet's diagnosis and
//! biggest holders after PyTorch's out-of-memory message; `spelling` reads PyTorch's names through
//! the session's aliases; `complete` and `inspect` answer completion, `help`, `name?` and the
//! kernel's inspect; `commands` runs the `:commands` with `vars` (the `:vars` table), `memory`
//! (every device's figures) and `trace` (`:trace on`, `:time on`); `memplot` keeps `:memplot on`'s
//! chart and `:mem`'s sparkline; `variables_panel` is what the kernel's variables panel lists;
//! `fit` is one run of a script for `torchlet fit`, as JSON; `python_blocks` refuses a Python
//! `:` block whole, with the indented inputs after it; `python_magics` are the Python front
//! ends' `%mem`, `%vars`, `%holders`, `%why` …, over a Python session's names. The output sink, display data and
//! interrupt flag are the language's (`torchlet_rhai`), re-exported for front ends.

mod commands;
mod complete;
pub mod fit;
mod inspect;
pub mod memory;
mod memplot;
mod oom_notes;
mod outcome;
mod python_blocks;
pub mod python_magics;
mod spelling;
mod trace;
mod traceback;
pub mod variables_panel;
mod vars;

pub use commands::{
    command_with_argument, find_command, is_command, Action, CommandInfo, Completes, Reply,
    COMMANDS,
};
pub use trace::Reports;
pub use traceback::Frame;

pub use complete::{Candidate, Completion, CompletionKind};
pub use outcome::{Completeness, Outcome, ScriptError};
// What front ends hand to a session and get back from it: the language layer's output sink and
// interrupt flag, and the explanations' reports.
pub use torchlet_explain::{explain_free, holders, ledger, snapshot_dump, DisplayData, Picture};
// What a front end asks of the language's syntax: the call open at a cursor, a name's characters.
pub use torchlet_rhai::source::callee;
pub use torchlet_rhai::source::tokens::is_word;
// Whether an input holds a Python `:` block, which the Rhai language reads whole and refuses.
pub use torchlet_rhai::source::hints::python_block;
pub use torchlet_rhai::{CapturedOutput, Frontend, InterruptHandle, OutputEvent, StdioFrontend};

use std::rc::Rc;
use std::time::Instant;

/// Choose the CUDA devices, real or simulated (`--simulate-cuda=16GiB,8GiB`), before any session
/// opens; `Err` says why the choice is refused.
pub fn init_devices(simulate: Option<&str>) -> Result<(), String> {
    torchlet_core::device::init(simulate)
}

/// The environment variables that configure the allocator, in PyTorch's syntax.
pub use torchlet_alloc::{CONF_ENV, CONF_ENV_ALIAS};

/// The index that `cuda` without a number means now.
pub fn current_device() -> usize {
    torchlet_core::device::current_device()
}

/// Options a front end chooses when it opens a session.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Name shown in error positions (`FILE:LINE:COL`), e.g. the script's path or `<cell>`.
    pub source_name: Option<String>,
    /// Report each statement's line to the `__line` hook before it runs (see
    /// [`torchlet_rhai::runtime::lifetimes::register_line_hook`]), for tools that attribute memory to lines.
    pub mark_lines: bool,
}

/// One interpreter session with a scope that persists between `execute` calls.
pub struct Session {
    engine: rhai::Engine,
    /// Gives compiled inputs CPython's lifetimes for temporaries.
    lifetimes: torchlet_rhai::Lifetimes,
    scope: rhai::Scope<'static>,
    /// Functions defined by earlier inputs, kept so later inputs can call them.
    functions: rhai::AST,
    /// Where each function was defined, for tracebacks.
    function_sources: traceback::FunctionSources,
    interrupt: InterruptHandle,
    frontend: Rc<dyn Frontend>,
    options: SessionOptions,
    /// What `:trace` and `:time` print after each input.
    reports: Reports,
    /// Names that `import torch … as NAME` lines bound to PyTorch's modules.
    aliases: torchlet_rhai::source::python_spelling::Aliases,
    /// What the language's hooks keep for this session: statement names, ledger, loops, arguments.
    state: torchlet_rhai::State,
    /// `:mem`'s samples and the `:memplot` chart.
    memplot: std::cell::RefCell<memplot::MemPlot>,
    /// The names the debugger's variables panel listed last; a tensor's variablesReference is
    /// its position here plus one (0 means "no children" in the protocol).
    panel_listed: std::cell::RefCell<Vec<String>>,
    /// The Python block refused last, whose indented body is refused with it.
    python_block: python_blocks::RefusedBlock,
}

impl Session {
    /// Open a session whose output goes to `frontend`.
    pub fn new(options: SessionOptions, frontend: Rc<dyn Frontend>) -> Session {
        let interrupt = InterruptHandle::default();
        // Tensor ops check the same flag, so an interrupt also stops a long op between kernels.
        torchlet_core::tensor::set_interrupt_flag(interrupt.flag());
        let state = torchlet_rhai::State::default();
        let engine = torchlet_rhai::new_engine(frontend.clone(), interrupt.clone(), &state);
        let lifetimes = torchlet_rhai::Lifetimes::new(&engine);
        Session {
            engine,
            lifetimes,
            scope: rhai::Scope::new(),
            functions: rhai::AST::empty(),
            function_sources: Default::default(),
            interrupt,
            frontend,
            options,
            reports: Reports::default(),
            aliases: Default::default(),
            state,
            memplot: Default::default(),
            panel_listed: Default::default(),
            python_block: Default::default(),
        }
    }

    /// A session whose output is captured in memory, named `source` in error positions.
    pub fn captured(source: &str) -> (Session, Rc<CapturedOutput>) {
        let output = Rc::new(CapturedOutput::default());
        let options = SessionOptions {
            source_name: Some(source.to_string()),
            ..Default::default()
        };
        (Session::new(options, output.clone()), output)
    }

    /// Run `code` in the persistent scope; the value of its last expression comes back for echo.
    pub fn execute(&mut self, code: &str) -> Outcome {
        self.interrupt.clear();
        torchlet_core::autograd::forget_unclaimed_saves();
        self.state.reset_leaks();
        self.forget_oom_diagnoses();
        let mark = self.before_input();
        let started = Instant::now();
        let result = self.run_guarded(code).map_err(|mut error| {
            if error.kind == "OutOfMemoryError" {
                for note in self.oom_notes() {
                    error.message = format!("{}\n{note}", error.message);
                }
            }
            error
        });
        let elapsed = started.elapsed();
        for warning in torchlet_rhai::runtime::leaks::finish(&self.state, &self.scope) {
            self.frontend.stderr(&format!("{warning}\n"));
        }
        let outcome = match result {
            Ok(value) => Outcome {
                value,
                error: None,
                elapsed,
            },
            Err(error) => Outcome {
                value: None,
                error: Some(error),
                elapsed,
            },
        };
        self.after_input(mark, &outcome);
        outcome
    }

    /// `run`, with a panic below it (a torchlet bug) as an error of this input: the REPL, the
    /// kernel or the script runner keeps every earlier variable, where unwinding out of here would
    /// end the process and lose them.
    #[allow(clippy::result_large_err)] // as `run`
    fn run_guarded(&mut self, typed: &str) -> Result<Option<DisplayData>, ScriptError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(typed))).unwrap_or_else(
            |panic| {
                // What `run` would have closed had it returned: the input's allocation site and
                // `del`'s tombstones.
                torchlet_rhai::runtime::provenance::end_input(&self.state);
                torchlet_rhai::runtime::syntax::compact_deleted(&mut self.scope);
                Err(ScriptError::internal(&panic_text(&*panic)))
            },
        )
    }

    // One error per failed input, moved once into its `Outcome`: boxing it would buy nothing.
    #[allow(clippy::result_large_err)]
    fn run(&mut self, typed: &str) -> Result<Option<DisplayData>, ScriptError> {
        self.python_block.check(typed)?;
        let spelled = self.spell(typed);
        let scope = &self.scope;
        let rewritten = torchlet_rhai::surface::output::rewrite_help_query_in(&spelled, |name| {
            scope
                .get(name)
                .is_some_and(|v| !torchlet_rhai::runtime::syntax::is_deleted(v))
        });
        let code = rewritten.as_deref().unwrap_or(&spelled);
        // The spelled code keeps every line and column of the typed text, so what users read
        // (tracebacks, provenance) quotes what they typed.
        let shown = if rewritten.is_some() { code } else { typed };
        let shown = if shown.lines().count() == code.lines().count() {
            shown
        } else {
            code
        };
        let result = self
            .run_code(code, shown)
            .map_err(|e| self.as_typed(e, typed, code))
            .map_err(|e| self.python_block.refuse(e, typed));
        if result.is_ok() {
            self.python_block.clear();
        }
        // No compiled code is running now, so `del`'s tombstones can go without shifting anything.
        torchlet_rhai::runtime::syntax::compact_deleted(&mut self.scope);
        // As in IPython, a `;` at the end of an input keeps its value from being shown.
        let quiet = torchlet_rhai::source::python_spelling::ends_with_semicolon(typed);
        result.map(|value| value.filter(|_| !quiet))
    }

    #[allow(clippy::result_large_err)] // as `run`
    fn run_code(&mut self, code: &str, shown: &str) -> Result<Option<DisplayData>, ScriptError> {
        let suspects = self.floordiv_suspects(code);
        let ast = self
            .compile_with_python_scoping(code)
            .map_err(|mut error| {
                if let Some(suspect) = suspects.first() {
                    match error.hint {
                        None => {
                            error.hint =
                                Some(suspect.hint().trim_start_matches("hint: ").to_string())
                        }
                        Some(_) => error.message = format!("{}\n{}", error.message, suspect.hint()),
                    }
                }
                error
            })?;
        // It parsed, so the comment only shortened a line: say so before it runs.
        let name = self.options.source_name.as_deref().unwrap_or("<input>");
        for suspect in &suspects {
            let warning = format!("{name}:{}: warning: {}\n", suspect.line, suspect.message());
            self.frontend.stderr(&warning);
        }
        let bound = self.variable_names();
        let ast = self.lifetimes.rewrite(
            &self.engine,
            &ast,
            &self.functions,
            &bound,
            self.options.mark_lines,
        );
        self.functions = self.functions.merge(&ast.clone_functions_only());
        let source = self.options.source_name.as_deref();
        self.function_sources.record(&ast, source, shown);
        let program = self.functions.merge(&ast);
        torchlet_rhai::runtime::provenance::begin_input(
            &self.state,
            source.unwrap_or("<input>"),
            shown,
            torchlet_rhai::source::fn_marks::function_spans(&ast),
        );
        let result = self.engine.eval_ast_with_scope(&mut self.scope, &program);
        let last_statement = torchlet_rhai::runtime::provenance::end_input(&self.state);
        let value: rhai::Dynamic = result.map_err(|e| {
            ScriptError::from_eval(&e, shown, source, &self.function_sources)
                .or_at(last_statement, shown)
        })?;
        Ok(torchlet_rhai::surface::display::of_value(&value))
    }

    /// Compile `code` with Python's scoping (see [`torchlet_rhai::source::scoping`]): every name it binds
    /// outside functions is declared first, and `let` inside blocks becomes assignment.
    // A ScriptError carries the message, its place and hints; it is made once per failed input.
    #[allow(clippy::result_large_err)]
    fn compile_with_python_scoping(&mut self, code: &str) -> Result<rhai::AST, ScriptError> {
        let (ast, text) = self.compile_scoped(code)?;
        Ok(self.with_function_marks(ast, &text))
    }

    /// `ast` (compiled from `text`) with its functions' statements marked, so that what they
    /// allocate names them and the calls that led there (Note [marks at line ends]); as it was
    /// when none can be marked.
    fn with_function_marks(&self, ast: rhai::AST, text: &str) -> rhai::AST {
        use torchlet_rhai::source::fn_marks;
        let spans = fn_marks::function_spans(&ast);
        if spans.is_empty() {
            return ast;
        }
        let id = torchlet_rhai::runtime::provenance::next_input(&self.state);
        let Some(marked) = fn_marks::marked(&ast, text, id, &spans) else {
            return ast;
        };
        match self.engine.compile_with_scope(&self.scope, &marked) {
            Ok(with_marks) => {
                let mut out =
                    rhai::AST::new(ast.statements().to_vec(), with_marks.shared_lib().clone());
                if let Some(source) = ast.source() {
                    out.set_source(source);
                }
                out
            }
            Err(_) => ast,
        }
    }

    /// `code` compiled with Python's scoping, and the text that was compiled.
    // A ScriptError carries the message, its place and hints; it is made once per failed input.
    #[allow(clippy::result_large_err)]
    fn compile_scoped(&mut self, code: &str) -> Result<(rhai::AST, String), ScriptError> {
        let source = self.options.source_name.as_deref();
        let compile = |engine: &rhai::Engine, scope: &rhai::Scope, text: &str| {
            engine
                .compile_with_scope(scope, text)
                .map_err(|e| ScriptError::from_parse(&e, code, source))
        };
        let ast = compile(&self.engine, &self.scope, code)?;
        let plan = torchlet_rhai::source::scoping::plan(&ast);
        let mut declared = false;
        for name in &plan.names {
            if !self.scope.contains(name) {
                self.scope.push_dynamic(
                    name.as_str(),
                    rhai::Dynamic::from(torchlet_rhai::runtime::syntax::Deleted),
                );
                declared = true;
            }
        }
        if !declared && plan.nested_lets.is_empty() {
            return Ok((ast, code.to_string()));
        }
        // The parser resolves variables against the scope it compiled with: compile again now
        // that the names are declared (and the nested `let`s are assignments).
        let text = torchlet_rhai::source::scoping::blank_lets(code, &plan.nested_lets);
        Ok((compile(&self.engine, &self.scope, &text)?, text))
    }

    /// Whether `code` is a whole input, needs more lines, or can never parse.
    pub fn is_complete(&self, typed: &str) -> Completeness {
        let code = &self.spelled(typed);
        if torchlet_rhai::surface::output::rewrite_help_query(code).is_some() {
            return Completeness::Complete;
        }
        match self.engine.compile_with_scope(&self.scope, code) {
            Ok(_) => Completeness::Complete,
            // Note [Python blocks]: `with torch.no_grad():` reads its indented body, as Python's
            // REPL does, and the whole block is then refused at once; no line of it runs alone.
            Err(_) if torchlet_rhai::source::hints::python_block(typed).is_some() => {
                match torchlet_rhai::source::hints::python_block_continues(typed) {
                    true => Completeness::Incomplete,
                    false => Completeness::Invalid,
                }
            }
            // `print(n // 2)` waits for a `)` the comment ate: run it and show the hint instead.
            Err(_) if !self.floordiv_suspects(code).is_empty() => Completeness::Invalid,
            Err(e) if outcome::is_incomplete(&e, code) => Completeness::Incomplete,
            Err(_) => Completeness::Invalid,
        }
    }

    /// Where `code` has `a // b` meant as floor division (a comment in this language).
    fn floordiv_suspects(&self, code: &str) -> Vec<torchlet_rhai::source::floordiv_hint::Suspect> {
        let scope = &self.scope;
        torchlet_rhai::source::floordiv_hint::find(code, &|name| scope.contains(name))
    }

    /// The handle that interrupts this session's running code.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }

    /// Names of the variables now in scope (each once, innermost first shadowing the rest).
    pub fn variable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (name, _, value) in self.scope.iter_raw() {
            if !torchlet_rhai::runtime::syntax::is_deleted(value)
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_string());
            }
        }
        names
    }

    /// The variables now in scope with their values (innermost binding of each name, in scope order),
    /// for `:vars`; deleted names are left out.
    pub fn variables(&self) -> Vec<(String, rhai::Dynamic)> {
        torchlet_rhai::surface::view::live_bindings(&self.scope)
    }

    /// The variables as the explanations see them (the same bindings as [`Session::variables`]).
    pub fn named_values(&self) -> Vec<(String, torchlet_explain::Value)> {
        torchlet_rhai::surface::view::scope_values(&self.scope)
    }

    /// The script's arguments: `ARGS`, and the `NAME=VALUE` ones `arg(name, default)` reads.
    pub fn set_args(&mut self, args: &[String]) {
        self.state.set_args(args);
        let array: rhai::Array = args
            .iter()
            .map(|a| rhai::Dynamic::from(a.clone()))
            .collect();
        self.set_variable("ARGS", array.into());
    }

    /// Name later inputs `name` in error positions and allocation sites (a notebook names each
    /// cell `In[5]`, so the memory chart's axis shows the cell).
    pub fn set_source_name(&mut self, name: &str) {
        self.options.source_name = Some(name.to_string());
    }

    /// Define (or replace) a variable, e.g. the script's `ARGS`.
    pub fn set_variable(&mut self, name: &str, value: rhai::Dynamic) {
        self.scope.set_or_push(name, value);
    }

    /// The front end this session writes to.
    pub fn frontend(&self) -> &Rc<dyn Frontend> {
        &self.frontend
    }

    /// The underlying Rhai engine (for completion and help).
    pub fn engine(&self) -> &rhai::Engine {
        &self.engine
    }

    /// The underlying Rhai engine, to register more functions (a harness's hooks, say).
    pub fn engine_mut(&mut self) -> &mut rhai::Engine {
        &mut self.engine
    }

    /// Every live block of cuda:`device`, biggest first, with what holds it.
    pub fn memory_holders(&self, device: usize) -> Vec<holders::BlockHolders> {
        let variables = self.named_values();
        let map = holders::HolderMap::of_variables(variables.iter().map(|(n, v)| (n.as_str(), v)));
        holders::block_holders(&map, device)
    }

    /// What each of the article's four ways to free `name` would do now on cuda:`device`;
    /// `None` when no such variable exists.
    /// `name` may be a path into a variable (`l1.weight`, `model.blocks[0].fc.weight`,
    /// `opt.state[w].exp_avg`); the ways come back with the path as the explanations spell it.
    pub fn explain_free(
        &self,
        name: &str,
        device: usize,
    ) -> Option<(String, Vec<explain_free::Way>)> {
        let path = torchlet_explain::value::canonical_path(name)?;
        let variables = self.named_values();
        let all = variables.iter().map(|(n, v)| (n.as_str(), v));
        let value = torchlet_explain::value::resolve(all.clone(), &path)?;
        let ways = explain_free::explain_free(&path, &value, all, device);
        Some((path, ways))
    }

    /// Run `code` keeping the per-line ledger of the current device; the ledger comes back with
    /// the outcome.
    pub fn execute_with_ledger(
        &mut self,
        code: &str,
    ) -> (
        Outcome,
        std::collections::BTreeMap<usize, ledger::LineStats>,
    ) {
        let marked = std::mem::replace(&mut self.options.mark_lines, true);
        self.state
            .start_ledger(torchlet_core::device::current_device());
        let outcome = self.execute(code);
        let lines = self.state.finish_ledger();
        self.options.mark_lines = marked;
        (outcome, lines)
    }

    /// The persistent scope.
    pub fn scope(&self) -> &rhai::Scope<'static> {
        &self.scope
    }

    /// Forget every variable and function; tensors held only by them are freed.
    pub fn reset(&mut self) {
        self.scope.clear();
        self.functions = rhai::AST::empty();
        self.function_sources.clear();
    }
}

/// What a panic said, for [`ScriptError::internal`] and the kernel's own guard.
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
