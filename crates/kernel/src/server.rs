//! The kernel's sockets and the tasks that serve them: shell, control, stdin, heartbeat, iopub.
//!
//! Shell requests are handled one at a time, in order, each wrapped in `busy` … `idle` on iopub.
//! Cells run on the interpreter thread, so control (interrupt, shutdown, kernel_info) and the
//! heartbeat answer while a cell runs.
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jupyter_protocol::{
    ConnectionInfo, ExecutionState, InputRequest, InterruptReply, JupyterMessage,
    JupyterMessageContent, ReplyStatus, ShutdownReply,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_xpub_connection, create_kernel_shell_connection,
    create_kernel_stdin_connection, KernelControlConnection, KernelHeartbeatConnection,
    KernelStdinConnection, RuntimeError,
};
use tokio::sync::mpsc as tmpsc;

use super::debugger::Debugger;
use super::interpreter::{self, InputAsk, Interpreter, Interrupt};
use super::iopub::{self, Publisher};
use super::language::LanguageKind;
use super::replies;
use super::shell::Shell;
use super::wire::{self, Incoming};

/// Bind every socket of `info`, serve until a shutdown_request, and return.
pub async fn serve(info: ConnectionInfo, kind: LanguageKind) -> Result<(), String> {
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
    let interpreter = interpreter::spawn(kind, publisher.clone(), stdin_tx, interrupt.clone());
    tokio::spawn(forward_sigint(interrupt.clone()));

    let (shutdown_tx, shutdown_rx) = tmpsc::unbounded_channel();
    // Control sets breakpoints; shell says, when a cell runs, that they do not stop it.
    let debugger = Arc::new(Debugger::for_language(kind));
    tokio::spawn(run_control(
        control,
        publisher.clone(),
        interrupt.clone(),
        interpreter.clone(),
        (shutdown_tx.clone(), debugger.clone()),
    ));
    let shell = Shell::new(
        shell,
        publisher.clone(),
        interpreter,
        interrupt,
        (shutdown_tx, debugger),
    );
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
async fn forward_sigint(interrupt: Arc<OnceLock<Interrupt>>) {
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
        match heartbeat.single_heartbeat().await {
            Ok(()) => {}
            Err(e) if client_gone(&e) => {}
            Err(e) => {
                eprintln!("torchlet kernel: heartbeat: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Whether `error` only says that the client it concerns went away (its connection closed or was
/// reset, or a reply's identity is no longer connected). ZeroMQ drops such messages silently, as
/// ipykernel's ROUTER sockets do, so the kernel does not report them either.
pub(super) fn client_gone(error: &RuntimeError) -> bool {
    use zeromq::ZmqError;
    match error {
        RuntimeError::IoError(_) => true,
        RuntimeError::ZmqError(e) => match e {
            ZmqError::Network(_) | ZmqError::Codec(_) | ZmqError::BufferFull(_) => true,
            ZmqError::Other(why) => why.contains("not found"),
            _ => false,
        },
        _ => false,
    }
}

/// Send `reply` on a ROUTER socket; a client that left meanwhile is not an error worth reporting.
pub(super) async fn send_reply<S: zeromq::SocketSend>(
    socket: &mut jupyter_zmq_client::Connection<S>,
    reply: JupyterMessage,
    channel: &str,
) {
    if let Err(e) = socket.send(reply).await {
        if !client_gone(&e) {
            eprintln!("torchlet kernel: cannot reply on {channel}: {e}");
        }
    }
}

/// Log a message that could not be read, and back off if the socket itself failed.
pub(super) async fn bad_message(channel: &str, error: RuntimeError) {
    eprintln!("torchlet kernel: dropped a bad {channel} message: {error}");
    if matches!(error, RuntimeError::ZmqError(_) | RuntimeError::IoError(_)) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The reply to a message torchlet cannot serve on `channel`.
///
/// A type torchlet does not know is logged and ignored, as ipykernel does ("Unknown message
/// type"): no reply, since the client may not know a reply type for it either. A known request
/// whose content does not parse (`problem`) is answered with status "error" and the reason, so
/// the client waiting on it is not left hanging.
pub(super) fn unsupported(incoming: &Incoming, channel: &str) -> Option<JupyterMessage> {
    let message = &incoming.message;
    let JupyterMessageContent::UnknownMessage(unknown) = &message.content else {
        return None;
    };
    let Some(problem) = &incoming.problem else {
        eprintln!(
            "torchlet kernel: Unknown message type: '{}' on {channel}, ignored",
            shortened(&unknown.msg_type)
        );
        return None;
    };
    let content = unknown.reply(serde_json::json!({
        "status": "error",
        "ename": "BadRequest",
        "evalue": problem,
        "traceback": [],
    }));
    Some(JupyterMessage::new(content, Some(message)))
}

/// `text` cut to a length fit for one log line: a client chooses it, and may make it megabytes.
fn shortened(text: &str) -> String {
    const MOST: usize = 80;
    match text.char_indices().nth(MOST) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The shutdown_reply, also published on iopub (as ipykernel does) so every client learns of it.
pub(super) fn shutdown_reply(
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

/// Serve control: kernel_info, interrupt and shutdown at once, in order; debug requests each on
/// a task of their own, since those that read variables wait for the interpreter, and an
/// interrupt must not wait behind them.
async fn run_control(
    control: KernelControlConnection,
    publisher: Publisher,
    interrupt: Arc<OnceLock<Interrupt>>,
    interpreter: Interpreter,
    (shutdown, debugger): (tmpsc::UnboundedSender<()>, Arc<Debugger>),
) {
    let (send, mut recv) = control.split();
    let send = Arc::new(tokio::sync::Mutex::new(send));
    loop {
        let incoming = match wire::read(&mut recv).await {
            Ok(incoming) => incoming,
            Err(e) => {
                bad_message("control", e).await;
                continue;
            }
        };
        let message = incoming.message.clone();
        publisher.status(ExecutionState::Busy, &message);
        if let JupyterMessageContent::DebugRequest(request) = &message.content {
            let (request, debugger) = (request.clone(), debugger.clone());
            let interpreter = interpreter.clone();
            let (send, publisher) = (send.clone(), publisher.clone());
            tokio::spawn(async move {
                let reply = debugger
                    .answer(&request, &message, &interpreter, &publisher)
                    .await;
                send_reply(
                    &mut *send.lock().await,
                    reply.as_child_of(&message),
                    "control",
                )
                .await;
                publisher.status(ExecutionState::Idle, &message);
            });
            continue;
        }
        let mut stop = false;
        let reply = match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                Some(replies::kernel_info(interpreter.kind()).as_child_of(&message))
            }
            JupyterMessageContent::InterruptRequest(_) => {
                if let Some(handle) = interrupt.get() {
                    handle.interrupt();
                }
                Some(InterruptReply::new().as_child_of(&message))
            }
            JupyterMessageContent::ShutdownRequest(request) => {
                stop = true;
                Some(shutdown_reply(request.restart, &message, &publisher))
            }
            _ => unsupported(&incoming, "control"),
        };
        if let Some(reply) = reply {
            send_reply(&mut *send.lock().await, reply, "control").await;
        }
        publisher.status(ExecutionState::Idle, &message);
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
