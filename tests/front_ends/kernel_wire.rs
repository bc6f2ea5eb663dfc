//! The kernel process over its ZeroMQ sockets, from Rust clients: bad input on the wire, interrupts
//! by message (on control, as kernel.json's interrupt_mode asks, and on shell) and by SIGINT,
//! heartbeat, comms and debug_request.
use std::time::{Duration, Instant};

use jupyter_protocol::{
    CommClose, CommId, CommInfoRequest, CommMsg, CommOpen, ConnectionInfo, DebugRequest,
    ExecuteRequest, InterruptRequest, JupyterMessage, JupyterMessageContent, KernelInfoRequest,
    ReplyStatus,
};
use jupyter_zmq_client::{
    create_client_control_connection, create_client_heartbeat_connection,
    peer_identity_for_session, ClientIoPubConnection, ClientShellConnection,
};
use sha2::{Digest, Sha256};
use zeromq::{Socket, SocketSend};

use crate::common::kernel_process::{self, Kernel};

const KEY: &str = "a-test-key";
const WAIT: Duration = Duration::from_secs(15);

fn start_kernel() -> Kernel {
    kernel_process::start(KEY, None)
}

fn start_kernel_logging_to(logs: Option<&std::path::Path>) -> Kernel {
    kernel_process::start(KEY, logs)
}

/// Start `code` (which prints `started` first) and return its msg_id once it runs.
///
/// An interrupt sent before the cell starts is dropped (one sent while idle must not stop the next
/// cell), so the tests interrupt only after this. The cell does not stop on error: with
/// stop_on_error the kernel aborts the requests that reach it while it answers the interrupted cell,
/// which would include the follow-up request these tests send at once.
async fn start_cell(
    shell: &mut ClientShellConnection,
    iopub: &mut ClientIoPubConnection,
    code: &str,
) -> String {
    let mut request = ExecuteRequest::new(code.into());
    request.stop_on_error = false;
    let running: JupyterMessage = request.into();
    let id = running.header.msg_id.clone();
    shell.send(running).await.expect("send on shell");
    loop {
        let msg = tokio::time::timeout(WAIT, iopub.read())
            .await
            .expect("the cell prints in time")
            .expect("a readable iopub message");
        let ours = msg.parent_header.as_ref().is_some_and(|h| h.msg_id == id);
        if let JupyterMessageContent::StreamContent(out) = &msg.content {
            if ours && out.text.contains("started") {
                return id;
            }
        }
    }
}

/// Send `request` and read replies until the one whose parent it is.
async fn request(shell: &mut ClientShellConnection, request: JupyterMessage) -> JupyterMessage {
    let id = request.header.msg_id.clone();
    shell.send(request).await.expect("send on shell");
    loop {
        let reply = tokio::time::timeout(WAIT, shell.read())
            .await
            .expect("a reply in time")
            .expect("a readable reply");
        if reply.parent_header.as_ref().map(|h| h.msg_id.as_str()) == Some(id.as_str()) {
            return reply;
        }
    }
}

async fn execute(shell: &mut ClientShellConnection, code: &str) -> JupyterMessage {
    request(shell, ExecuteRequest::new(code.into()).into()).await
}

fn reply_status(reply: &JupyterMessage) -> (ReplyStatus, Option<String>) {
    match &reply.content {
        JupyterMessageContent::ExecuteReply(r) => {
            (r.status.clone(), r.error.as_ref().map(|e| e.ename.clone()))
        }
        other => panic!("expected an execute_reply, got {other:?}"),
    }
}

