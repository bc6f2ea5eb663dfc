//! A `;` at the end of an input hides its value, as in IPython: in the session, the REPL and the kernel.
use crate::common;
use crate::common::kernel_process::{self, Kernel};
use std::time::Duration;

use expectrl::Session as Pty;
use jupyter_protocol::{
    ExecuteRequest, ExecutionState, JupyterMessage, JupyterMessageContent, KernelInfoRequest,
};
use jupyter_zmq_client::{ClientIoPubConnection, ClientShellConnection};
use torchlet_session::Session;

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_trailing_semicolon_hides_the_value_in_a_session() {
    common::uses_gpu();
    let (mut s, out) = Session::captured("<test>");
    assert_eq!(s.execute("6 * 7").value.expect("an echo").plain, "42");
    for quiet in [
        "6 * 7;",
        "6 * 7;  // a comment\n  ",
        "let t = ones(2); t;",
        "6 * 7;\n\n",
    ] {
        let outcome = s.execute(quiet);
        assert!(outcome.error.is_none(), "{quiet:?}: {:?}", outcome.error);
        assert!(outcome.value.is_none(), "{quiet:?} echoed");
    }
    // Only the last statement counts, and a `;` inside a string or a comment is no `;`.
    assert_eq!(s.execute("1; 6 * 7").value.expect("an echo").plain, "42");
    assert_eq!(s.execute("\"a;\"").value.expect("an echo").plain, "a;");
    assert_eq!(s.execute("6 * 7 // ;").value.expect("an echo").plain, "42");
    // What the input prints is still printed.
    s.execute("print(\"shown\");");
    assert_eq!(out.stdout_text(), "shown\n");
}

#[test]
fn a_trailing_semicolon_hides_the_value_in_the_repl() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = common::repl_command(home.path());
    cmd.arg("--simulate-cuda");
    let mut p = Pty::spawn(cmd).expect("spawn torchlet in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(60)));
    p.expect(">>> ").unwrap();
    // The markers are built at run time so the echo of the typed line never matches them.
    let typed = |p: &mut Pty, line: &str, mark: &str| -> String {
        p.send(format!("{line}\r")).unwrap();
        p.send(format!("print(\"@@\" + \"{mark}\")\r")).unwrap();
        let found = p.expect(format!("@@{mark}").as_str()).unwrap();
        String::from_utf8_lossy(found.before()).into_owned()
    };
    let quiet = typed(&mut p, "6 * 7;", "one");
    assert!(!quiet.contains("42"), "{quiet}");
    let quiet = typed(&mut p, "6 * 7; // no echo wanted", "two");
    assert!(!quiet.contains("42"), "{quiet}");
    let shown = typed(&mut p, "6 * 7", "three");
    assert!(shown.contains("42"), "{shown}");
}

fn start_kernel() -> Kernel {
    kernel_process::start("echo-test-key", None)
}

/// Run `code`; the `text/plain` of its execute_result, if it had one.
async fn result_of(
    shell: &mut ClientShellConnection,
    iopub: &mut ClientIoPubConnection,
    code: &str,
) -> Option<String> {
    let request: JupyterMessage = ExecuteRequest::new(code.into()).into();
    let id = request.header.msg_id.clone();
    shell.send(request).await.expect("send on shell");
    let mut result = None;
    loop {
        let msg = tokio::time::timeout(WAIT, iopub.read())
            .await
            .expect("iopub messages in time")
            .expect("a readable iopub message");
        if msg.parent_header.as_ref().map(|h| h.msg_id.as_str()) != Some(id.as_str()) {
            continue;
        }
        match &msg.content {
            JupyterMessageContent::ExecuteResult(r) => {
                let data = serde_json::to_value(&r.data).unwrap();
                result = data["text/plain"].as_str().map(str::to_string);
            }
            JupyterMessageContent::Status(s) if s.execution_state == ExecutionState::Idle => {
                return result;
            }
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trailing_semicolon_hides_the_value_in_a_notebook_cell() {
    let kernel = start_kernel();
    let mut shell = kernel_process::shell(&kernel.info).await;
    shell
        .send(KernelInfoRequest {}.into())
        .await
        .expect("send kernel_info");
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    assert_eq!(
        result_of(&mut shell, &mut iopub, "6 * 7").await.as_deref(),
        Some("42")
    );
    assert_eq!(result_of(&mut shell, &mut iopub, "6 * 7;").await, None);
    assert_eq!(
        result_of(&mut shell, &mut iopub, "let a = 1;\na * 42;   // quiet\n").await,
        None
    );
    assert_eq!(
        result_of(&mut shell, &mut iopub, "a + 1").await.as_deref(),
        Some("2")
    );
}
