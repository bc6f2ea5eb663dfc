//! One Python interpreter (RustPython, with the standard library) whose `torch` is torchlet's:
//! run a file as `__main__`, or run snippets one after another in the same namespace (the REPL).

use std::path::Path;

use rustpython_vm::compiler::Mode;
use rustpython_vm::scope::Scope;
use rustpython_vm::AsObject;
use rustpython_vm::{Interpreter, PyResult, VirtualMachine};

/// A Python error as a user sees it: its traceback text, and the exit status for `SystemExit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonError {
    /// The exception's class name (`RuntimeError`, `OutOfMemoryError`, `SyntaxError`).
    pub kind: String,
    /// Its message (`str(exc)`).
    pub message: String,
    /// CPython's traceback text, `Traceback (most recent call last):` … `Kind: message`.
    pub traceback: String,
    /// For `SystemExit`: the status the process exits with.
    pub exit_status: Option<u32>,
}

/// A Python session: one interpreter, one `__main__` namespace.
pub struct Python {
    pub(crate) interpreter: Interpreter,
    pub(crate) main: Scope,
    pub(crate) interrupter: crate::cell::Interrupter,
}

impl Python {
    /// An interpreter with the standard library and torchlet's `torch` importable.
    pub fn new() -> Result<Python, String> {
        // Text goes out as UTF-8, as CPython's does in its UTF-8 mode (the default under the C
        // and UTF-8 locales): a `Δ` in a printed report must not fail on an ASCII default.
        let mut settings = rustpython_vm::Settings::default();
        settings.stdio_encoding = Some("utf-8".into());
        settings.utf8_mode = 1;
        let builder = Interpreter::builder(settings);
        let stdlib = rustpython_stdlib::stdlib_module_defs(&builder.ctx);
        let (signals, receiver) = rustpython_vm::signal::user_signal_channel();
        let interpreter = builder
            .init_hook(move |vm| vm.set_user_signal_channel(receiver))
            .add_native_modules(&stdlib)
            .add_frozen_modules(rustpython_pylib::FROZEN_STDLIB)
            .build();
        let main = interpreter.enter(|vm| -> PyResult<Scope> {
            crate::package::install(vm)?;
            vm.new_scope_with_main()
        });
        let main = main.map_err(|e| {
            interpreter.enter(|vm| {
                format!(
                    "torchlet's Python could not start: {}",
                    describe(vm, &e).traceback
                )
            })
        })?;
        Ok(Python {
            interpreter,
            main,
            interrupter: crate::cell::Interrupter(signals),
        })
    }

    /// Run the file at `path` as `__main__`, with `sys.argv` = `[path, args…]` and its folder
    /// first on `sys.path`, as `python FILE ARGS` does.
    pub fn run_file(&self, path: &Path, args: &[String]) -> Result<(), PythonError> {
        let source = std::fs::read_to_string(path).map_err(|e| PythonError {
            kind: "FileNotFoundError".into(),
            message: format!("cannot read {}: {e}", path.display()),
            traceback: format!("torchlet: cannot read {}: {e}", path.display()),
            exit_status: None,
        })?;
        let name = path.display().to_string();
        self.interpreter.enter(|vm| {
            let prepare = || -> PyResult<()> {
                let mut argv = vec![vm.ctx.new_str(name.as_str()).into()];
                argv.extend(args.iter().map(|a| vm.ctx.new_str(a.as_str()).into()));
                vm.sys_module.set_attr("argv", vm.ctx.new_list(argv), vm)?;
                let folder = path
                    .parent()
                    .map(|p| p.display().to_string())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| ".".into());
                vm.insert_sys_path(vm.ctx.new_str(folder).into())?;
                self.main
                    .globals
                    .set_item("__file__", vm.ctx.new_str(name.as_str()).into(), vm)
            };
            prepare().map_err(|e| describe(vm, &e))?;
            run(vm, &self.main, &source, &name, Mode::Exec)
        })
    }

    /// The value of the expression `expr` in the session's namespace, as `str()` gives it.
    pub fn eval_str(&self, expr: &str) -> Result<String, PythonError> {
        self.interpreter.enter(|vm| {
            let code = vm
                .compile(expr, Mode::Eval, "<eval>".into())
                .map_err(|e| vm.new_syntax_error(&e, Some(expr)));
            code.and_then(|code| vm.run_code_obj(code, self.main.clone()))
                .and_then(|value| value.str(vm).map(|s| s.to_string_lossy().to_string()))
                .map_err(|e| describe(vm, &e))
        })
    }

    /// Whether the REPL should read another line before running `source`: it is unfinished (an
    /// open bracket or string, a block header with no body yet), or it opens a block, which in
    /// CPython's REPL ends at a blank line.
    pub fn needs_more(&self, source: &str) -> bool {
        let ends_blank = source.ends_with("\n\n") || source.trim().is_empty();
        self.interpreter.enter(
            |vm| match vm.compile(source, Mode::Single, "<stdin>".into()) {
                Ok(_) => !ends_blank && opens_block(source),
                Err(e) => {
                    let error = vm.new_syntax_error_maybe_incomplete(&e, Some(source), true);
                    let incomplete = error.class().is(vm.ctx.exceptions.incomplete_input_error);
                    let no_body = error.class().is(vm.ctx.exceptions.indentation_error)
                        && opens_block(source);
                    (incomplete || no_body) && !ends_blank
                }
            },
        )
    }

    /// Run `source` in the session's namespace; in `single` mode, as the REPL does, the value of a
    /// bare expression is printed with `repr`.
    pub fn run_source(&self, source: &str, name: &str, single: bool) -> Result<(), PythonError> {
        let mode = if single { Mode::Single } else { Mode::Exec };
        crate::native::site::remember_source(name, source);
        self.interpreter
            .enter(|vm| run(vm, &self.main, source, name, mode))
    }
}

