//! debug_request on control: the part of the Debug Adapter Protocol JupyterLab's variables panel uses; everything else answered honestly as unsupported.
//!
//! torchlet cannot stop at breakpoints, but JupyterLab (kernelspec `metadata.debugger: true`) also
//! sends `dumpCell`, `setBreakpoints`, `stackTrace`… once its debugger is on. Stepping requests
//! get `success: false` so nothing waits forever. Note [Breakpoints say so]: a breakpoint is
//! kept (each marked unverified, with why), and a cell that runs with breakpoints in it says on
//! stderr that they were not used, so a click in the gutter never silently does nothing.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use super::interpreter::Interpreter;
use super::iopub::Publisher;
use super::language::LanguageKind;
use jupyter_protocol::{DebugReply, DebugRequest, JupyterMessage, JupyterMessageContent};
use serde_json::{json, Value};

/// Why a request cannot be served: torchlet runs cells without a stepping debugger.
const NO_STEPPING: &str = "torchlet lists variables but cannot stop at breakpoints or step";

/// The debugger's state, shared by the control tasks.
pub struct Debugger {
    /// The cells' file suffix (`.rhai`, `.py`), as JupyterLab's debugger names a cell's source.
    suffix: &'static str,
    started: AtomicBool,
    seq: AtomicI64,
    /// The lines of the breakpoints set, by the cell's source path (as `dumpCell` named it).
    breakpoints: Mutex<HashMap<String, Vec<i64>>>,
}

impl Debugger {
    /// The debugger of a kernel speaking `kind`.
    pub fn for_language(kind: LanguageKind) -> Debugger {
        Debugger {
            suffix: match kind {
                LanguageKind::Rhai => ".rhai",
                LanguageKind::Python => ".py",
            },
            started: AtomicBool::default(),
            seq: AtomicI64::default(),
            breakpoints: Mutex::default(),
        }
    }

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
                    .ask(move |language| language.variables(&asked, &arguments))
                    .await
                    .unwrap_or_else(|why| Err(why.to_string()))
            }
            "dumpCell" => Ok(self.dump_cell(&arguments)),
            "setBreakpoints" => Ok(self.set_breakpoints(&arguments)),
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

    /// What a cell about to run says of the breakpoints set in it, if any: that none will stop it.
    pub fn unused_breakpoints(&self, code: &str) -> Option<String> {
        let table = self.breakpoints.lock().ok()?;
        let lines = table
            .get(&source_path(code, self.suffix))
            .filter(|l| !l.is_empty())?;
        let listed: Vec<String> = lines.iter().map(i64::to_string).collect();
        let (noun, verb) = match lines.len() {
            1 => ("breakpoint", "is"),
            _ => ("breakpoints", "are"),
        };
        Some(format!(
            "torchlet cannot stop at breakpoints: the {noun} on line {} {verb} not used and the \
             cell runs to its end (the Variables panel lists its variables afterwards)\n",
            listed.join(", ")
        ))
    }

    /// dumpCell's body: the path the cell's breakpoints are set under (the one JupyterLab derives).
    fn dump_cell(&self, arguments: &Value) -> Value {
        let code = arguments["code"].as_str().unwrap_or("");
        json!({ "sourcePath": source_path(code, self.suffix) })
    }

    /// setBreakpoints' body: every breakpoint kept but unverified, saying why (see the Note).
    fn set_breakpoints(&self, arguments: &Value) -> Value {
        let path = arguments["source"]["path"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let lines: Vec<i64> = arguments["breakpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["line"].as_i64())
            .collect();
        if let Ok(mut table) = self.breakpoints.lock() {
            match lines.is_empty() {
                true => table.remove(&path),
                false => table.insert(path.clone(), lines),
            };
        }
        unverified(arguments, &path)
    }

    /// The breakpoints as debugInfo lists them, so a reloaded page shows them again.
    fn listed_breakpoints(&self) -> Value {
        let table = self
            .breakpoints
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default();
        let listed: Vec<Value> = table
            .into_iter()
            .map(|(source, lines)| {
                let marks: Vec<Value> = lines.iter().map(|l| json!({ "line": l })).collect();
                json!({ "source": source, "breakpoints": marks })
            })
            .collect();
        Value::Array(listed)
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
            "tmpFilePrefix": prefix(),
            "tmpFileSuffix": self.suffix,
            "breakpoints": self.listed_breakpoints(),
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

/// Every requested breakpoint of `path`, unverified, saying why.
fn unverified(arguments: &Value, path: &str) -> Value {
    let breakpoints: Vec<Value> = arguments["breakpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| {
            json!({ "verified": false, "line": b["line"], "message": NO_STEPPING,
                "source": { "path": path } })
        })
        .collect();
    json!({ "breakpoints": breakpoints })
}

/// The cells' source files are named as ipykernel names them, so JupyterLab finds its own
/// breakpoints under the path it computes: prefix, MurmurHash2 of the code (seed 0), suffix.

fn prefix() -> String {
    let dir = std::env::temp_dir().join("torchlet-cells").join("");
    dir.to_string_lossy().into_owned()
}

/// The path JupyterLab's debugger gives the cell holding `code`.
fn source_path(code: &str, suffix: &str) -> String {
    format!("{}{}{suffix}", prefix(), murmur2(code.as_bytes(), 0))
}

/// MurmurHash2, 32 bits (JupyterLab's `murmur2` over the UTF-8 bytes).
fn murmur2(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1_e995;
    let mut h = seed ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M) ^ k;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^ (h >> 15)
}

/// A `debug_event` message's content.
fn event(name: &str, body: Value, seq: i64) -> JupyterMessageContent {
    JupyterMessageContent::UnknownMessage(jupyter_protocol::UnknownMessage {
        msg_type: "debug_event".into(),
        content: json!({ "seq": seq, "type": "event", "event": name, "body": body }),
    })
}

/// The interpreter thread's side: answer a variables command from `session`.
pub(crate) fn vars_answer(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_the_reference() {
        // ipykernel's `murmur2_x86` (the hash JupyterLab's debugger shares) gives these.
        assert_eq!(murmur2(b"", 0), 0);
        assert_eq!(murmur2(b"a", 0), 0x9268_5f5e);
        assert_eq!(murmur2(b"abcd", 0), 0x2687_3021);
        assert_eq!(murmur2(b"let x = 1;\nx", 0), 378_570_524);
    }
}
