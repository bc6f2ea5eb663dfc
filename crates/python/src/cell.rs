//! What a notebook kernel needs of an interpreter: cells that return their last value, output
//! sent to a sink as it is written, and an interrupt that raises `KeyboardInterrupt` mid-cell.

use std::cell::RefCell;
use std::rc::Rc;

use rustpython_vm::builtins::PyStrRef;
use rustpython_vm::compiler::Mode;
use rustpython_vm::signal::UserSignalSender;
use rustpython_vm::VirtualMachine;

use crate::interpreter::{describe, flush_std, Python, PythonError};

/// Where `sys.stdout` (`false`) and `sys.stderr` (`true`) text goes once `capture_output` ran.
pub type OutputSink = Rc<dyn Fn(bool, &str)>;

thread_local! {
    // Note [one sink per thread]: the native `write` is a plain function (RustPython's native
    // functions cannot own a closure here), so the sink lives beside the interpreter's thread.
    static SINK: RefCell<Option<OutputSink>> = const { RefCell::new(None) };
}

/// A cell's value as a notebook shows it: its `repr`, and its HTML when it has `_repr_html_`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// `repr(value)`.
    pub plain: String,
    /// `value._repr_html_()`, when the value has one and it gave text.
    pub html: Option<String>,
}

/// Stops the running cell with `KeyboardInterrupt`, from any thread.
#[derive(Clone)]
pub struct Interrupter(pub(crate) UserSignalSender);

impl Interrupter {
    /// Raise `KeyboardInterrupt` in the running code at its next instruction.
    pub fn interrupt(&self) {
        let _ = self.0.send(Box::new(|vm: &VirtualMachine| {
            Err(vm.new_exception_empty(vm.ctx.exceptions.keyboard_interrupt.to_owned()))
        }));
    }
}

/// The Python text of the stream objects: `write` hands the text to the sink at once, so a
/// long cell's prints reach the front end while it runs.
const STREAM_CLASS: &str = "
class _TorchletStream:
    encoding = 'utf-8'
    errors = 'strict'
    def __init__(self, is_err, name):
        self._is_err = is_err
        self.name = name
    def write(self, text):
        _torchlet_emit(self._is_err, text)
        return len(text)
    def writelines(self, lines):
        for line in lines:
            self.write(line)
    def flush(self):
        pass
    def isatty(self):
        return False
    def writable(self):
        return True
    def readable(self):
        return False
";

fn emit(is_err: bool, text: PyStrRef) {
    let text = text.to_string_lossy();
    SINK.with(|sink| {
        if let Some(sink) = sink.borrow().as_ref() {
            sink(is_err, &text);
        }
    });
}

impl Python {
    /// Send everything `sys.stdout` and `sys.stderr` are given to `sink`, as it is written.
    pub fn capture_output(&self, sink: OutputSink) -> Result<(), PythonError> {
        SINK.with(|slot| *slot.borrow_mut() = Some(sink));
        self.interpreter.enter(|vm| {
            let install = || {
                let scope = vm.new_scope_with_builtins();
                let emit_fn = vm.new_function("_torchlet_emit", emit);
                scope
                    .globals
                    .set_item("_torchlet_emit", emit_fn.into(), vm)?;
                let code = vm
                    .compile(STREAM_CLASS, Mode::Exec, "<torchlet stream>".into())
                    .map_err(|e| vm.new_syntax_error(&e, Some(STREAM_CLASS)))?;
                vm.run_code_obj(code, scope.clone())?;
                let class = scope.globals.get_item("_TorchletStream", vm)?;
                for (name, is_err) in [("stdout", false), ("stderr", true)] {
                    let stream = class.call((is_err, format!("<{name}>")), vm)?;
                    vm.sys_module.set_attr(name, stream, vm)?;
                }
                Ok(())
            };
            install().map_err(|e| describe(vm, &e))
        })
    }

    /// Run a notebook cell: every statement, then, if the last is an expression, its `repr`
    /// and its `_repr_html_()` when it has one (`None` gives nothing), as IPython's
    /// `execute_result`. Unlike IPython the value is not kept in `_` or `Out`, so a tensor the
    /// cell only shows is freed when the cell ends.
    pub fn run_cell(&self, source: &str, name: &str) -> Result<Option<Shown>, PythonError> {
        crate::native::site::remember_source(name, source);
        self.interpreter.enter(|vm| {
            let code = vm
                .compile(source, Mode::BlockExpr, name.to_owned())
                .map_err(|e| vm.new_syntax_error(&e, Some(source)));
            crate::watch::start(vm);
            let value = code.and_then(|code| vm.run_code_obj(code, self.main.clone()));
            let shown = value.and_then(|value| {
                if vm.is_none(&value) {
                    return Ok(None);
                }
                let plain = value.repr(vm)?.to_string_lossy().to_string();
                let html = match vm.get_attribute_opt(value.clone(), "_repr_html_")? {
                    Some(method) => {
                        let html = method.call((), vm)?;
                        html.downcast_ref::<rustpython_vm::builtins::PyStr>()
                            .map(|s| s.to_string_lossy().to_string())
                            .filter(|s| !s.is_empty())
                    }
                    None => None,
                };
                Ok(Some(Shown { plain, html }))
            });
            crate::watch::finish(vm);
            flush_std(vm);
            shown.map_err(|e| describe(vm, &e))
        })
    }

    /// A handle that interrupts this interpreter's running code from another thread.
    pub fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_returns_only_its_last_expression() {
        let python = Python::new().unwrap();
        let shown = python.run_cell("a = 2\na * 10\na * 21\n", "In[1]").unwrap();
        assert_eq!(shown.map(|s| s.plain).as_deref(), Some("42"));
        assert_eq!(python.run_cell("b = a\n", "In[2]").unwrap(), None);
        assert_eq!(python.run_cell("print('x')\n", "In[3]").unwrap(), None);
    }

    #[test]
    fn output_reaches_the_sink_as_it_is_written() {
        let python = Python::new().unwrap();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let into = seen.clone();
        python
            .capture_output(Rc::new(move |err, text: &str| {
                into.borrow_mut().push((err, text.to_string()))
            }))
            .unwrap();
        python
            .run_cell(
                "print('out')\nimport sys\nprint('err', file=sys.stderr)\n",
                "In[1]",
            )
            .unwrap();
        let seen = seen.borrow();
        assert!(seen.contains(&(false, "out".into())), "{seen:?}");
        assert!(seen.contains(&(true, "err".into())), "{seen:?}");
    }

    #[test]
    fn an_interrupt_raises_keyboard_interrupt_in_the_running_cell() {
        let python = Python::new().unwrap();
        let interrupter = python.interrupter();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            interrupter.interrupt();
        });
        // A lost interrupt would loop forever: fail the whole binary instead of hanging CI.
        let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watched = stopped.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(120));
            if !watched.load(std::sync::atomic::Ordering::Acquire) {
                eprintln!("an_interrupt_raises_keyboard_interrupt_in_the_running_cell: the interrupt was lost");
                std::process::exit(101);
            }
        });
        let error = python
            .run_cell("kept = 1\nwhile True:\n    pass\n", "In[1]")
            .unwrap_err();
        stopped.store(true, std::sync::atomic::Ordering::Release);
        stopper.join().unwrap();
        assert_eq!(error.kind, "KeyboardInterrupt");
        assert_eq!(python.eval_str("kept").unwrap(), "1");
    }
}
