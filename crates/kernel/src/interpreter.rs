//! The interpreter thread: owns the language (a Rhai `Session` or Python, neither `Send`) and answers what the sockets ask of it.
//!
//! The sockets live on tokio tasks; the language lives here, on one plain thread, so a long cell
//! never starves the heartbeat or the control channel, and `interrupt_request` can stop the cell
//! through its `Interrupt` while every variable stays in scope.
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use jupyter_protocol::{ClearOutput, DisplayData as WireDisplay, JupyterMessage};
use tokio::sync::{mpsc as tmpsc, oneshot};

use super::iopub::Publisher;
use super::language::{Language, LanguageKind};
use super::python_cells::PythonCells;
use super::replies;
use torchlet_python::Interrupter;
use torchlet_session::{DisplayData, Frontend, InterruptHandle, Session, SessionOptions};

/// A question for the language, with its answer's channel built in.
type Task = Box<dyn FnOnce(&mut dyn Language) + Send>;

/// Stops the running cell from any thread, whichever the language.
#[derive(Clone)]
pub enum Interrupt {
    /// The Rhai session's flag.
    Rhai(InterruptHandle),
    /// Raises `KeyboardInterrupt` in the running Python code.
    Python(Interrupter),
}

impl Interrupt {
    /// Stop the running cell at its next operation.
    pub fn interrupt(&self) {
        match self {
            Interrupt::Rhai(handle) => handle.interrupt(),
            Interrupt::Python(interrupter) => interrupter.interrupt(),
        }
    }
}

/// The interpreter thread as the socket tasks see it: anything that needs the session is asked
/// of it here, and answered in the order asked (so a question waits behind a running cell).
#[derive(Clone)]
pub struct Interpreter {
    tasks: mpsc::Sender<Task>,
    input: InputRoute,
    kind: LanguageKind,
}

/// Why a question got no answer.
#[derive(Debug)]
pub enum Unanswered {
    /// torchlet panicked while answering it (what the panic said); the session lives on.
    Crashed(String),
    /// The interpreter thread is gone.
    Stopped,
}

impl std::fmt::Display for Unanswered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unanswered::Crashed(what) => write!(f, "torchlet crashed answering this ({what})"),
            Unanswered::Stopped => write!(f, "the interpreter has stopped"),
        }
    }
}

impl Interpreter {
    /// Run `question` with the language on the interpreter thread and wait for its answer.
    ///
    /// A panic in it (a torchlet bug) is caught there and answered as `Crashed`, so the thread,
    /// and every variable of the session, outlives it.
    pub async fn ask<R: Send + 'static>(
        &self,
        question: impl FnOnce(&mut dyn Language) -> R + Send + 'static,
    ) -> Result<R, Unanswered> {
        let (reply, answer) = oneshot::channel();
        let task: Task = Box::new(move |language| {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| question(language)));
            let _ = reply.send(
                run.map_err(|panic| Unanswered::Crashed(torchlet_session::panic_text(&*panic))),
            );
        });
        self.tasks.send(task).map_err(|_| Unanswered::Stopped)?;
        answer.await.unwrap_or(Err(Unanswered::Stopped))
    }

    /// Where `input()` asks: a question that may read input opens it to one request's client.
    pub fn input(&self) -> &InputRoute {
        &self.input
    }

    /// The language this kernel speaks.
    pub fn kind(&self) -> LanguageKind {
        self.kind
    }
}

/// Which execute_request's client `input()` asks; none while no cell that allows stdin runs.
#[derive(Clone, Default)]
pub struct InputRoute(Arc<Mutex<Option<JupyterMessage>>>);

impl InputRoute {
    /// Let `input()` ask `parent`'s client until the returned guard drops (a panic drops it too).
    pub fn open(&self, parent: JupyterMessage) -> OpenInput<'_> {
        *self.lock() = Some(parent);
        OpenInput(self)
    }

    fn parent(&self) -> Option<JupyterMessage> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<JupyterMessage>> {
        // The value is replaced whole, so a panic elsewhere cannot leave it half written.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `input()` may ask while this lives.
pub struct OpenInput<'a>(&'a InputRoute);

impl Drop for OpenInput<'_> {
    fn drop(&mut self) {
        *self.0.lock() = None;
    }
}

/// A request for one line from the front end, served by the stdin task.
pub struct InputAsk {
    /// The execute_request whose client is asked (its identity routes the request).
    pub parent: JupyterMessage,
    /// The prompt to show.
    pub prompt: String,
    /// Whether to hide the typed text.
    pub password: bool,
    /// Where the typed line (or why there is none) goes.
    pub reply: mpsc::Sender<Result<String, String>>,
}

/// Start the interpreter thread for `kind`; `interrupt` is filled in once the language exists.
pub fn spawn(
    kind: LanguageKind,
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    interrupt: Arc<OnceLock<Interrupt>>,
) -> Interpreter {
    let (tasks, rx) = mpsc::channel::<Task>();
    let input = InputRoute::default();
    let route = input.clone();
    std::thread::Builder::new()
        .name("torchlet-interpreter".into())
        .spawn(move || {
            let language = match kind {
                LanguageKind::Rhai => Ok(rhai_session(publisher, stdin, route, &interrupt)),
                LanguageKind::Python => python_cells(publisher, &interrupt),
            };
            match language {
                Ok(mut language) => serve(rx, language.as_mut()),
                // Every question then goes unanswered, and the front end says the kernel died.
                Err(why) => eprintln!("torchlet kernel: {why}"),
            }
        })
        .expect("cannot start the interpreter thread");
    Interpreter { tasks, input, kind }
}

