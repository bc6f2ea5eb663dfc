//! The kernel's sockets and the tasks that serve them: shell, control, stdin, heartbeat, iopub.
//!
//! Shell requests are handled one at a time, in order, each wrapped in `busy` … `idle` on iopub.
//! Cells run on the interpreter thread, so control (interrupt, shutdown, kernel_info) and the
//! heartbeat answer while a cell runs.
use std::collections::HashMap;
use std::sync::{mpsc, Arc, OnceLock};
use std::time::Duration;

use jupyter_protocol::{
    CommInfoReply, CompleteReply, ConnectionInfo, ExecuteReply, ExecuteRequest, ExecuteResult,
    ExecutionCount, ExecutionState, HistoryReply, InputRequest, InspectReply, InterruptReply,
    IsCompleteReply, JupyterMessage, JupyterMessageContent, Media, MediaType, Payload, ReplyStatus,
    ShutdownReply, Transient,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_xpub_connection, create_kernel_shell_connection,
    create_kernel_stdin_connection, KernelControlConnection, KernelHeartbeatConnection,
    KernelStdinConnection, RouterRecvConnection, RouterSendConnection, RuntimeError,
};
use tokio::sync::{mpsc as tmpsc, oneshot};

use super::history::History;
use super::interpreter::{self, ExecuteDone, ExecuteJob, InputAsk, Job};
use super::iopub::{self, Publisher};
use super::replies;
use super::wire::{self, Incoming};
use crate::session::{Completeness, InterruptHandle};

/// Bind every socket of `info`, serve until a shutdown_request, and return.
pub async fn serve(info: ConnectionInfo) -> Result<(), String> {
    let session_id = uuid::Uuid::new_v4().to_string();
    let bind = |what: &str, e: RuntimeError| format!("cannot bind the {what} socket: {e}");
    let iopub = create_kernel_iopub_xpub_connection(&info, &session_id)
        .await
        .map_err(|e| bind("iopub", e))?;
    let shell = create_kernel_shell_connection(&info, &session_id)
        .await
        .map_err(|e| bind("shell", e))?;
    let control = create_kernel_control_connection(&info, &session_id)
        .await
        .map_err(|e| bind("control", e))?;
    let stdin = create_kernel_stdin_connection(&info, &session_id)
        .await
        .map_err(|e| bind("stdin", e))?;
    let heartbeat = create_kernel_heartbeat_connection(&info)
        .await
        .map_err(|e| bind("heartbeat", e))?;

    let (iopub_tx, iopub_rx) = tmpsc::unbounded_channel();
    let publisher = Publisher::new(iopub_tx);
    tokio::spawn(iopub::run_iopub(iopub, iopub_rx));
    tokio::spawn(iopub::run_stream_flusher(publisher.clone()));
    tokio::spawn(run_heartbeat(heartbeat));
    let (stdin_tx, stdin_rx) = tmpsc::unbounded_channel();
    tokio::spawn(run_stdin(stdin, stdin_rx));

    let interrupt = Arc::new(OnceLock::new());
    let jobs = interpreter::spawn(publisher.clone(), stdin_tx, interrupt.clone());
    tokio::spawn(forward_sigint(interrupt.clone()));

    let (shutdown_tx, shutdown_rx) = tmpsc::unbounded_channel();
    tokio::spawn(run_control(
        control,
        publisher.clone(),
        interrupt.clone(),
        shutdown_tx.clone(),
    ));
    let (send, recv) = shell.split();
    let shell = Shell {
        send,
        recv,
        publisher: publisher.clone(),
        jobs,
        interrupt,
        shutdown: shutdown_tx,
        count: 0,
        history: History::default(),
        aborting: false,
    };
    tokio::spawn(shell.run());
    wait_for_shutdown(shutdown_rx).await;
    // Let the iopub task publish the last idle before the process goes.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(())
}

async fn wait_for_shutdown(mut rx: tmpsc::UnboundedReceiver<()>) {
    let _ = rx.recv().await;
}

