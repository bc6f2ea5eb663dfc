//! The shell channel: requests answered one at a time, in order, each between `busy` and `idle`.
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jupyter_protocol::{
    CommClose, CommInfoReply, CompleteReply, CompleteRequest, ExecuteInput, ExecuteReply,
    ExecuteRequest, ExecuteResult, ExecutionCount, ExecutionState, HistoryReply, InspectReply,
    InspectRequest, InterruptReply, IsCompleteReply, JupyterMessage, JupyterMessageContent, Media,
    MediaType, Payload, ReplyStatus, Transient,
};
use jupyter_zmq_client::{KernelShellConnection, RouterRecvConnection, RouterSendConnection};
use tokio::sync::mpsc as tmpsc;

use super::cell::{self, ExecuteDone};
use super::debugger::Debugger;
use super::history::History;
use super::interpreter::{Interpreter, Interrupt, Unanswered};
use super::iopub::Publisher;
use super::replies;
use super::server::{bad_message, send_reply, shutdown_reply, unsupported};
use super::wire::{self, Incoming};
use torchlet_session::Completeness;

/// How long after a failed cell a request made before the failure may still arrive and be aborted.
/// It only bounds the damage of a client clock running behind the kernel's: requests in flight
/// normally arrive within milliseconds.
const ABORT_IN_FLIGHT_FOR: Duration = Duration::from_secs(2);

/// A request as it came off the socket, and when.
struct Arrival {
    at: SystemTime,
    incoming: Incoming,
}

/// After a failed cell with stop_on_error: which execute requests to abort.
///
/// Run All sends every cell at once, and a cell can fail before the requests behind it have even
/// reached the kernel. ipykernel aborts what is queued when the error happens; torchlet aborts
/// every request that had arrived by then, and also every request the client made before then
/// (its header date) that is still in flight, so however the requests are spread over the
/// socket, those sent before the failure are aborted and those sent after it run.
#[derive(Clone, Copy)]
struct Abort {
    failed_at: SystemTime,
}

impl Abort {
    fn covers(&self, arrival: &Arrival) -> bool {
        if arrival.at <= self.failed_at {
            return true;
        }
        let micros = arrival.incoming.message.header.date.timestamp_micros();
        // A missing date reads as the epoch: no evidence of when the request was made.
        let Some(made) = u64::try_from(micros)
            .ok()
            .filter(|m| *m > 0)
            .map(|m| UNIX_EPOCH + Duration::from_micros(m))
        else {
            return false;
        };
        made <= self.failed_at && arrival.at <= self.failed_at + ABORT_IN_FLIGHT_FOR
    }
}

/// Read shell requests as they come and stamp them, so the shell knows what was queued when.
///
/// An interrupt_request (old clients send it on shell) stops the running cell as it arrives: the
/// shell answers one request at a time, so waiting for its turn would interrupt nothing. Its reply
/// still comes in order, after the interrupted cell's.
async fn read_requests(
    mut recv: RouterRecvConnection,
    arrivals: tmpsc::UnboundedSender<Arrival>,
    interrupt: Arc<OnceLock<Interrupt>>,
) {
    loop {
        match wire::read(&mut recv).await {
            Ok(incoming) => {
                if matches!(
                    incoming.message.content,
                    JupyterMessageContent::InterruptRequest(_)
                ) {
                    if let Some(handle) = interrupt.get() {
                        handle.interrupt();
                    }
                }
                let arrival = Arrival {
                    at: SystemTime::now(),
                    incoming,
                };
                if arrivals.send(arrival).is_err() {
                    return;
                }
            }
            Err(e) => bad_message("shell", e).await,
        }
    }
}

/// The shell socket and the state requests share: the execution counter and the history.
pub struct Shell {
    send: RouterSendConnection,
    /// Requests as [`read_requests`] takes them off the socket.
    arrivals: tmpsc::UnboundedReceiver<Arrival>,
    publisher: Publisher,
    interpreter: Interpreter,
    shutdown: tmpsc::UnboundedSender<()>,
    /// The execution counter (In[n]).
    count: usize,
    history: History,
    /// A cell failed with stop_on_error: the execute requests sent before that are aborted.
    abort: Option<Abort>,
    /// The breakpoints control has set, which a cell that runs says it does not stop at.
    debugger: Arc<Debugger>,
}

