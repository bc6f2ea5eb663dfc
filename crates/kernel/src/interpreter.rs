//! The interpreter thread: owns the `Session` (which is not `Send`) and runs jobs the sockets send it.
//!
//! The sockets live on tokio tasks; the session lives here, on one plain thread, so a long cell
//! never starves the heartbeat or the control channel, and `interrupt_request` can stop the cell
//! through the session's `InterruptHandle` while every variable stays in scope.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{mpsc, Arc, OnceLock};
use std::time::Duration;

use jupyter_protocol::{ClearOutput, DisplayData as WireDisplay, ExpressionResult, JupyterMessage};
use tokio::sync::{mpsc as tmpsc, oneshot};

use super::introspect;
use super::iopub::Publisher;
use super::magics;
use super::replies;
use torchlet_session::{
    Completeness, Completion, DisplayData, Frontend, InterruptHandle, Outcome, ScriptError,
    Session, SessionOptions,
};

/// One request for the interpreter thread.
pub enum Job {
    /// Run a cell.
    Execute(Box<ExecuteJob>),
    /// Completion candidates at a byte offset.
    Complete {
        code: String,
        cursor: usize,
        reply: oneshot::Sender<Completion>,
    },
    /// Documentation of the name at a byte offset, as plain text.
    Inspect {
        code: String,
        cursor: usize,
        reply: oneshot::Sender<Option<String>>,
    },
    /// Whether the code is ready to run.
    IsComplete {
        code: String,
        reply: oneshot::Sender<Completeness>,
    },
    /// A debugger request that reads variables (`inspectVariables`, `variables`, `richInspectVariables`).
    Debug {
        command: String,
        arguments: serde_json::Value,
        reply: super::debugger::VarsReply,
    },
}

/// A cell to run, and where its results go.
pub struct ExecuteJob {
    /// The cell's source.
    pub code: String,
    /// Whether `input()` may ask the front end.
    pub allow_stdin: bool,
    /// Expressions to evaluate after the cell, by name.
    pub user_expressions: HashMap<String, String>,
    /// The execute_request (for stdin routing).
    pub parent: JupyterMessage,
    /// Where the result goes.
    pub reply: oneshot::Sender<ExecuteDone>,
}

/// What running a cell produced, besides what it already published.
pub struct ExecuteDone {
    /// Value and error of the cell.
    pub outcome: Outcome,
    /// The evaluated user_expressions.
    pub user_expressions: HashMap<String, ExpressionResult>,
    /// Text to show in the pager (`name?`), if the cell asked for help.
    pub page: Option<String>,
}

impl ExecuteDone {
    /// A cell that failed inside torchlet itself.
    pub fn internal(message: String) -> ExecuteDone {
        ExecuteDone {
            outcome: Outcome {
                value: None,
                error: Some(ScriptError::unplaced("InternalError", message)),
                elapsed: Duration::ZERO,
            },
            user_expressions: HashMap::new(),
            page: None,
        }
    }

    /// The interpreter thread is gone, so nothing can run.
    pub fn lost() -> ExecuteDone {
        Self::internal(
            "the interpreter thread has stopped; restart the kernel (variables are lost)".into(),
        )
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    let what = torchlet_session::panic_text(&**panic);
    format!(
        "torchlet crashed while running this cell ({what}); please report it. \
             The kernel is still running and earlier variables are kept."
    )
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

/// Start the interpreter thread; `interrupt` is filled in once the session exists.
pub fn spawn(
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    interrupt: Arc<OnceLock<InterruptHandle>>,
) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("torchlet-interpreter".into())
        .spawn(move || serve(rx, publisher, stdin, interrupt))
        .expect("cannot start the interpreter thread");
    tx
}

fn serve(
    jobs: mpsc::Receiver<Job>,
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    interrupt: Arc<OnceLock<InterruptHandle>>,
) {
    let frontend = Rc::new(KernelFrontend {
        publisher: publisher.clone(),
        stdin,
        allow_stdin: Cell::new(false),
        parent: RefCell::new(None),
        interrupt: RefCell::new(None),
    });
    let options = SessionOptions {
        source_name: Some("<cell>".into()),
        ..Default::default()
    };
    let mut session = Session::new(options, frontend.clone());
    let handle = session.interrupt_handle();
    *frontend.interrupt.borrow_mut() = Some(handle.clone());
    let _ = interrupt.set(handle);
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Execute(job) => {
                frontend.allow_stdin.set(job.allow_stdin);
                *frontend.parent.borrow_mut() = Some(job.parent.clone());
                // A panic below the session is a torchlet bug; report it as the cell's error and
                // keep the kernel (and every variable) alive rather than killing the thread.
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    execute(&mut session, &publisher, &job)
                }));
                let done = run.unwrap_or_else(|panic| ExecuteDone::internal(panic_text(&panic)));
                frontend.allow_stdin.set(false);
                let _ = job.reply.send(done);
            }
            Job::Complete {
                code,
                cursor,
                reply,
            } => {
                let _ = reply.send(introspect::complete(&session, &code, cursor));
            }
            Job::Inspect {
                code,
                cursor,
                reply,
            } => {
                let _ = reply.send(introspect::inspect(&session, &code, cursor));
            }
            Job::IsComplete { code, reply } => {
                let _ = reply.send(session.is_complete(&code));
            }
            Job::Debug {
                command,
                arguments,
                reply,
            } => {
                let _ = reply.send(super::debugger::vars_answer(&session, &command, &arguments));
            }
        }
    }
}

fn execute(session: &mut Session, publisher: &Publisher, job: &ExecuteJob) -> ExecuteDone {
    let (mut outcome, page) = magics::run_cell(session, &job.code);
    if let Some(error) = outcome.error.as_mut().filter(|e| e.kind == "SystemExit") {
        // A notebook's kernel outlives its cells: exit() stops this cell only.
        error.message = "exit() stopped this cell; the kernel keeps running (the notebook's Kernel menu restarts or shuts it down)".into();
    }
    let mut user_expressions = HashMap::new();
    if outcome.error.is_none() && !job.user_expressions.is_empty() {
        // Expressions are evaluated for their value only: what they print is not part of the cell.
        let was_muted = publisher.set_muted(true);
        for (name, expression) in &job.user_expressions {
            let result = session.execute(expression);
            user_expressions.insert(name.clone(), replies::expression_result(&result));
        }
        publisher.set_muted(was_muted);
    }
    ExecuteDone {
        outcome,
        user_expressions,
        page,
    }
}

/// Sends what the session prints and shows to iopub, and asks the front end for `input()`.
struct KernelFrontend {
    publisher: Publisher,
    stdin: tmpsc::UnboundedSender<InputAsk>,
    allow_stdin: Cell<bool>,
    parent: RefCell<Option<JupyterMessage>>,
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
        if !self.allow_stdin.get() {
            return Err(
                "input(): this front end does not accept input (its execute request \
                        has allow_stdin false); pass values in code instead"
                    .into(),
            );
        }
        let parent = self
            .parent
            .borrow()
            .clone()
            .ok_or("input(): no request to answer")?;
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