/// Jupyter's "signal" interrupt (and Ctrl-C in a terminal) stops the running cell, not the kernel.
async fn forward_sigint(interrupt: Arc<OnceLock<InterruptHandle>>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
            return;
        };
        while sigint.recv().await.is_some() {
            if let Some(handle) = interrupt.get() {
                handle.interrupt();
            }
        }
    }
    #[cfg(not(unix))]
    {
        while tokio::signal::ctrl_c().await.is_ok() {
            if let Some(handle) = interrupt.get() {
                handle.interrupt();
            }
        }
    }
}

async fn run_heartbeat(mut heartbeat: KernelHeartbeatConnection) {
    loop {
        if let Err(e) = heartbeat.single_heartbeat().await {
            eprintln!("torchlet kernel: heartbeat: {e}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Log a message that could not be read, and back off if the socket itself failed.
async fn bad_message(channel: &str, error: RuntimeError) {
    eprintln!("torchlet kernel: dropped a bad {channel} message: {error}");
    if matches!(error, RuntimeError::ZmqError(_) | RuntimeError::IoError(_)) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A reply with status "error" for a request torchlet cannot serve: an unknown type, or content
/// that does not parse (`problem`). Non-requests get no reply.
fn unsupported(incoming: &Incoming, channel: &str) -> Option<JupyterMessage> {
    let message = &incoming.message;
    let JupyterMessageContent::UnknownMessage(unknown) = &message.content else {
        return None;
    };
    if !unknown.msg_type.ends_with("_request") {
        eprintln!("torchlet kernel: ignored {} on {channel}", unknown.msg_type);
        return None;
    }
    let (ename, evalue) = match &incoming.problem {
        Some(problem) => ("BadRequest", problem.clone()),
        None => (
            "UnsupportedRequest",
            format!(
                "torchlet does not serve {} on the {channel} channel",
                unknown.msg_type
            ),
        ),
    };
    let content = unknown.reply(serde_json::json!({
        "status": "error",
        "ename": ename,
        "evalue": evalue,
        "traceback": [],
    }));
    Some(JupyterMessage::new(content, Some(message)))
}

/// The shutdown_reply, also published on iopub (as ipykernel does) so every client learns of it.
fn shutdown_reply(
    restart: bool,
    request: &JupyterMessage,
    publisher: &Publisher,
) -> JupyterMessage {
    let reply = ShutdownReply {
        restart,
        status: ReplyStatus::Ok,
        error: None,
    };
    publisher.send(reply.clone(), request);
    reply.as_child_of(request)
}

async fn run_control(
    mut control: KernelControlConnection,
    publisher: Publisher,
    interrupt: Arc<OnceLock<InterruptHandle>>,
    shutdown: tmpsc::UnboundedSender<()>,
) {
    loop {
        let incoming = match wire::read(&mut control).await {
            Ok(incoming) => incoming,
            Err(e) => {
                bad_message("control", e).await;
                continue;
            }
        };
        let message = &incoming.message;
        publisher.status(ExecutionState::Busy, message);
        let mut stop = false;
        let reply = match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(replies::kernel_info().as_child_of(&message))
            }
            JupyterMessageContent::InterruptRequest(_) => {
                if let Some(handle) = interrupt.get() {
                    handle.interrupt();
                }
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                stop = true;
                Some(shutdown_reply(request.restart, message, &publisher))
            }
            _ => unsupported(&incoming, "control"),
        };
        if let Some(reply) = reply {
            if let Err(e) = control.send(reply).await {
                eprintln!("torchlet kernel: cannot reply on control: {e}");
            }
        }
        publisher.status(ExecutionState::Idle, message);
        if stop {
            let _ = shutdown.send(());
        }
    }
}

/// Serve `input()`: send input_request to the client of the running cell, wait for its reply.
async fn run_stdin(mut stdin: KernelStdinConnection, mut asks: tmpsc::UnboundedReceiver<InputAsk>) {
    let mut next = asks.recv().await;
    while let Some(ask) = next.take() {
        let request = InputRequest {
            prompt: ask.prompt.clone(),
            password: ask.password,
        }
        .as_child_of(&ask.parent);
        if let Err(e) = stdin.send(request).await {
            let _ = ask
                .reply
                .send(Err(format!("input(): cannot ask the front end: {e}")));
            next = asks.recv().await;
            continue;
        }
        loop {
            tokio::select! {
                read = stdin.read() => match read {
                    Ok(JupyterMessage { content: JupyterMessageContent::InputReply(r), .. }) => {
                        let _ = ask.reply.send(Ok(r.value));
                        next = asks.recv().await;
                        break;
                    }
                    Ok(other) => eprintln!(
                        "torchlet kernel: ignored {} on stdin", other.header.msg_type
                    ),
                    Err(e) => bad_message("stdin", e).await,
                },
                // The interpreter gave up on the old question (interrupt) and asks a new one.
                newer = asks.recv() => {
                    next = newer;
                    break;
                }
            }
        }
    }
}

/// Poll `future` once: its output if it is ready now, else `None` (the future is dropped, which
/// the socket's receive allows: a message is taken off its queue only when returned).
fn poll_once<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(output) => Some(output),
        std::task::Poll::Pending => None,
    }
}

/// The shell channel: requests in order, each between busy and idle.
struct Shell {
    send: RouterSendConnection,
    recv: RouterRecvConnection,
    publisher: Publisher,
    jobs: mpsc::Sender<Job>,
    interrupt: Arc<OnceLock<InterruptHandle>>,
    shutdown: tmpsc::UnboundedSender<()>,
    /// The execution counter (In[n]).
    count: usize,
    history: History,
    /// A cell failed with stop_on_error: abort the execute requests already queued behind it.
    aborting: bool,
}

impl Shell {
    async fn run(mut self) {
        loop {
            match wire::read(&mut self.recv).await {
                Ok(incoming) => self.handle(incoming).await,
                Err(e) => bad_message("shell", e).await,
            }
            if self.aborting {
                self.abort_queued().await;
            }
        }
    }

    /// Answer the requests already waiting: execute requests are aborted (as ipykernel does after a
    /// failed cell with stop_on_error), others served. Requests sent later run normally.
    async fn abort_queued(&mut self) {
        while let Some(read) = poll_once(wire::read(&mut self.recv)) {
            match read {
                Ok(incoming) => self.handle(incoming).await,
                Err(e) => bad_message("shell", e).await,
            }
        }
        self.aborting = false;
    }

    async fn reply(&mut self, reply: JupyterMessage) {
        if let Err(e) = self.send.send(reply).await {
            eprintln!("torchlet kernel: cannot reply on shell: {e}");
        }
    }

    /// Run `job` on the interpreter thread and wait for its answer.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Job) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(make(tx)).ok()?;
        rx.await.ok()
    }

    async fn handle(&mut self, incoming: Incoming) {
        let message = incoming.message.clone();
        let mut stop = false;
        self.publisher.status(ExecutionState::Busy, &message);
        let reply: Option<JupyterMessage> = match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(replies::kernel_info().as_child_of(&message))
            }
            JupyterMessageContent::ExecuteRequest(request) => {
                let request = request.clone();
                Some(self.execute(request, &message).await)
            }
            JupyterMessageContent::CompleteRequest(request) => {
                let code = request.code.clone();
                let cursor = replies::byte_offset(&code, request.cursor_pos);
                let found = self
                    .ask(|reply| Job::Complete {
                        code: code.clone(),
                        cursor,
                        reply,
                    })
                    .await
                    .unwrap_or_default();
                let (start, end) = if found.matches.is_empty() {
                    (cursor, cursor)
                } else {
                    (found.start, found.end)
                };
                Some(
                    CompleteReply {
                        matches: found.matches,
                        cursor_start: replies::char_offset(&code, start),
                        cursor_end: replies::char_offset(&code, end),
                        metadata: Default::default(),
                        status: ReplyStatus::Ok,
                        error: None,
                    }
                    .as_child_of(&message),
                )
            }
            JupyterMessageContent::InspectRequest(request) => {
                let code = request.code.clone();
                let cursor = replies::byte_offset(&code, request.cursor_pos);
                let text = self
                    .ask(|reply| Job::Inspect {
                        code,
                        cursor,
                        reply,
                    })
                    .await
                    .flatten();
                Some(
                    InspectReply {
                        found: text.is_some(),
                        data: text
                            .map_or_else(Media::default, |t| Media::new(vec![MediaType::Plain(t)])),
                        metadata: Default::default(),
                        status: ReplyStatus::Ok,
                        error: None,
                    }
                    .as_child_of(&message),
                )
            }
            JupyterMessageContent::IsCompleteRequest(request) => {
                let code = request.code.clone();
                let status = self
                    .ask(|reply| Job::IsComplete {
                        code: code.clone(),
                        reply,
                    })
                    .await;
                let reply = match status {
                    Some(Completeness::Complete) => IsCompleteReply::complete(),
                    Some(Completeness::Incomplete) => {
                        IsCompleteReply::incomplete(replies::continuation_indent(&code))
                    }
                    Some(Completeness::Invalid) => IsCompleteReply::invalid(),
                    None => IsCompleteReply::unknown(),
                };
                Some(reply.as_child_of(&message))
            }
            JupyterMessageContent::HistoryRequest(request) => {
                Some(HistoryReply::new(self.history.query(request)).as_child_of(&message))
            }
            JupyterMessageContent::CommInfoRequest(_) => {
                Some(CommInfoReply::default().as_child_of(&message))
            }
            // Old clients send these on shell; serve them as control does.
            JupyterMessageContent::InterruptRequest(_) => {
                if let Some(handle) = self.interrupt.get() {
                    handle.interrupt();
                }
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                stop = true;
                Some(shutdown_reply(request.restart, &message, &self.publisher))
            }
            // torchlet opens no comms: comm messages have nowhere to go.
            JupyterMessageContent::CommOpen(_)
            | JupyterMessageContent::CommMsg(_)
            | JupyterMessageContent::CommClose(_) => None,
            _ => unsupported(&incoming, "shell"),
        };
        if let Some(reply) = reply {
            self.reply(reply).await;
        }
        self.publisher.status(ExecutionState::Idle, &message);
        if stop {
            let _ = self.shutdown.send(());
        }
    }

    async fn execute(
        &mut self,
        request: ExecuteRequest,
        message: &JupyterMessage,
    ) -> JupyterMessage {
        if self.aborting {
            return ExecuteReply {
                status: ReplyStatus::Aborted,
                execution_count: ExecutionCount::new(self.count),
                payload: vec![],
                user_expressions: Some(HashMap::new()),
                error: None,
            }
            .as_child_of(message);
        }
        let silent = request.silent;
        let store = request.store_history && !silent;
        if store {
            self.count += 1;
        }
        let count = self.count;
        if !silent {
            self.publisher.send(
                jupyter_protocol::ExecuteInput {
                    code: request.code.clone(),
                    execution_count: ExecutionCount::new(count),
                },
                message,
            );
        }
        self.publisher.begin(message, silent);
        let done = self
            .ask(|reply| {
                Job::Execute(ExecuteJob {
                    code: request.code.clone(),
                    allow_stdin: request.allow_stdin,
                    user_expressions: request.user_expressions.clone().unwrap_or_default(),
                    parent: message.clone(),
                    reply,
                })
            })
            .await;
        let done = done.unwrap_or_else(|| ExecuteDone::lost());
        let outcome = &done.outcome;
        // Silent cells publish no results (the publisher is muted too; this keeps it explicit).
        if let Some(value) = outcome.value.as_ref().filter(|_| !silent) {
            self.publisher.output(ExecuteResult {
                execution_count: ExecutionCount::new(count),
                data: replies::media(value),
                metadata: Default::default(),
                // `None` would serialise as null, which strict clients reject.
                transient: Some(Transient { display_id: None }),
            });
        }
        if let Some(error) = outcome.error.as_ref().filter(|_| !silent) {
            self.publisher.output(replies::error_output(error, count));
        }
        self.publisher.end();
        if store {
            let shown = outcome.value.as_ref().map_or("", |v| v.plain.as_str());
            self.history.record(count, &request.code, shown);
        }
        let payload = done
            .page
            .iter()
            .map(|text| Payload::Page {
                data: Media::new(vec![MediaType::Plain(text.clone())]),
                start: 0,
            })
            .collect();
        let (status, error) = match &outcome.error {
            Some(e) => {
                self.aborting = request.stop_on_error;
                (ReplyStatus::Error, Some(replies::reply_error(e, count)))
            }
            None => (ReplyStatus::Ok, None),
        };
        ExecuteReply {
            status,
            execution_count: ExecutionCount::new(count),
            payload,
            user_expressions: Some(done.user_expressions),
            error,
        }
        .as_child_of(message)
    }
}
