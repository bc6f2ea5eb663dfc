//! The Python kernel (`kernel --language python`) over its sockets: the article's snippets with
//! PyTorch's numbers, Python's tracebacks, completion and inspection, and interrupts.
use std::time::Duration;

use jupyter_protocol::{
    CompleteRequest, ExecuteRequest, InspectRequest, InterruptRequest, IsCompleteRequest,
    JupyterMessage, JupyterMessageContent, KernelInfoRequest,
};
use jupyter_zmq_client::create_client_control_connection;

use crate::common::kernel_process::{self, Kernel};

const KEY: &str = "a-python-key";
const WAIT: Duration = Duration::from_secs(30);

fn start() -> Kernel {
    kernel_process::start_python(KEY, "16GiB")
}

/// What one execute_request printed (stdout and stderr joined), its execute_result's text, and
/// its reply.
struct Cell {
    printed: String,
    result: Option<String>,
    /// The execute_result's HTML, when it had some.
    result_html: Option<String>,
    /// The plain text of each display_data published while the cell ran.
    displayed: Vec<String>,
    /// The SVG of each display_data that had one.
    svgs: Vec<String>,
    error: Option<(String, Vec<String>)>,
    reply: JupyterMessage,
}

async fn run(
    shell: &mut jupyter_zmq_client::ClientShellConnection,
    iopub: &mut jupyter_zmq_client::ClientIoPubConnection,
    code: &str,
) -> Cell {
    let message: JupyterMessage = ExecuteRequest::new(code.into()).into();
    let id = message.header.msg_id.clone();
    shell.send(message).await.expect("send on shell");
    let mut cell = Cell {
        printed: String::new(),
        result: None,
        result_html: None,
        displayed: Vec::new(),
        svgs: Vec::new(),
        error: None,
        reply: reply_to(shell, &id).await,
    };
    loop {
        let msg = tokio::time::timeout(WAIT, iopub.read())
            .await
            .expect("iopub in time")
            .expect("a readable iopub message");
        if msg.parent_header.as_ref().map(|h| h.msg_id.as_str()) != Some(id.as_str()) {
            continue;
        }
        match &msg.content {
            JupyterMessageContent::StreamContent(s) => cell.printed.push_str(&s.text),
            JupyterMessageContent::ExecuteResult(r) => {
                let data = serde_json::to_value(&r.data).unwrap();
                cell.result = data["text/plain"].as_str().map(str::to_string);
                cell.result_html = data["text/html"].as_str().map(str::to_string);
            }
            JupyterMessageContent::DisplayData(d) => {
                let data = serde_json::to_value(&d.data).unwrap();
                cell.displayed
                    .push(data["text/plain"].as_str().unwrap_or_default().to_string());
                if let Some(svg) = data["image/svg+xml"].as_str() {
                    cell.svgs.push(svg.to_string());
                }
            }
            JupyterMessageContent::ErrorOutput(e) => {
                cell.error = Some((e.ename.clone(), e.traceback.clone()));
            }
            JupyterMessageContent::Status(s)
                if s.execution_state == jupyter_protocol::ExecutionState::Idle =>
            {
                return cell;
            }
            _ => {}
        }
    }
}

async fn reply_to(
    shell: &mut jupyter_zmq_client::ClientShellConnection,
    id: &str,
) -> JupyterMessage {
    loop {
        let reply = tokio::time::timeout(WAIT, shell.read())
            .await
            .expect("a reply in time")
            .expect("a readable reply");
        if reply.parent_header.as_ref().map(|h| h.msg_id.as_str()) == Some(id) {
            return reply;
        }
    }
}