fn hmac_hex(key: &[u8], parts: &[&[u8]]) -> String {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let mut inner = Sha256::new();
    inner.update(pad(0x36));
    for part in parts {
        inner.update(part);
    }
    let mut outer = Sha256::new();
    outer.update(pad(0x5c));
    outer.update(inner.finalize());
    outer
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Frames of a request with the given content text; signed with KEY unless `signature` is given.
fn frames(msg_type: &str, content: &str, signature: Option<&str>) -> zeromq::ZmqMessage {
    let header = serde_json::json!({"msg_id": uuid::Uuid::new_v4().to_string(), "username": "t",
        "session": "s", "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"})
    .to_string();
    let parts: [&[u8]; 4] = [header.as_bytes(), b"{}", b"{}", content.as_bytes()];
    let signature = signature.map_or_else(|| hmac_hex(KEY.as_bytes(), &parts), str::to_string);
    let mut message = zeromq::ZmqMessage::from(b"<IDS|MSG>".to_vec());
    message.push_back(signature.into_bytes().into());
    for part in parts {
        message.push_back(part.to_vec().into());
    }
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_are_dropped_or_answered_and_the_kernel_keeps_serving() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let ready = request(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(ready.header.msg_type, "kernel_info_reply");

    let mut raw = zeromq::DealerSocket::new();
    raw.connect(&kernel.info.shell_url()).await.unwrap();
    let bad_signature = frames("execute_request", r#"{"code": "print(1)"}"#, Some("00ff"));
    let not_json = frames("execute_request", "{not json", None);
    raw.send(bad_signature).await.unwrap();
    raw.send(not_json).await.unwrap();
    raw.send(zeromq::ZmqMessage::from(b"just one frame".to_vec()))
        .await
        .unwrap();
    // Frames on one connection arrive in order: this answer comes after the garbage was read.
    raw.send(frames("kernel_info_request", "{}", None))
        .await
        .unwrap();
    let after_garbage = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(&mut raw))
        .await
        .expect("kernel_info answered after the garbage")
        .unwrap();
    assert!(after_garbage
        .iter()
        .any(|f| String::from_utf8_lossy(f).contains("kernel_info_reply")));

    let defined = execute(&mut shell, "let survived = 1; survived + 1").await;
    assert_eq!(reply_status(&defined).0, ReplyStatus::Ok);
    let JupyterMessageContent::ExecuteReply(defined) = &defined.content else {
        unreachable!()
    };
    assert_eq!(
        defined.execution_count.0, 1,
        "the badly signed cell must not have run"
    );

    // A known type with content that does not fit is answered with an error, not dropped.
    let session = uuid::Uuid::new_v4().to_string();
    let identity = peer_identity_for_session(&session).unwrap();
    let mut options = zeromq::SocketOptions::default();
    options.peer_identity(identity);
    let mut typed = zeromq::DealerSocket::with_options(options);
    typed.connect(&kernel.info.shell_url()).await.unwrap();
    typed
        .send(frames("complete_request", r#"{"code": 5}"#, None))
        .await
        .unwrap();
    let answer = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(&mut typed))
        .await
        .expect("an answer in time")
        .unwrap();
    let text: Vec<String> = answer
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    assert!(
        text.iter().any(|f| f.contains("complete_reply")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|f| f.contains("\"status\":\"error\"")),
        "{text:?}"
    );
}

/// What `jupyter kernelspec` installs: `interrupt_mode` tells Jupyter how to interrupt.
fn interrupt_mode() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/kernelspec/kernel.json");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("kernel.json");
    spec["interrupt_mode"]
        .as_str()
        .unwrap_or("signal")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_request_stops_a_running_cell_and_keeps_its_variables() {
    // "message": Jupyter sends interrupt_request on control, as this test does.
    assert_eq!(interrupt_mode(), "message");
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(
        reply_status(&execute(&mut shell, "let kept = 41;").await).0,
        ReplyStatus::Ok
    );

    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let running_id = start_cell(
        &mut shell,
        &mut iopub,
        "print(\"started\"); loop { kept += 0; }",
    )
    .await;

    let mut control = create_client_control_connection(&kernel.info, "control-session")
        .await
        .unwrap();
    let started = Instant::now();
    control.send(InterruptRequest {}.into()).await.unwrap();
    let interrupt_reply = tokio::time::timeout(WAIT, control.read())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(interrupt_reply.header.msg_type, "interrupt_reply");

    let stopped = tokio::time::timeout(WAIT, shell.read())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stopped.parent_header.as_ref().unwrap().msg_id, running_id);
    assert_eq!(
        reply_status(&stopped),
        (ReplyStatus::Error, Some("KeyboardInterrupt".into()))
    );
    assert!(started.elapsed() < WAIT);
    let after = execute(&mut shell, "if kept != 41 { throw \"lost\" }").await;
    assert_eq!(reply_status(&after).0, ReplyStatus::Ok);
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_the_cell_not_the_kernel() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    start_cell(
        &mut shell,
        &mut iopub,
        "print(\"started\"); let n = 0; loop { n += 1; }",
    )
    .await;
    let pid = kernel.child.id() as libc::pid_t;
    // SAFETY: kill(2) with a child's pid and SIGINT has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let stopped = tokio::time::timeout(WAIT, shell.read())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        reply_status(&stopped).1.as_deref(),
        Some("KeyboardInterrupt")
    );
    let after = execute(&mut shell, "n > 0").await;
    assert_eq!(reply_status(&after).0, ReplyStatus::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_answers_while_a_cell_runs() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    start_cell(&mut shell, &mut iopub, "print(\"started\"); loop { }").await;
    let mut heartbeat = create_client_heartbeat_connection(&kernel.info)
        .await
        .unwrap();
    for _ in 0..3 {
        tokio::time::timeout(WAIT, heartbeat.single_heartbeat())
            .await
            .expect("a heartbeat in time")
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_request_on_shell_stops_the_running_cell_and_is_answered_after_it() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(
        reply_status(&execute(&mut shell, "let kept = 41;").await).0,
        ReplyStatus::Ok
    );
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let running_id = start_cell(
        &mut shell,
        &mut iopub,
        "print(\"started\"); loop { kept += 0; }",
    )
    .await;
    let interrupt: JupyterMessage = InterruptRequest {}.into();
    let interrupt_id = interrupt.header.msg_id.clone();
    let started = Instant::now();
    shell.send(interrupt).await.expect("send on shell");
    let stopped = tokio::time::timeout(WAIT, shell.read())
        .await
        .expect("the cell stops in time")
        .unwrap();
    assert_eq!(stopped.parent_header.as_ref().unwrap().msg_id, running_id);
    assert_eq!(
        reply_status(&stopped),
        (ReplyStatus::Error, Some("KeyboardInterrupt".into()))
    );
    let answered = tokio::time::timeout(WAIT, shell.read())
        .await
        .expect("the interrupt_reply in time")
        .unwrap();
    assert_eq!(answered.header.msg_type, "interrupt_reply");
    assert_eq!(
        answered.parent_header.as_ref().unwrap().msg_id,
        interrupt_id
    );
    assert_eq!(
        serde_json::to_value(&answered.content).unwrap()["status"],
        "ok"
    );
    assert!(started.elapsed() < WAIT);
    let after = execute(&mut shell, "if kept != 41 { throw \"lost\" }").await;
    assert_eq!(reply_status(&after).0, ReplyStatus::Ok);
}

/// Send `message` on shell and collect what iopub publishes for it, through its `idle`.
async fn published_for(
    shell: &mut ClientShellConnection,
    iopub: &mut ClientIoPubConnection,
    message: JupyterMessage,
) -> Vec<JupyterMessage> {
    let id = message.header.msg_id.clone();
    shell.send(message).await.expect("send on shell");
    let mut seen = Vec::new();
    loop {
        let msg = tokio::time::timeout(WAIT, iopub.read())
            .await
            .expect("iopub in time")
            .expect("a readable iopub message");
        if msg.parent_header.as_ref().map(|h| h.msg_id.as_str()) != Some(id.as_str()) {
            continue;
        }
        let idle = matches!(&msg.content, JupyterMessageContent::Status(s)
            if s.execution_state == jupyter_protocol::ExecutionState::Idle);
        seen.push(msg);
        if idle {
            return seen;
        }
    }
}

fn types(messages: &[JupyterMessage]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m.header.msg_type.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comms_are_closed_or_dropped_and_comm_info_is_empty() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;

    for target_name in [None, Some("jupyter.widget".to_string())] {
        let reply = request(&mut shell, CommInfoRequest { target_name }.into()).await;
        assert_eq!(reply.header.msg_type, "comm_info_reply");
        assert_eq!(
            serde_json::to_value(&reply.content).unwrap(),
            serde_json::json!({"status": "ok", "comms": {}})
        );
    }

    // A comm for a target torchlet does not have: closed at once, as ipykernel closes it.
    let open = CommOpen {
        comm_id: CommId("widget-1".into()),
        target_name: "jupyter.widget".into(),
        data: serde_json::from_value(serde_json::json!({"state": {}})).unwrap(),
        target_module: None,
    };
    let seen = published_for(&mut shell, &mut iopub, open.into()).await;
    assert_eq!(types(&seen), ["status", "comm_close", "status"]);
    let JupyterMessageContent::CommClose(close) = &seen[1].content else {
        unreachable!()
    };
    assert_eq!(close.comm_id.0, "widget-1");
    assert!(close.data.is_empty());

    // Messages to comms that do not exist (any more) are dropped: busy and idle, nothing else.
    let to_closed = CommMsg {
        comm_id: CommId("widget-1".into()),
        data: serde_json::from_value(serde_json::json!({"method": "update"})).unwrap(),
    };
    let close_unknown = CommClose {
        comm_id: CommId("never-opened".into()),
        data: Default::default(),
    };
    for message in [to_closed.into(), close_unknown.into()] {
        let seen = published_for(&mut shell, &mut iopub, message).await;
        assert_eq!(types(&seen), ["status", "status"]);
    }

    // None of them was answered on shell: the next reply there is this kernel_info's.
    let info: JupyterMessage = KernelInfoRequest {}.into();
    let info_id = info.header.msg_id.clone();
    shell.send(info).await.expect("send on shell");
    let next = tokio::time::timeout(WAIT, shell.read())
        .await
        .expect("a reply in time")
        .unwrap();
    assert_eq!(next.header.msg_type, "kernel_info_reply");
    assert_eq!(next.parent_header.as_ref().unwrap().msg_id, info_id);

    let ran = execute(&mut shell, "1 + 1").await;
    assert_eq!(reply_status(&ran).0, ReplyStatus::Ok);
    let JupyterMessageContent::ExecuteReply(ran) = &ran.content else {
        unreachable!()
    };
    assert_eq!(ran.execution_count.0, 1, "comm messages are not cells");
}

/// Send one Debug Adapter Protocol request on `control` and return the response's content.
async fn debug(
    control: &mut jupyter_zmq_client::ClientControlConnection,
    seq: i64,
    command: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let message: JupyterMessage = DebugRequest {
        content: serde_json::json!({"type": "request", "seq": seq, "command": command,
            "arguments": arguments}),
    }
    .into();
    let id = message.header.msg_id.clone();
    control.send(message).await.unwrap();
    let reply = tokio::time::timeout(WAIT, control.read())
        .await
        .expect("a debug_reply in time")
        .unwrap();
    assert_eq!(reply.header.msg_type, "debug_reply");
    assert_eq!(reply.parent_header.as_ref().unwrap().msg_id, id);
    let content = serde_json::to_value(&reply.content).unwrap();
    assert_eq!(content["type"], "response", "{content}");
    assert_eq!(content["request_seq"], seq, "{content}");
    assert_eq!(content["command"], command, "{content}");
    assert!(content["seq"].is_i64(), "{content}");
    content
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_requests_serve_the_variables_panel_and_refuse_stepping() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let info = request(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(
        serde_json::to_value(&info.content).unwrap()["debugger"],
        true,
        "kernel_info offers the variables panel"
    );
    let ran = execute(&mut shell, "let t = zeros(2, 3);").await;
    assert_eq!(reply_status(&ran).0, ReplyStatus::Ok);

    // What JupyterLab sends when its debugger is switched on, on control.
    let mut control = create_client_control_connection(&kernel.info, "control-session")
        .await
        .unwrap();
    let init = debug(
        &mut control,
        7,
        "initialize",
        serde_json::json!({"clientID": "test"}),
    )
    .await;
    assert_eq!(init["success"], true, "{init}");
    let state = debug(&mut control, 8, "debugInfo", serde_json::json!({})).await;
    assert_eq!(state["body"]["isStarted"], true, "{state}");
    let listed = debug(&mut control, 9, "inspectVariables", serde_json::json!({})).await;
    let t = &listed["body"]["variables"][0];
    assert_eq!(t["name"], "t", "{listed}");
    // The size first: the panel's default width cuts the end of the line.
    assert_eq!(t["value"], "24 B Tensor [2, 3] float32 cpu", "{listed}");
    assert_eq!(t["type"], t["value"], "{listed}");
    let fields = debug(
        &mut control,
        10,
        "variables",
        t["variablesReference"].clone(),
    )
    .await;
    assert_eq!(
        fields["success"], false,
        "variables needs an object: {fields}"
    );
    let arguments = serde_json::json!({"variablesReference": t["variablesReference"]});
    let fields = debug(&mut control, 11, "variables", arguments).await;
    assert_eq!(
        fields["body"]["variables"][0]["value"], "[2, 3]",
        "{fields}"
    );
    // Stepping is refused with a reason, never left unanswered.
    let stack = debug(&mut control, 12, "stackTrace", serde_json::json!({})).await;
    assert_eq!(stack["success"], false, "{stack}");
    assert!(stack["message"].is_string(), "{stack}");

    // A breakpoint is kept but unverified, and the cell it is in says it was not used.
    let cell = "let b = 1;\nlet c = b + 1;";
    let dumped = debug(
        &mut control,
        13,
        "dumpCell",
        serde_json::json!({"code": cell}),
    )
    .await;
    let path = dumped["body"]["sourcePath"].clone();
    assert!(
        path.as_str().is_some_and(|p| p.ends_with(".rhai")),
        "{dumped}"
    );
    let set = serde_json::json!({"source": {"path": path}, "breakpoints": [{"line": 2}]});
    let set = debug(&mut control, 14, "setBreakpoints", set).await;
    let mark = &set["body"]["breakpoints"][0];
    assert_eq!(mark["verified"], false, "{set}");
    assert!(mark["message"]
        .as_str()
        .unwrap_or("")
        .contains("cannot stop at breakpoints"));
    let state = debug(&mut control, 15, "debugInfo", serde_json::json!({})).await;
    assert_eq!(state["body"]["breakpoints"][0]["source"], path, "{state}");
    let shown = published_for(
        &mut shell,
        &mut iopub,
        ExecuteRequest::new(cell.into()).into(),
    )
    .await;
    let said: String = shown
        .iter()
        .filter_map(|m| match &m.content {
            JupyterMessageContent::StreamContent(s) => Some(s.text.clone()),
            _ => None,
        })
        .collect();
    assert!(
        said.contains("the breakpoint on line 2 is not used"),
        "the cell says so: {said:?}"
    );

    // A debug_request sent on shell by mistake is answered, as failed.
    let inspect = DebugRequest {
        content: serde_json::json!({"type": "request", "seq": 8, "command": "inspectVariables"}),
    };
    let reply = request(&mut shell, inspect.into()).await;
    assert_eq!(reply.header.msg_type, "debug_reply");
    let content = serde_json::to_value(&reply.content).unwrap();
    assert_eq!(content["success"], false);
    assert_eq!(content["command"], "inspectVariables");

    let ran = execute(&mut shell, "1 + 1").await;
    assert_eq!(reply_status(&ran).0, ReplyStatus::Ok);
}

/// A header for `msg_type` with a fresh msg_id.
fn header(msg_type: &str) -> String {
    serde_json::json!({"msg_id": uuid::Uuid::new_v4().to_string(), "username": "t",
        "session": "s", "date": "2026-01-01T00:00:00Z", "msg_type": msg_type, "version": "5.3"})
    .to_string()
}

/// The four JSON frames after the delimiter and a signature with KEY, then `buffers` extra frames.
fn signed(header: &str, content: &[u8], buffers: usize) -> zeromq::ZmqMessage {
    let parts: [&[u8]; 4] = [header.as_bytes(), b"{}", b"{}", content];
    let mut message = zeromq::ZmqMessage::from(b"<IDS|MSG>".to_vec());
    message.push_back(hmac_hex(KEY.as_bytes(), &parts).into_bytes().into());
    for part in parts {
        message.push_back(part.to_vec().into());
    }
    for i in 0..buffers {
        message.push_back(format!("buffer {i}").into_bytes().into());
    }
    message
}

/// The first `n` frames of `message`.
fn cut(message: &zeromq::ZmqMessage, n: usize) -> zeromq::ZmqMessage {
    let mut frames = message.iter().take(n).cloned();
    let mut cut = zeromq::ZmqMessage::from(frames.next().unwrap());
    for frame in frames {
        cut.push_back(frame);
    }
    cut
}

/// A DEALER on shell with a routing identity, so the kernel's replies reach it.
async fn raw_shell(info: &ConnectionInfo) -> zeromq::DealerSocket {
    let session = uuid::Uuid::new_v4().to_string();
    let mut options = zeromq::SocketOptions::default();
    options.peer_identity(peer_identity_for_session(&session).unwrap());
    let mut raw = zeromq::DealerSocket::with_options(options);
    raw.connect(&info.shell_url()).await.unwrap();
    raw
}

/// Send a signed kernel_info_request on `raw` and wait for its reply: everything sent on `raw`
/// before it has been read by then, since one connection's frames arrive in order.
async fn still_answers(raw: &mut zeromq::DealerSocket) {
    raw.send(signed(&header("kernel_info_request"), b"{}", 0))
        .await
        .unwrap();
    let reply = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(raw))
        .await
        .expect("kernel_info answered after the bad input")
        .unwrap();
    assert!(reply
        .iter()
        .any(|f| String::from_utf8_lossy(f).contains("kernel_info_reply")));
}

fn execution_count(reply: &JupyterMessage) -> usize {
    match &reply.content {
        JupyterMessageContent::ExecuteReply(r) => r.execution_count.0,
        other => panic!("expected an execute_reply, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_frames_and_headers_missing_fields_are_dropped_and_nothing_runs() {
    let kernel = start_kernel();
    let mut raw = raw_shell(&kernel.info).await;
    still_answers(&mut raw).await;

    let cell = br#"{"code": "let leaked = 1;"}"#;
    let whole = signed(&header("execute_request"), cell, 0);
    // Cut after the delimiter, after the signature, after the header, and one frame short.
    for n in [1, 2, 3, 5] {
        raw.send(cut(&whole, n)).await.unwrap();
    }
    // Signed, but the header lacks what every header has.
    for fields in [
        r#"{"msg_type": "execute_request"}"#,
        r#"{"msg_id": "x", "msg_type": "execute_request"}"#,
        "{}",
        "[]",
        "null",
    ] {
        raw.send(signed(fields, cell, 0)).await.unwrap();
    }
    still_answers(&mut raw).await;

    let mut shell = kernel_process::shell(&kernel.info).await;
    let after = execute(&mut shell, "leaked").await;
    assert_eq!(
        reply_status(&after),
        (ReplyStatus::Error, Some("NameError".into())),
        "no broken request ran its cell"
    );
    assert_eq!(execution_count(&after), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_frames_and_thousands_of_frames_are_answered_or_dropped() {
    let kernel = start_kernel();
    let mut raw = raw_shell(&kernel.info).await;
    still_answers(&mut raw).await;

    let padding = "x".repeat(64 << 20);
    // 64 MiB with a wrong signature: dropped, and its cell does not run.
    let code = format!(r#"{{"code": "let leaked = 1; // {padding}"}}"#);
    let mut forged = signed(&header("execute_request"), code.as_bytes(), 0);
    forged = {
        let mut frames: Vec<_> = forged.into_vec();
        frames[1] = b"00".to_vec().into();
        zeromq::ZmqMessage::try_from(frames).unwrap()
    };
    raw.send(forged).await.unwrap();
    // 64 MiB, signed: answered.
    let big = format!(r#"{{"padding": "{padding}"}}"#);
    raw.send(signed(&header("kernel_info_request"), big.as_bytes(), 0))
        .await
        .unwrap();
    drop((big, code, padding));
    let reply = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(&mut raw))
        .await
        .expect("the 64 MiB request answered")
        .unwrap();
    assert!(reply
        .iter()
        .any(|f| String::from_utf8_lossy(f).contains("kernel_info_reply")));
    // Five thousand buffer frames after a signed request: answered.
    raw.send(signed(&header("kernel_info_request"), b"{}", 5000))
        .await
        .unwrap();
    let reply = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(&mut raw))
        .await
        .expect("the request with 5000 frames answered")
        .unwrap();
    assert!(reply
        .iter()
        .any(|f| String::from_utf8_lossy(f).contains("kernel_info_reply")));
    // Five thousand frames before the delimiter, unsigned garbage after it: dropped.
    let mut frames = cut(&signed(&header("execute_request"), b"{}", 0), 6).into_vec();
    frames.splice(0..0, (0..5000).map(|i| format!("{i}").into_bytes().into()));
    let last = frames.len() - 1;
    frames[last] = br#"{"code": "let leaked = 1;"}"#.to_vec().into();
    raw.send(zeromq::ZmqMessage::try_from(frames).unwrap())
        .await
        .unwrap();
    still_answers(&mut raw).await;

    let mut shell = kernel_process::shell(&kernel.info).await;
    let after = execute(&mut shell, "leaked").await;
    assert_eq!(reply_status(&after).1.as_deref(), Some("NameError"));
}

/// The next message on `raw`, as text frames.
async fn next_frames(raw: &mut zeromq::DealerSocket) -> Vec<String> {
    let message = tokio::time::timeout(WAIT, zeromq::SocketRecv::recv(raw))
        .await
        .expect("a message in time")
        .unwrap();
    message
        .iter()
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// A DEALER with a routing identity on the control socket.
async fn raw_control(info: &ConnectionInfo) -> zeromq::DealerSocket {
    let mut options = zeromq::SocketOptions::default();
    options.peer_identity(peer_identity_for_session("raw-control").unwrap());
    let mut raw = zeromq::DealerSocket::with_options(options);
    raw.connect(&info.control_url()).await.unwrap();
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_message_types_are_logged_and_ignored_as_ipykernel_does() {
    let logs = tempfile::tempdir().unwrap();
    let kernel = start_kernel_logging_to(Some(logs.path()));
    let mut shell_socket = raw_shell(&kernel.info).await;
    let mut control = raw_control(&kernel.info).await;
    for raw in [&mut shell_socket, &mut control] {
        raw.send(signed(&header("foo_request"), br#"{"a": 1}"#, 0))
            .await
            .unwrap();
        raw.send(signed(&header("kernel_info_request"), b"{}", 0))
            .await
            .unwrap();
        // No foo_reply: the next thing back is the kernel_info_reply.
        let next = next_frames(raw).await;
        assert!(
            next.iter().any(|f| f.contains("kernel_info_reply")),
            "{next:?}"
        );
    }
    let mut shell = kernel_process::shell(&kernel.info).await;
    let ran = execute(&mut shell, "1 + 1").await;
    assert_eq!(reply_status(&ran).0, ReplyStatus::Ok);
    assert_eq!(execution_count(&ran), 1);
    let stderr = std::fs::read_to_string(logs.path().join("stderr")).unwrap();
    assert_eq!(
        stderr
            .matches("Unknown message type: 'foo_request'")
            .count(),
        2,
        "{stderr}"
    );
}

/// The resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Send `n` execute_requests without reading, then read every reply: in order, counts consecutive.
async fn burst(shell: &mut ClientShellConnection, n: usize, first_count: usize) {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        let message: JupyterMessage =
            ExecuteRequest::new(format!("let t = zeros(8); t.sum() + {i}")).into();
        ids.push(message.header.msg_id.clone());
        shell.send(message).await.expect("send on shell");
    }
    for (i, id) in ids.iter().enumerate() {
        let reply = tokio::time::timeout(WAIT, shell.read())
            .await
            .expect("every reply in time")
            .unwrap();
        assert_eq!(
            reply.parent_header.as_ref().unwrap().msg_id,
            *id,
            "in order"
        );
        assert_eq!(reply_status(&reply).0, ReplyStatus::Ok);
        assert_eq!(execution_count(&reply), first_count + i);
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_a_thousand_cells_is_answered_in_order_and_memory_stays_flat() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let _iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    burst(&mut shell, 1000, 1).await;
    let warm = rss_kib(kernel.child.id());
    burst(&mut shell, 1000, 1001).await;
    let after = rss_kib(kernel.child.id());
    eprintln!("kernel VmRSS: {warm} KiB after the warm-up burst, {after} KiB after the second");
    assert!(
        after <= warm + warm / 10,
        "RSS grew from {warm} KiB to {after} KiB over a second burst of 1000 cells"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_vanishes_before_its_reply_does_not_stop_the_kernel() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    for _ in 0..2 {
        let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
        let mut vanishing = raw_shell(&kernel.info).await;
        let cell = r#"{"code": "for i in 0..20000 { print(`line ${i} of a cell whose client has gone`); }"}"#;
        vanishing
            .send(signed(&header("execute_request"), cell.as_bytes(), 0))
            .await
            .unwrap();
        // Leave while the cell prints: the iopub subscriber first, then the shell client.
        let _ = tokio::time::timeout(WAIT, iopub.read()).await;
        drop(iopub);
        drop(vanishing);
        let ran = execute(&mut shell, "1 + 1").await;
        assert_eq!(reply_status(&ran).0, ReplyStatus::Ok);
    }
    let ran = execute(&mut shell, "2 + 2").await;
    assert_eq!(
        execution_count(&ran),
        5,
        "the vanished clients' cells ran too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_and_the_connection_file_never_reach_the_kernels_output() {
    let logs = tempfile::tempdir().unwrap();
    let kernel = start_kernel_logging_to(Some(logs.path()));
    let mut raw = raw_shell(&kernel.info).await;
    let mut control = raw_control(&kernel.info).await;
    // Everything that makes the kernel log: bad signatures, garbage, unknown and malformed requests.
    for socket in [&mut raw, &mut control] {
        socket
            .send(frames("execute_request", r#"{"code": "1"}"#, Some("00ff")))
            .await
            .unwrap();
        socket
            .send(frames("execute_request", "{not json", None))
            .await
            .unwrap();
        socket
            .send(cut(&frames("kernel_info_request", "{}", None), 3))
            .await
            .unwrap();
        socket
            .send(signed(&header("foo_request"), b"{}", 0))
            .await
            .unwrap();
        socket
            .send(signed(&header("foo_reply"), b"{}", 0))
            .await
            .unwrap();
        socket
            .send(frames("complete_request", r#"{"code": 5}"#, None))
            .await
            .unwrap();
        let _ = next_frames(socket).await;
    }
    let mut shell = kernel_process::shell(&kernel.info).await;
    let failed = execute(&mut shell, "throw \"boom\"").await;
    assert_eq!(reply_status(&failed).0, ReplyStatus::Error);
    drop(kernel);

    let mut logged = String::new();
    for name in ["stdout", "stderr"] {
        logged += &std::fs::read_to_string(logs.path().join(name)).unwrap();
    }
    assert!(logged.contains("dropped a bad shell message"), "{logged}");
    assert!(logged.contains("dropped a bad control message"), "{logged}");
    assert!(!logged.contains(KEY), "{logged}");
    assert!(!logged.contains("signature_scheme"), "{logged}");
    assert!(!logged.contains("\"key\""), "{logged}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iopub_subscriber_that_stops_reading_does_not_stall_the_replies() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    request(&mut shell, KernelInfoRequest {}.into()).await;
    let stalled = kernel_process::iopub(&kernel.info, WAIT).await;
    // 500 cells of four 16 KiB stream messages each: far more than the client's queue (1024
    // messages) and the socket buffers hold for a subscriber that never reads. Before the fix,
    // each reply then waited 10 s for iopub.
    let loud = "let s = \"xxxxxxxxxxxxxxxx\"; for i in 0..10 { s += s; } \
                print(s); eprint(s); print(s); eprint(s);";
    let started = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..500 {
        let message: JupyterMessage = ExecuteRequest::new(loud.into()).into();
        ids.push(message.header.msg_id.clone());
        shell.send(message).await.expect("send on shell");
    }
    let replies = async {
        for id in ids {
            let reply = shell.read().await.unwrap();
            assert_eq!(reply.parent_header.as_ref().unwrap().msg_id, id);
            assert_eq!(reply_status(&reply).0, ReplyStatus::Ok);
        }
    };
    tokio::time::timeout(Duration::from_secs(20), replies)
        .await
        .expect("500 replies within 20 s behind a stalled iopub subscriber");
    eprintln!(
        "500 replies behind a stalled subscriber: {:?}",
        started.elapsed()
    );
    // Once the stalled client goes, a new subscriber sees every output again.
    drop(stalled);
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let seen = published_for(
        &mut shell,
        &mut iopub,
        ExecuteRequest::new("print(\"back\")".into()).into(),
    )
    .await;
    assert_eq!(
        types(&seen),
        ["status", "execute_input", "stream", "status"],
        "{seen:?}"
    );
}

/// The error name of an execute_reply that failed.
fn failed_with(reply: &JupyterMessage) -> String {
    let (status, name) = reply_status(reply);
    assert_eq!(status, ReplyStatus::Error, "{reply:?}");
    name.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_block_is_refused_whole_and_its_body_never_runs_alone() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let ready = execute(
        &mut shell,
        "let w = ones(2, #{requires_grad: true}); let runs = 0;",
    )
    .await;
    assert_eq!(reply_status(&ready).0, ReplyStatus::Ok);
    // A console asks before it sends: the header waits for its body, a blank line ends it.
    let asks = [
        ("with torch.no_grad():", "incomplete"),
        ("with torch.no_grad():\n    h = (w * 2).sum()", "incomplete"),
        (
            "with torch.no_grad():\n    h = (w * 2).sum()\n",
            "incomplete",
        ),
        (
            "with torch.no_grad():\n    h = (w * 2).sum()\n\n",
            "invalid",
        ),
        (
            "with torch.no_grad():\n    h = (w * 2).sum()\n    ",
            "invalid",
        ),
        ("for i in range(3):\n    runs += 1\nprint(runs)", "invalid"),
    ];
    for (code, expected) in asks {
        let reply = request(
            &mut shell,
            jupyter_protocol::IsCompleteRequest { code: code.into() }.into(),
        )
        .await;
        let content = serde_json::to_value(&reply.content).unwrap();
        assert_eq!(content["status"], expected, "{code:?}: {content}");
    }
    let block = "for i in range(3):\n    runs += 1\n";
    assert_eq!(
        failed_with(&execute(&mut shell, block).await),
        "SyntaxError"
    );
    // The next cell, indented as the body, is refused too: nothing of the block runs at top level.
    let body = execute(&mut shell, "    runs += 1").await;
    assert_eq!(failed_with(&body), "IndentationError");
    let with = execute(&mut shell, "with torch.no_grad():\n    h = (w * 2).sum()").await;
    assert_eq!(failed_with(&with), "SyntaxError");
    let after = execute(&mut shell, "if runs != 0 { throw \"a body ran\" }").await;
    assert_eq!(reply_status(&after).0, ReplyStatus::Ok, "{after:?}");
    assert_eq!(failed_with(&execute(&mut shell, "h").await), "NameError");
}
