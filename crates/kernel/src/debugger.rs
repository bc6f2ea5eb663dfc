//! debug_request on control: the part of the Debug Adapter Protocol JupyterLab's variables panel uses; everything else answered honestly as unsupported.
//!
//! torchlet cannot stop at breakpoints, but JupyterLab (kernelspec `metadata.debugger: true`) also
//! sends `dumpCell`, `setBreakpoints`, `stackTrace`… once its debugger is on: those get
//! `success: false` (or, for breakpoints, each marked unverified) so nothing waits forever.
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use super::interpreter::Interpreter;
use super::iopub::Publisher;
use jupyter_protocol::{DebugReply, DebugRequest, JupyterMessage, JupyterMessageContent};
use serde_json::{json, Value};

/// Why a request cannot be served: torchlet runs cells without a stepping debugger.
const NO_STEPPING: &str = "torchlet lists variables but cannot stop at breakpoints or step";

/// The debugger's state, shared by the control tasks.
#[derive(Default)]
pub struct Debugger {
    started: AtomicBool,
    seq: AtomicI64,
}

impl Debugger {
    /// The debug_reply to `request`; variable requests ask `interpreter` (behind a running cell).
    pub async fn answer(
        self: &Arc<Self>,
        request: &DebugRequest,
        parent: &JupyterMessage,
        interpreter: &Interpreter,
        publisher: &Publisher,
    ) -> DebugReply {
        let content = &request.content;
        let command = content["command"].as_str().unwrap_or("").to_string();
        let arguments = content.get("arguments").cloned().unwrap_or(json!({}));
        let result = match command.as_str() {
            "initialize" => {
                self.started.store(true, Ordering::SeqCst);
                Ok(capabilities())
            }
            "attach" | "configurationDone" => Ok(json!({})),
            "disconnect" => {
                self.started.store(false, Ordering::SeqCst);
                Ok(json!({}))
            }
            "debugInfo" => Ok(self.debug_info()),
            "inspectVariables" | "variables" | "richInspectVariables" => {
                let asked = command.clone();
                interpreter
                    .ask(move |session| vars_answer(session, &asked, &arguments))
                    .await
                    .unwrap_or_else(|why| Err(why.to_string()))
            }
            "setBreakpoints" => Ok(unverified(&arguments)),
            "setExceptionBreakpoints" => Ok(json!({ "breakpoints": [] })),
            "threads" => Ok(json!({ "threads": [] })),
            "" => Err("a debug_request needs a command".to_string()),
            _ => Err(format!("{command}: {NO_STEPPING}")),
        };
        if command == "initialize" {
            // The adapter's `initialized` event follows its answer to initialize (DAP).
            publisher.send(event("initialized", json!({}), self.next_seq()), parent);
        }
        DebugReply {
            content: self.response(content, &command, result),
        }
    }

    fn next_seq(&self) -> i64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The DAP response envelope; a failure carries its message and an empty body.
    fn response(&self, request: &Value, command: &str, result: Result<Value, String>) -> Value {
        let mut response = json!({
            "seq": self.next_seq(),
            "type": "response",
            "request_seq": request["seq"].as_i64().unwrap_or(0),
            "command": command,
        });
        match result {
            Ok(body) => {
                response["success"] = true.into();
                response["body"] = body;
            }
            Err(message) => {
                response["success"] = false.into();
                response["message"] = message.into();
                response["body"] = json!({});
            }
        }
        response
    }

    /// What JupyterLab reads when it attaches: started or not, no breakpoints, rich rendering.
    fn debug_info(&self) -> Value {
        json!({
            "isStarted": self.started.load(Ordering::SeqCst),
            "hashMethod": "Murmur2",
            "hashSeed": 0,
            "tmpFilePrefix": std::env::temp_dir().join("torchlet-cells").join("").to_string_lossy(),
            "tmpFileSuffix": ".rhai",
            "breakpoints": [],
            "stoppedThreads": [],
            "richRendering": true,
            "exceptionPaths": [],
            "copyToGlobals": false,
        })
    }
}

/// initialize's body: the adapter's capabilities (DAP `Capabilities`), none for stepping.
fn capabilities() -> Value {
    json!({
        "supportsConfigurationDoneRequest": true,
        "supportsVariableType": true,
        "supportsModulesRequest": false,
        "supportsSetVariable": false,
        "supportsStepBack": false,
        "exceptionBreakpointFilters": [],
    })
}

/// setBreakpoints' body: every requested breakpoint, unverified, saying why.
fn unverified(arguments: &Value) -> Value {
    let breakpoints: Vec<Value> = arguments["breakpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| json!({ "verified": false, "line": b["line"], "message": NO_STEPPING }))
        .collect();
    json!({ "breakpoints": breakpoints })
}

/// A `debug_event` message's content.
fn event(name: &str, body: Value, seq: i64) -> JupyterMessageContent {
    JupyterMessageContent::UnknownMessage(jupyter_protocol::UnknownMessage {
        msg_type: "debug_event".into(),
        content: json!({ "seq": seq, "type": "event", "event": name, "body": body }),
    })
}

/// The interpreter thread's side: answer a variables command from `session`.
fn vars_answer(
    session: &torchlet_session::Session,
    command: &str,
    arguments: &Value,
) -> Result<Value, String> {
    use torchlet_session::variables_panel as debug_vars;
    match command {
        "inspectVariables" => Ok(debug_vars::inspect_variables(session)),
        "variables" => {
            let reference = arguments["variablesReference"]
                .as_i64()
                .ok_or("variables needs a variablesReference")?;
            debug_vars::variables(session, reference)
        }
        "richInspectVariables" => {
            let name = arguments["variableName"]
                .as_str()
                .ok_or("richInspectVariables needs a variableName")?;
            debug_vars::rich_inspect(session, name)
        }
        _ => Err(format!("{command} is not a variables request")),
    }
}