impl Shell {
    /// Serve `socket` (its reading starts now, on its own task), asking `interpreter` whatever
    /// needs the session; a shutdown_request signals `shutdown`; `debugger` holds the breakpoints.
    pub fn new(
        socket: KernelShellConnection,
        publisher: Publisher,
        interpreter: Interpreter,
        interrupt: Arc<OnceLock<Interrupt>>,
        (shutdown, debugger): (tmpsc::UnboundedSender<()>, Arc<Debugger>),
    ) -> Shell {
        let (send, recv) = socket.split();
        let (tx, arrivals) = tmpsc::unbounded_channel();
        tokio::spawn(read_requests(recv, tx, interrupt));
        Shell {
            send,
            arrivals,
            publisher,
            interpreter,
            shutdown,
            count: 0,
            history: History::default(),
            abort: None,
            debugger,
        }
    }

    /// Answer requests until the process ends.
    pub async fn run(mut self) {
        while let Some(arrival) = self.arrivals.recv().await {
            self.handle(arrival).await;
        }
    }

    async fn handle(&mut self, arrival: Arrival) {
        let aborted = matches!(
            arrival.incoming.message.content,
            JupyterMessageContent::ExecuteRequest(_)
        ) && self.abort.is_some_and(|abort| abort.covers(&arrival));
        let incoming = arrival.incoming;
        let message = &incoming.message;
        self.publisher.status(ExecutionState::Busy, message);
        let mut stop = false;
        let reply = match &message.content {
            _ if aborted => Some(aborted_reply(message)),
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(replies::kernel_info(self.interpreter.kind()).as_child_of(message))
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
            // Old clients send these on shell: the cell was interrupted when it arrived.
            JupyterMessageContent::InterruptRequest(_) => {
                Some(InterruptReply::new().as_child_of(message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                stop = true;
                Some(shutdown_reply(request.restart, message, &self.publisher))
            }
            // torchlet registers no comm targets. As ipykernel does for a target it does not know,
            // a comm the front end opens is closed at once (comm_close on iopub), and messages to
            // comms that do not exist are dropped; none of them has a reply.
            JupyterMessageContent::CommOpen(open) => {
                let close = CommClose {
                    comm_id: open.comm_id.clone(),
                    data: Default::default(),
                };
                self.publisher.send(close, message);
                None
            }
            JupyterMessageContent::CommMsg(_) | JupyterMessageContent::CommClose(_) => None,
            // Served on control; answered the same way here rather than left without a reply.
            JupyterMessageContent::DebugRequest(request) => {
                Some(replies::debug_reply(request).as_child_of(message))
            }
            _ => unsupported(&incoming, "shell"),
        };
        if let Some(mut reply) = reply {
            // Outputs first, then the reply, as ipykernel flushes its streams before replying.
            self.publisher.flushed().await;
            // Dated when sent, as ipykernel's Session.send dates it: stream text flushed just now
            // is then dated before its reply, so a client can check the order on the kernel's own
            // clock, which two sockets' arrival order cannot show.
            reply.header.date = chrono::Utc::now();
            send_reply(&mut self.send, reply, "shell").await;
        }
        self.publisher.status(ExecutionState::Idle, message);
        if stop {
            let _ = self.shutdown.send(());
        }
    }

    async fn complete(&self, request: &CompleteRequest) -> CompleteReply {
        let code = request.code.clone();
        let cursor = replies::byte_offset(&code, request.cursor_pos);
        let asked = code.clone();
        let found = self
            .interpreter
            .ask(move |language| language.complete(&asked, cursor))
            .await
            .unwrap_or_default();
        let (start, end) = if found.items.is_empty() {
            (cursor, cursor)
        } else {
            (found.start, found.end)
        };
        let (start, end) = (
            replies::char_offset(&code, start),
            replies::char_offset(&code, end),
        );
        CompleteReply {
            matches: found.matches(),
            cursor_start: start,
            cursor_end: end,
            metadata: replies::completion_types(&found.items, start, end),
            status: ReplyStatus::Ok,
            error: None,
        }
    }

    async fn inspect(&self, request: &InspectRequest) -> InspectReply {
        let code = request.code.clone();
        let cursor = replies::byte_offset(&code, request.cursor_pos);
        let text = self
            .interpreter
            .ask(move |language| language.inspect(&code, cursor))
            .await
            .ok()
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
        let asked = code.to_string();
        let status = self
            .interpreter
            .ask(move |language| language.is_complete(&asked))
            .await
            .ok();
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
        if let Some(note) = self.debugger.unused_breakpoints(&request.code) {
            self.publisher.stream(true, &note);
        }
        let done = self
            .run_cell(request, message)
            .await
            .unwrap_or_else(ExecuteDone::unanswered);
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
        let error = done.error_output(self.count).map(|out| {
            Box::new(jupyter_protocol::ReplyError {
                ename: out.ename,
                evalue: out.evalue,
                traceback: out.traceback,
            })
        });
        let status = if error.is_some() {
            if request.stop_on_error && !silent {
                self.abort = Some(Abort {
                    failed_at: SystemTime::now(),
                });
            }
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

    /// Run the cell on the interpreter thread, `input()` asking this request's client if it allows.
    async fn run_cell(
        &self,
        request: &ExecuteRequest,
        message: &JupyterMessage,
    ) -> Result<ExecuteDone, Unanswered> {
        let (code, count) = (request.code.clone(), self.count);
        let expressions = request.user_expressions.clone().unwrap_or_default();
        let parent = request.allow_stdin.then(|| message.clone());
        let (publisher, input) = (self.publisher.clone(), self.interpreter.input().clone());
        self.interpreter
            .ask(move |language| {
                let _open = parent.map(|parent| input.open(parent));
                cell::run(language, &publisher, (&code, count), &expressions)
            })
            .await
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
        if let Some(error) = done.error_output(self.count) {
            self.publisher.output(error);
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

/// ipykernel's reply to an aborted request: `{"status": "aborted"}` and nothing else, so no
/// execution_count and the cell keeps its empty `[ ]:` prompt.
fn aborted_reply(request: &JupyterMessage) -> JupyterMessage {
    let unknown = jupyter_protocol::UnknownMessage {
        msg_type: request.header.msg_type.clone(),
        content: serde_json::Value::Null,
    };
    let content = unknown.reply(serde_json::json!({"status": "aborted"}));
    JupyterMessage::new(content, Some(request))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(made: SystemTime, at: SystemTime) -> Arrival {
        let mut message: JupyterMessage = ExecuteRequest::new("1".into()).into();
        message.header.date = made.into();
        Arrival {
            at,
            incoming: Incoming {
                message,
                problem: None,
            },
        }
    }

    #[test]
    fn requests_sent_before_a_failure_are_aborted_and_later_ones_run() {
        let failed_at = SystemTime::now();
        let abort = Abort { failed_at };
        let ms = Duration::from_millis;
        // Queued behind the failed cell, whatever its date says.
        assert!(abort.covers(&arrival(failed_at + ms(5), failed_at - ms(1))));
        // Made before the failure, still in flight when it happened.
        assert!(abort.covers(&arrival(failed_at - ms(1), failed_at + ms(30))));
        // Made after the failure (the client had seen the error).
        assert!(!abort.covers(&arrival(failed_at + ms(1), failed_at + ms(2))));
        // No date (the epoch): only arrival counts.
        assert!(!abort.covers(&arrival(UNIX_EPOCH, failed_at + ms(2))));
        // A date from a clock far behind does not abort requests long after the failure.
        let late = failed_at + ABORT_IN_FLIGHT_FOR + ms(1);
        assert!(!abort.covers(&arrival(failed_at - ms(1), late)));
    }

    #[test]
    fn an_aborted_reply_is_status_aborted_alone() {
        let request: JupyterMessage = ExecuteRequest::new("1".into()).into();
        let reply = aborted_reply(&request);
        assert_eq!(reply.header.msg_type, "execute_reply");
        let content = serde_json::to_value(&reply.content).unwrap();
        assert_eq!(content, serde_json::json!({"status": "aborted"}));
        assert_eq!(
            reply.parent_header.map(|h| h.msg_id),
            Some(request.header.msg_id)
        );
    }
}
