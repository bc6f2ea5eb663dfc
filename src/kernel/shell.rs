//! The shell channel: requests answered one at a time, in order, each between `busy` and `idle`.
use std::collections::HashMap;
use std::sync::{mpsc, Arc, OnceLock};

use jupyter_protocol::{
    CommInfoReply, CompleteReply, CompleteRequest, ExecuteInput, ExecuteReply, ExecuteRequest,
    ExecuteResult, ExecutionCount, ExecutionState, HistoryReply, InspectReply, InspectRequest,
    InterruptReply, IsCompleteReply, JupyterMessage, JupyterMessageContent, Media, MediaType,
    Payload, ReplyStatus, Transient,
};
use jupyter_zmq_client::{KernelShellConnection, RouterRecvConnection, RouterSendConnection};
use tokio::sync::{mpsc as tmpsc, oneshot};

use super::history::History;
use super::interpreter::{ExecuteDone, ExecuteJob, Job};
use super::iopub::Publisher;
use super::replies;
use super::server::{bad_message, shutdown_reply, unsupported};
use super::wire::{self, Incoming};
use crate::session::{Completeness, InterruptHandle};

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

/// The shell socket and the state requests share: the execution counter and the history.
pub struct Shell {
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
    /// Serve `socket`, running cells through `jobs`; a shutdown_request signals `shutdown`.
    pub fn new(
        socket: KernelShellConnection,
        publisher: Publisher,
        jobs: mpsc::Sender<Job>,
        interrupt: Arc<OnceLock<InterruptHandle>>,
        shutdown: tmpsc::UnboundedSender<()>,
    ) -> Shell {
        let (send, recv) = socket.split();
        Shell {
            send,
            recv,
            publisher,
            jobs,
            interrupt,
            shutdown,
            count: 0,
            history: History::default(),
            aborting: false,
        }
    }