fn serve(tasks: mpsc::Receiver<Task>, language: &mut dyn Language) {
    while let Ok(task) = tasks.recv() {
        task(language);
    }
}

/// The Rhai session, its output and `input()` routed through the kernel.
fn rhai_session(
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    input: InputRoute,
    interrupt: &OnceLock<Interrupt>,
) -> Box<dyn Language> {
    let frontend = Rc::new(KernelFrontend {
        publisher,
        stdin,
        input,
        interrupt: RefCell::new(None),
    });
    let options = SessionOptions {
        source_name: Some("In[0]".into()),
        ..Default::default()
    };
    let session = Session::new(options, frontend.clone());
    let handle = session.interrupt_handle();
    *frontend.interrupt.borrow_mut() = Some(handle.clone());
    let _ = interrupt.set(Interrupt::Rhai(handle));
    Box::new(session)
}

/// A Python interpreter whose output goes to iopub.
fn python_cells(
    publisher: Publisher,
    interrupt: &OnceLock<Interrupt>,
) -> Result<Box<dyn Language>, String> {
    let cells = PythonCells::new(publisher)?;
    let _ = interrupt.set(Interrupt::Python(cells.python().interrupter()));
    Ok(Box::new(cells))
}

/// Sends what the session prints and shows to iopub, and asks the front end for `input()`.
struct KernelFrontend {
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    input: InputRoute,
    interrupt: RefCell<Option<InterruptHandle>>,
}

impl Frontend for KernelFrontend {
    fn stdout(&self, text: &str) {
        self.publisher.stream(false, text);
    }

    fn stderr(&self, text: &str) {
        self.publisher.stream(true, text);
    }

    fn display(&self, data: &DisplayData) {
        self.publisher.output(WireDisplay {
            data: replies::media(data),
            metadata: Default::default(),
            transient: None,
        });
    }

    fn picture(&self, picture: &torchlet_session::Picture) {
        let (data, display_id) = replies::picture_media(picture);
        if picture.update && display_id.is_some() {
            self.publisher.output(jupyter_protocol::UpdateDisplayData {
                data,
                metadata: Default::default(),
                transient: jupyter_protocol::Transient { display_id },
            });
        } else {
            self.publisher.output(WireDisplay {
                data,
                metadata: Default::default(),
                transient: Some(jupyter_protocol::Transient { display_id }),
            });
        }
    }

    fn clear_output(&self, wait: bool) {
        self.publisher.output(ClearOutput { wait });
    }

    fn input(&self, prompt: &str, password: bool) -> Result<String, String> {
        let Some(parent) = self.input.parent() else {
            return Err(
                "input(): this front end does not accept input (its execute request \
                        has allow_stdin false); pass values in code instead"
                    .into(),
            );
        };
        // The prompt must come after everything printed before it.
        self.publisher.flush();
        let (tx, rx) = mpsc::channel();
        let ask = InputAsk {
            parent,
            prompt: prompt.to_string(),
            password,
            reply: tx,
        };
        self.stdin
            .send(ask)
            .map_err(|_| "input(): the kernel's stdin channel is closed".to_string())?;
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(answer) => return answer,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.interrupt.borrow().as_ref().is_some_and(|h| h.is_set()) {
                        return Err("input(): interrupted while waiting for input".into());
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("input(): the front end did not answer".into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interpreter() -> Interpreter {
        let (iopub, _) = tmpsc::unbounded_channel();
        let (stdin, _) = tmpsc::unbounded_channel();
        spawn(
            LanguageKind::Rhai,
            Publisher::new(iopub),
            stdin,
            Arc::new(OnceLock::new()),
        )
    }

    #[test]
    fn questions_share_one_session_and_a_panic_ends_only_its_own() {
        let interpreter = interpreter();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let defined = interpreter.ask(|s| s.evaluate("let kept = 41;").error.is_none());
            assert!(matches!(defined.await, Ok(true)));
            let crashed = interpreter.ask(|_| -> usize { panic!("a bug below the session") });
            assert!(
                matches!(crashed.await, Err(Unanswered::Crashed(what)) if what == "a bug below the session")
            );
            let read = interpreter.ask(|s| s.evaluate("kept + 1").value.map(|v| v.plain));
            assert_eq!(read.await.ok().flatten().as_deref(), Some("42"));
        });
    }

    #[test]
    fn input_is_routed_only_while_a_question_holds_it_open() {
        let route = InputRoute::default();
        let request: JupyterMessage = jupyter_protocol::ExecuteRequest::new("1".into()).into();
        {
            let _open = route.open(request.clone());
            let parent = route.parent().map(|p| p.header.msg_id);
            assert_eq!(parent, Some(request.header.msg_id.clone()));
        }
        assert!(route.parent().is_none());
    }
}