/// Whether any line of `source` opens a block (`with …:`, `def …:`, `for …:`).
fn opens_block(source: &str) -> bool {
    source.lines().any(|line| {
        let code = line.split('#').next().unwrap_or("").trim_end();
        code.ends_with(':')
    })
}

/// Compile and run `source` in `scope`.
fn run(
    vm: &VirtualMachine,
    scope: &Scope,
    source: &str,
    name: &str,
    mode: Mode,
) -> Result<(), PythonError> {
    let code = vm
        .compile(source, mode, name.to_owned())
        .map_err(|e| vm.new_syntax_error(&e, Some(source)));
    crate::watch::start(vm);
    let result = code
        .and_then(|code| vm.run_code_obj(code, scope.clone()))
        .map(drop)
        .map_err(|e| describe(vm, &e));
    crate::watch::finish(vm);
    crate::native::site::forget_statement();
    flush_std(vm);
    result
}

/// Flush `sys.stdout` and `sys.stderr`: their buffers are Python objects, written out at the
/// interpreter's finalisation, which a session that lives on never reaches.
pub(crate) fn flush_std(vm: &VirtualMachine) {
    for name in ["stdout", "stderr"] {
        if let Ok(stream) = vm.sys_module.get_attr(name, vm) {
            let _ = vm.call_method(&stream, "flush", ());
        }
    }
}

/// The user's view of a raised exception.
pub(crate) fn describe(
    vm: &VirtualMachine,
    exc: &rustpython_vm::builtins::PyBaseExceptionRef,
) -> PythonError {
    let mut traceback = String::new();
    if vm.write_exception(&mut traceback, exc).is_err() {
        traceback = "(the traceback could not be written)".into();
    }
    let kind = exc.class().name().to_string();
    if kind == "OutOfMemoryError" {
        for note in crate::native::explain::oom_notes(vm, exc) {
            traceback.push_str(&note);
            traceback.push('\n');
        }
    }
    let message = exc
        .as_object()
        .str(vm)
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let exit_status = exc
        .fast_isinstance(vm.ctx.exceptions.system_exit)
        .then(|| vm.handle_exit_exception(exc.clone()));
    PythonError {
        kind,
        message,
        traceback: traceback.trim_end().to_string(),
        exit_status,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_continues_until_a_blank_line_as_in_cpythons_repl() {
        let python = Python::new().unwrap();
        assert!(python.needs_more("with torch.no_grad():\n"));
        assert!(python.needs_more("with torch.no_grad():\n    h = 1\n"));
        assert!(!python.needs_more("with torch.no_grad():\n    h = 1\n\n"));
        assert!(python.needs_more("x = f(1,\n"));
        assert!(!python.needs_more("x = 1\n"));
        assert!(
            !python.needs_more("x = = 1\n"),
            "a hopeless line runs, to report its error"
        );
    }

    #[test]
    fn containers_release_their_items_last_to_first_as_cpython() {
        // Note [container free order] in the root Cargo.toml: a tensor's release is an allocator event.
        let python = Python::new().unwrap();
        let program = "order = []\n\
            class A:\n    def __init__(self, n): self.n = n\n    def __del__(self): order.append(self.n)\n\
            l = [A(0), A(1), A(2)]\ndel l\n\
            t = (A(3), A(4), A(5))\ndel t\n\
            l = [A(6), A(7)]\nl.clear()\n\
            d = {'a': A(8), 'b': A(9)}\ndel d\n";
        python.run_source(program, "<test>", false).unwrap();
        assert_eq!(
            python.eval_str("order").unwrap(),
            "[2, 1, 0, 5, 4, 3, 7, 6, 8, 9]",
            "lists and tuples last to first, dicts first to last"
        );
    }

    #[test]
    fn snippets_share_one_namespace() {
        let python = Python::new().unwrap();
        python.run_source("a = 20\n", "<test>", false).unwrap();
        python.run_source("b = a + 1\n", "<test>", false).unwrap();
        assert_eq!(python.eval_str("b * 2").unwrap(), "42");
    }

    #[test]
    fn an_error_keeps_the_namespace_and_names_its_kind() {
        let python = Python::new().unwrap();
        python.run_source("kept = 5\n", "<test>", false).unwrap();
        let error = python
            .run_source("raise ValueError('no')\n", "<test>", false)
            .unwrap_err();
        assert_eq!(
            (error.kind.as_str(), error.message.as_str()),
            ("ValueError", "no")
        );
        assert!(
            error.traceback.ends_with("ValueError: no"),
            "{}",
            error.traceback
        );
        assert_eq!(python.eval_str("kept").unwrap(), "5");
    }
}
