//! The Jupyter kernel over a language (a Rhai `Session` or Python): ZeroMQ sockets, the interpreter thread, and the kernelspecs.
//!
//! Map: `server` binds the sockets and serves control, stdin and heartbeat; `shell` answers shell
//! requests; `wire` reads requests off a socket; `iopub` owns the XPUB socket and orders everything
//! published; `interpreter` runs the language on its own thread and answers whatever a handler
//! asks of it (`cell` is what an execute_request asks); `language` is what the kernel asks of
//! either language, Rhai's `Session` or Python's `python_cells`; `replies`, `introspect` (with the
//! language's `callee`, the call open at a cursor), `history` and `magics` build the answers; `debugger` serves the
//! variables panel (its contents come from `session::variables_panel`); `install` writes
//! kernel.json.
mod cell;
mod debugger;
mod history;
mod install;
mod interpreter;
mod introspect;
mod iopub;
mod language;
mod magics;
mod python_cells;
mod replies;
mod server;
mod shell;
mod wire;

use std::path::Path;
use std::process::ExitCode;

pub use install::{install, jupyter_data_dir, kernel_dir, kernel_json, InstallArgs};
pub use language::LanguageKind;

/// Serve the kernel described by `connection_file`, speaking `language`, until a shutdown_request.
pub fn run(connection_file: &Path, language: LanguageKind) -> Result<ExitCode, String> {
    let text = std::fs::read_to_string(connection_file).map_err(|e| {
        format!(
            "cannot read the connection file {}: {e}",
            connection_file.display()
        )
    })?;
    let info: jupyter_protocol::ConnectionInfo = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a Jupyter connection file: {e}",
            connection_file.display()
        )
    })?;
    if !info.signature_scheme.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(format!(
            "signature scheme '{}' is not supported; torchlet signs with hmac-sha256",
            info.signature_scheme
        ));
    }
    // Two workers: the sockets are light, and the interpreter has its own thread.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the kernel's async runtime: {e}"))?;
    let result = runtime.block_on(server::serve(info, language));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    result.map(|()| ExitCode::SUCCESS)
}