async fn ask(
    shell: &mut jupyter_zmq_client::ClientShellConnection,
    request: JupyterMessage,
) -> serde_json::Value {
    let id = request.header.msg_id.clone();
    shell.send(request).await.expect("send on shell");
    serde_json::to_value(reply_to(shell, &id).await.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_articles_no_grad_snippet_gives_pytorchs_numbers_in_a_python_notebook() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let info = ask(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(info["language_info"]["name"], "python");
    assert_eq!(info["language_info"]["file_extension"], ".py");
    let cell = run(
        &mut shell,
        &mut iopub,
        "import torch\n\
         w = torch.randn(1000, 1000, device='cuda', requires_grad=True)\n\
         with torch.no_grad():\n    h = (w * 2).sum()\n\
         print(torch.cuda.memory_allocated(), h.requires_grad)\n",
    )
    .await;
    assert_eq!(cell.printed, "4000768 False\n", "{:?}", cell.error);
    // Variables live on between cells, and a cell's last expression is its result.
    let cell = run(
        &mut shell,
        &mut iopub,
        "del w, h\ntorch.cuda.memory_allocated()",
    )
    .await;
    assert_eq!(cell.result.as_deref(), Some("0"));
    let cell = run(&mut shell, &mut iopub, "torch.cuda.memory_reserved()").await;
    assert_eq!(
        cell.result.as_deref(),
        Some("23068672"),
        "the freed blocks stay cached: w's 20 MiB segment and h's 2 MiB one"
    );
    let cell = run(
        &mut shell,
        &mut iopub,
        "torch.cuda.empty_cache()\ntorch.cuda.memory_reserved()",
    )
    .await;
    assert_eq!(cell.result.as_deref(), Some("0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_pythons_tracebacks_and_the_namespace_survives_them() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    run(
        &mut shell,
        &mut iopub,
        "import torch\nkept = torch.zeros(3)",
    )
    .await;
    let cell = run(
        &mut shell,
        &mut iopub,
        "def f():\n    return undefined_name\nf()",
    )
    .await;
    let (ename, traceback) = cell.error.expect("an error output");
    assert_eq!(ename, "NameError");
    let text = traceback.join("\n");
    assert!(text.contains("line 2, in f"), "{text}");
    assert!(text.contains("undefined_name"), "{text}");
    let reply = serde_json::to_value(&cell.reply.content).unwrap();
    assert_eq!(reply["status"], "error");
    assert_eq!(reply["ename"], "NameError");
    let cell = run(&mut shell, &mut iopub, "kept.shape").await;
    assert_eq!(cell.result.as_deref(), Some("torch.Size([3])"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_inspection_and_completeness_are_pythons() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    run(&mut shell, &mut iopub, "import torch\nx = torch.ones(2, 3)").await;
    let found = ask(
        &mut shell,
        CompleteRequest {
            code: "x.resh".into(),
            cursor_pos: 6,
        }
        .into(),
    )
    .await;
    assert_eq!(
        found["matches"],
        serde_json::json!(["reshape", "reshape_as"])
    );
    assert_eq!(
        (found["cursor_start"].as_u64(), found["cursor_end"].as_u64()),
        (Some(2), Some(6))
    );
    let shown = ask(
        &mut shell,
        InspectRequest {
            code: "x.sum()".into(),
            cursor_pos: 0,
            detail_level: None,
        }
        .into(),
    )
    .await;
    assert_eq!(shown["found"], true);
    let text = shown["data"]["text/plain"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("x: Tensor\ntensor([[1., 1., 1.],"),
        "{text}"
    );
    // `name?` pages the same help, as IPython's does, and runs nothing.
    let cell = run(&mut shell, &mut iopub, "torch.zeros_like?").await;
    let reply = serde_json::to_value(&cell.reply.content).unwrap();
    let page = reply["payload"][0]["data"]["text/plain"]
        .as_str()
        .unwrap_or_default();
    assert!(page.starts_with("torch.zeros_like"), "{reply}");
    assert_eq!(reply["status"], "ok");
    for (code, expected) in [
        ("x = 1", "complete"),
        ("with torch.no_grad():\n    y = x * 2\n", "incomplete"),
        ("x = = 1", "invalid"),
    ] {
        let reply = ask(&mut shell, IsCompleteRequest { code: code.into() }.into()).await;
        assert_eq!(reply["status"], expected, "{code:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_raises_keyboard_interrupt_and_keeps_the_variables() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    run(&mut shell, &mut iopub, "kept = 41").await;
    let mut request =
        ExecuteRequest::new("print('started', flush=True)\nwhile True:\n    pass\n".into());
    request.stop_on_error = false;
    let running: JupyterMessage = request.into();
    let id = running.header.msg_id.clone();
    shell.send(running).await.unwrap();
    loop {
        let msg = tokio::time::timeout(WAIT, iopub.read())
            .await
            .unwrap()
            .unwrap();
        if let JupyterMessageContent::StreamContent(s) = &msg.content {
            if s.text.contains("started") {
                break;
            }
        }
    }
    let mut control = create_client_control_connection(&kernel.info, "control-session")
        .await
        .unwrap();
    control.send(InterruptRequest {}.into()).await.unwrap();
    let reply = reply_to(&mut shell, &id).await;
    let reply = serde_json::to_value(&reply.content).unwrap();
    assert_eq!(reply["status"], "error");
    assert_eq!(reply["ename"], "KeyboardInterrupt");
    let cell = run(&mut shell, &mut iopub, "kept + 1").await;
    assert_eq!(cell.result.as_deref(), Some("42"));
    assert!(matches!(
        serde_json::to_value(&cell.reply.content).unwrap()["status"].as_str(),
        Some("ok")
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn magics_explain_memory_by_python_names() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let setup = "import torch\nimport torch.nn as nn\n\
                 model = nn.Linear(256, 256).cuda()\n\
                 cache = {'k': torch.zeros(1024, device='cuda')}\n\
                 steps = 3";
    run(&mut shell, &mut iopub, setup).await;
    // `%vars`: tensors by their paths into modules and dicts, then the other variables.
    let cell = run(&mut shell, &mut iopub, "%vars").await;
    let vars = cell.result.expect("%vars shows a table");
    for row in ["model.weight", "model.bias", "cache['k']", "steps"] {
        assert!(vars.contains(row), "{row} in {vars}");
    }
    assert!(
        vars.contains("[256, 256]  float32  cuda:0  262144 (256.00 KiB)"),
        "{vars}"
    );
    // `%why` on a path, then code in the same cell runs after the magic with its lines kept.
    let cell = run(
        &mut shell,
        &mut iopub,
        "%why cache['k']\nx = torch.ones(3)\nundefined_name",
    )
    .await;
    assert_eq!(cell.displayed.len(), 1, "{:?}", cell.error);
    assert!(
        cell.displayed[0].starts_with("what freeing `cache['k']` would do now:"),
        "{:?}",
        cell.displayed
    );
    assert!(
        cell.displayed[0].contains("Δallocated        -4096"),
        "{:?}",
        cell.displayed
    );
    let (ename, traceback) = cell.error.expect("the code after the magic ran");
    assert_eq!(ename, "NameError");
    assert!(traceback.join("\n").contains("line 3"), "{traceback:?}");
    // `%trace on` reports each cell's change in device memory.
    let cell = run(
        &mut shell,
        &mut iopub,
        "%trace on\ny = torch.zeros(1024, 1024, device='cuda')",
    )
    .await;
    assert!(
        cell.printed
            .contains("[trace cuda:0] allocated +4194304 (4.25 MiB)"),
        "{}",
        cell.printed
    );
    // A holders report is a value with a table for the notebook.
    let cell = run(
        &mut shell,
        &mut iopub,
        "%trace off\nimport torchlet\ntorchlet.memory_holders()",
    )
    .await;
    let html = cell.result_html.expect("an HTML table");
    assert!(
        html.contains("<table") && html.contains("model.weight"),
        "{html}"
    );
    // A magic torchlet lacks is refused by name, and the session goes on.
    let cell = run(&mut shell, &mut iopub, "%timeit y.sum()").await;
    let (ename, _) = cell.error.expect("refused");
    assert_eq!(ename, "UsageError");
    let cell = run(&mut shell, &mut iopub, "y.shape").await;
    assert_eq!(cell.result.as_deref(), Some("torch.Size([1024, 1024])"));
}

/// One debug_request on control and its reply's content.
async fn debug(
    control: &mut jupyter_zmq_client::ClientControlConnection,
    seq: i64,
    command: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let message: JupyterMessage = jupyter_protocol::DebugRequest {
        content: serde_json::json!({"type": "request", "seq": seq, "command": command,
            "arguments": arguments}),
    }
    .into();
    control.send(message).await.unwrap();
    let reply = tokio::time::timeout(WAIT, control.read())
        .await
        .expect("a debug_reply in time")
        .unwrap();
    serde_json::to_value(&reply.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_variables_panel_lists_tensors_by_python_path_size_first() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    let info = ask(&mut shell, KernelInfoRequest {}.into()).await;
    assert_eq!(info["debugger"], true, "kernel_info offers the panel");
    let setup = "import torch\nimport torch.nn as nn\n\
                 model = nn.Linear(256, 256).cuda()\nsteps = 3";
    run(&mut shell, &mut iopub, setup).await;
    let mut control = create_client_control_connection(&kernel.info, "control-session")
        .await
        .unwrap();
    debug(&mut control, 1, "initialize", serde_json::json!({})).await;
    let listed = debug(&mut control, 2, "inspectVariables", serde_json::json!({})).await;
    let rows = listed["body"]["variables"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names,
        ["model", "model.weight", "model.bias", "steps"],
        "{listed}"
    );
    assert_eq!(rows[0]["type"], "Linear", "{listed}");
    assert_eq!(
        rows[1]["value"], "256.00 KiB Tensor [256, 256] float32 cuda:0",
        "{listed}"
    );
    assert_eq!(rows[3]["value"], "3", "{listed}");
    assert_eq!(rows[3]["type"], "int", "{listed}");
    let arguments = serde_json::json!({"variablesReference": rows[1]["variablesReference"]});
    let fields = debug(&mut control, 3, "variables", arguments).await;
    assert_eq!(
        fields["body"]["variables"][0]["value"], "[256, 256]",
        "{fields}"
    );
    let arguments = serde_json::json!({"variableName": "model.weight"});
    let rich = debug(&mut control, 4, "richInspectVariables", arguments).await;
    let html = rich["body"]["data"]["text/html"]
        .as_str()
        .unwrap_or_default();
    assert!(html.contains("torchlet-segment-view"), "{rich}");
    let dumped = debug(
        &mut control,
        5,
        "dumpCell",
        serde_json::json!({"code": "x = 1"}),
    )
    .await;
    let path = dumped["body"]["sourcePath"].as_str().unwrap_or_default();
    assert!(path.ends_with(".py"), "{dumped}");
    // The panel keeps names, not tensors: what it listed is freed by `del` like anything else.
    let freed = run(
        &mut shell,
        &mut iopub,
        "del model\ntorch.cuda.memory_allocated()",
    )
    .await;
    assert_eq!(freed.result.as_deref(), Some("0"), "{:?}", freed.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_cell_shows_each_lines_memory() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    run(&mut shell, &mut iopub, "import torch").await;
    let cell = run(
        &mut shell,
        &mut iopub,
        "%%ledger\nx = torch.zeros(1024, 1024, device='cuda')\ndel x\nx.shape",
    )
    .await;
    let (ename, _) = cell.error.expect("the last line fails after del");
    assert_eq!(ename, "NameError");
    let table = cell.displayed.first().cloned().unwrap_or_default();
    let row = |n: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(n))
    };
    assert!(
        row("1").is_some_and(|r| r.contains("4194304 (4.00 MiB)")),
        "{table}"
    );
    assert!(
        row("2").is_some_and(|r| r.contains("-4194304 (-4.00 MiB)")),
        "{table}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memplot_draws_the_chart_by_variable_after_each_cell() {
    let kernel = start();
    let mut shell = kernel_process::shell(&kernel.info).await;
    let mut iopub = kernel_process::iopub(&kernel.info, WAIT).await;
    run(
        &mut shell,
        &mut iopub,
        "import torch\ntorch.zeros(1, device='cuda')",
    )
    .await;
    let cell = run(&mut shell, &mut iopub, "%memplot on").await;
    let said = cell.result.unwrap_or_default();
    assert!(said.starts_with("memory plot on"), "{said}");
    let cell = run(
        &mut shell,
        &mut iopub,
        "activations = torch.zeros(1024, 1024, device='cuda')",
    )
    .await;
    assert_eq!(
        cell.svgs.len(),
        1,
        "one chart after the cell: {:?}",
        cell.displayed
    );
    assert!(
        cell.svgs[0].contains("activations"),
        "drawn under its variable: {}",
        cell.displayed[0]
    );
    let cell = run(&mut shell, &mut iopub, "%memplot off\n%mem").await;
    assert!(cell.svgs.is_empty());
    let mem = cell.result.unwrap_or_default();
    assert!(mem.contains("cuda:0"), "{mem}");
}