    /// Answer requests until the process ends.
    pub async fn run(mut self) {
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

    /// Run `job` on the interpreter thread and wait for its answer.
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Job) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.jobs.send(make(tx)).ok()?;
        rx.await.ok()
    }

    async fn handle(&mut self, incoming: Incoming) {
        let message = &incoming.message;
        self.publisher.status(ExecutionState::Busy, message);
        let mut stop = false;
        let reply = match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(replies::kernel_info().as_child_of(message))
            }
            JupyterMessageContent::ExecuteRequest(request) => {
                Some(self.execute(request, message).await)
            }
            JupyterMessageContent::CompleteRequest(request) => {
                Some(self.complete(request).await.as_child_of(message))
            }
            JupyterMessageContent::InspectRequest(request) => {
                Some(self.inspect(request).await.as_child_of(message))
            }
            JupyterMessageContent::IsCompleteRequest(request) => {
                Some(self.is_complete(&request.code).await.as_child_of(message))
            }
            JupyterMessageContent::HistoryRequest(request) => {
                Some(HistoryReply::new(self.history.query(request)).as_child_of(message))
            }
            JupyterMessageContent::CommInfoRequest(_) => {
                Some(CommInfoReply::default().as_child_of(message))
            }
            // Old clients send these on shell; serve them as control does.
            JupyterMessageContent::InterruptRequest(_) => {
                if let Some(handle) = self.interrupt.get() {
                    handle.interrupt();
                }
                Some(InterruptReply::new().as_child_of(message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                stop = true;
                Some(shutdown_reply(request.restart, message, &self.publisher))
            }
            // torchlet opens no comms: comm messages have nowhere to go.
            JupyterMessageContent::CommOpen(_)
            | JupyterMessageContent::CommMsg(_)
            | JupyterMessageContent::CommClose(_) => None,
            _ => unsupported(&incoming, "shell"),
        };
        if let Some(reply) = reply {
            if let Err(e) = self.send.send(reply).await {
                eprintln!("torchlet kernel: cannot reply on shell: {e}");
            }
        }
        self.publisher.status(ExecutionState::Idle, message);
        if stop {
            let _ = self.shutdown.send(());
        }
    }

    async fn complete(&self, request: &CompleteRequest) -> CompleteReply {
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
        CompleteReply {
            matches: found.matches,
            cursor_start: replies::char_offset(&code, start),
            cursor_end: replies::char_offset(&code, end),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        }
    }

    async fn inspect(&self, request: &InspectRequest) -> InspectReply {
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
        InspectReply {
            found: text.is_some(),
            data: text.map_or_else(Media::default, |t| Media::new(vec![MediaType::Plain(t)])),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        }
    }

    async fn is_complete(&self, code: &str) -> IsCompleteReply {
        let status = self
            .ask(|reply| Job::IsComplete {
                code: code.to_string(),
                reply,
            })
            .await;
        match status {
            Some(Completeness::Complete) => IsCompleteReply::complete(),
            Some(Completeness::Incomplete) => {
                IsCompleteReply::incomplete(replies::continuation_indent(code))
            }
            Some(Completeness::Invalid) => IsCompleteReply::invalid(),
            None => IsCompleteReply::unknown(),
        }
    }

    /// Run a cell: execute_input, its outputs as they come, then its result or error; the reply.
    async fn execute(
        &mut self,
        request: &ExecuteRequest,
        message: &JupyterMessage,
    ) -> JupyterMessage {
        if self.aborting {
            return self.reply_to_execute(
                ReplyStatus::Aborted,
                None,
                vec![],
                HashMap::new(),
                message,
            );
        }
        let silent = request.silent;
        let store = request.store_history && !silent;
        if store {
            self.count += 1;
        }
        if !silent {
            let input = ExecuteInput {
                code: request.code.clone(),
                execution_count: ExecutionCount::new(self.count),
            };
            self.publisher.send(input, message);
        }
        self.publisher.begin(message, silent);
        let done = self
            .ask(|reply| {
                Job::Execute(Box::new(ExecuteJob {
                    code: request.code.clone(),
                    allow_stdin: request.allow_stdin,
                    user_expressions: request.user_expressions.clone().unwrap_or_default(),
                    parent: message.clone(),
                    reply,
                }))
            })
            .await
            .unwrap_or_else(ExecuteDone::lost);
        if !silent {
            self.publish_result(&done);
        }
        self.publisher.end();
        let outcome = &done.outcome;
        if store {
            let shown = outcome.value.as_ref().map_or("", |v| v.plain.as_str());
            self.history.record(self.count, &request.code, shown);
        }
        let payload = done.page.iter().map(|text| Payload::Page {
            data: Media::new(vec![MediaType::Plain(text.clone())]),
            start: 0,
        });
        let error = outcome
            .error
            .as_ref()
            .map(|e| replies::reply_error(e, self.count));
        let status = if error.is_some() {
            self.aborting = request.stop_on_error;
            ReplyStatus::Error
        } else {
            ReplyStatus::Ok
        };
        self.reply_to_execute(
            status,
            error,
            payload.collect(),
            done.user_expressions,
            message,
        )
    }

    /// The cell's value as execute_result, or its error as error.
    fn publish_result(&self, done: &ExecuteDone) {
        let count = ExecutionCount::new(self.count);
        if let Some(value) = &done.outcome.value {
            self.publisher.output(ExecuteResult {
                execution_count: count,
                data: replies::media(value),
                metadata: Default::default(),
                // `None` would serialise as null, which strict clients reject.
                transient: Some(Transient { display_id: None }),
            });
        }
        if let Some(error) = &done.outcome.error {
            self.publisher
                .output(replies::error_output(error, self.count));
        }
    }

    fn reply_to_execute(
        &self,
        status: ReplyStatus,
        error: Option<Box<jupyter_protocol::ReplyError>>,
        payload: Vec<Payload>,
        user_expressions: HashMap<String, jupyter_protocol::ExpressionResult>,
        message: &JupyterMessage,
    ) -> JupyterMessage {
        ExecuteReply {
            status,
            execution_count: ExecutionCount::new(self.count),
            payload,
            // Always an object: `null` fails strict clients (jupyter_kernel_test among them).
            user_expressions: Some(user_expressions),
            error,
        }
        .as_child_of(message)
    }
}
