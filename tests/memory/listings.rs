//! What `:vars`, `:mem` and the `:trace` say holds device memory: the storage a view keeps alive, and the cuBLAS workspaces.
//!
//! A process takes each cuBLAS workspace once and keeps it; every test here holds the GPU
//! exclusively, which starts it without workspaces, as the allocator's figures are shared.
use crate::common;
use common::device_test;
use torchlet_core::device::Device;
use torchlet_session::Session;

/// The `:vars` row of variable `name`, as its cells (columns are two or more spaces apart).
fn row(vars: &str, name: &str) -> Vec<String> {
    let line = vars
        .lines()
        .find(|l| l.split("  ").next() == Some(name))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{vars}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

device_test!(
    fn a_view_shows_its_own_bytes_and_the_storage_it_keeps_alive(device: Device) {
        let _gpu = common::gpu();
        let (mut s, _) = Session::captured("<test>");
        common::run(
            &mut s,
            &format!("let x = randn(1000, 1000, #{{device: \"{device}\"}}); let v = x[0];"),
        );
        let vars = common::command_text(s.run_command(":vars"));
        assert_eq!(
            row(&vars, "name"),
            ["name", "type", "shape", "dtype", "device", "bytes", "holds", "storage"]
        );
        // On a GPU the storage holds the allocator's block: 4000000 B rounded up to 512.
        let held = match device {
            Device::Cuda(_) => "4000256 (3.81 MiB)",
            Device::Cpu | Device::Meta => "4000000 (3.81 MiB)",
        };
        let expected_v = [
            "v",
            "Tensor",
            "[1000]",
            "float32",
            &device.to_string(),
            "4000 (3.91 KiB)",
            held,
            "#1 shared with x",
        ];
        assert_eq!(row(&vars, "v"), expected_v, "{device}:\n{vars}");
        assert_eq!(
            row(&vars, "x")[5..],
            ["4000000 (3.81 MiB)", held, "#1 shared with v"]
        );
        if device.is_cuda() {
            assert!(
                vars.contains("cuda:0: variables hold 4000256 B (3.81 MiB) of the "),
                "the shared storage counts once:\n{vars}"
            );
        }
        common::run(&mut s, "del x;");
        let vars = common::command_text(s.run_command(":vars"));
        assert_eq!(
            row(&vars, "v")[5..],
            ["4000 (3.91 KiB)", held, "#1"],
            "{vars}"
        );
    }
);

#[test]
fn cublas_workspaces_are_named_in_the_trace_mem_and_vars() {
    let _gpu = common::gpu();
    let (mut s, out) = Session::captured("<test>");
    // The CPU takes no workspace: nothing to name.
    common::run(&mut s, "let a = randn(64, 64); let p = a.matmul(a);");
    assert!(!common::command_text(s.run_command(":vars")).contains("cuBLAS"));

    common::command_text(s.run_command(":trace on"));
    out.clear();
    common::run(
        &mut s,
        "let g = randn(64, 64, #{device: \"cuda\"}); let q = g.matmul(g);",
    );
    let traced = out.stdout_text();
    assert!(
        traced.contains(
            "; of it, cuBLAS workspace (not a variable, kept for later matmuls) +33554432 for matmul"
        ),
        "{traced}"
    );
    let vars = common::command_text(s.run_command(":vars"));
    assert!(
        vars.lines().any(|l| l
            == "cuBLAS workspace (not a variable): 33554432 B (32.00 MiB) on cuda:0, for matmul"),
        "{vars}"
    );

    // Backward's matmuls run on autograd's handle, which takes a workspace of its own.
    out.clear();
    common::run(
        &mut s,
        "let w = randn(64, 64, #{device: \"cuda\", requires_grad: true}); g.matmul(w).sum().backward();",
    );
    let traced = out.stdout_text();
    assert!(
        traced.contains("+33554432 for autograd's backward") && !traced.contains("for matmul"),
        "only the new workspace is named:\n{traced}"
    );
    let both = "cuBLAS workspaces (not variables): 67108864 B (64.00 MiB) on cuda:0, \
                33554432 B for matmul and 33554432 B for autograd's backward";
    let mem = common::command_text(s.run_command(":mem"));
    assert!(
        mem.lines()
            .any(|l| l == format!("{both}; counted in allocated")),
        "{mem}"
    );
    let vars = common::command_text(s.run_command(":vars"));
    assert!(vars.lines().any(|l| l == both), "{vars}");
    // Later matmuls reuse them: the trace names them no more.
    out.clear();
    common::run(&mut s, "let r = g.matmul(g);");
    assert!(
        !out.stdout_text().contains("cuBLAS"),
        "{}",
        out.stdout_text()
    );
}
