//! `torchlet fit` answered the way users ask: GPUs by name with what their allocator can use, one
//! verdict per GPU with its margin or its shortfall, machines of several GPUs, `--vary`, the
//! two-argument grid, `--config`, `--json`, and clear errors for GPUs it does not know.
use crate::common;
use common::{text, torchlet, write_script};
use std::path::Path;

/// `torchlet fit SCRIPT ARGS…`: (success, stdout, stderr).
fn fit(script: &Path, args: &[&str]) -> (bool, String, String) {
    let out = torchlet()
        .arg("fit")
        .arg(script)
        .args(args)
        .output()
        .expect("torchlet runs");
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// 256 MiB of float32 per unit of `n` (and of `m`), on `dev` (cuda by default).
const UNITS: &str = "let n = arg(\"n\", 1);\nlet m = arg(\"m\", 1);\nlet x = empty(n * m * 67108864, #{device: \"cuda\"});\n";

#[test]
fn each_gpu_asked_gets_its_own_verdict_with_the_memory_its_allocator_can_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let (ok, report, err) = fit(&path, &["--gpu", "h200,RTX-4090,1GiB"]);
    assert!(ok, "{report}{err}");
    // No matrix product: cuBLAS never loads, so only the CUDA context comes off (H200: measured).
    assert!(
        report.contains("cuda:0 (H200): the allocator can use 139.29 GiB (149557477376 B): 139.80 GiB (150109880320 B) total; less 526.81 MiB (552402944 B) held outside the allocator"),
        "{report}"
    );
    assert!(report.contains("RTX-4090: fits, "), "{report}");
    assert!(
        report.contains("(estimated)"),
        "other GPUs' totals are estimates: {report}"
    );
    let verdicts: Vec<&str> = report
        .lines()
        .filter(|l| l.contains(": fits, ") && !l.starts_with(' '))
        .collect();
    assert_eq!(verdicts.len(), 3, "one verdict per GPU asked: {report}");
    // 1 GiB less the context, less the 256 MiB segment.
    let spare = (1u64 << 30) - 552_402_944 - (256 << 20);
    assert!(
        report.contains(&format!(
            "1GiB: fits, {:.2} MiB ({spare} B) to spare",
            spare as f64 / 1048576.0
        )),
        "{report}"
    );
}

#[test]
fn a_matrix_product_takes_cublas_memory_off_too() {
    let dir = tempfile::tempdir().unwrap();
    let body = "let a = randn(1024, 1024, #{device: \"cuda\"});\nlet b = a.matmul(a);\n";
    let path = write_script(dir.path(), "mm.rhai", body);
    let (ok, report, err) = fit(&path, &["--gpu", "H200"]);
    assert!(ok, "{report}{err}");
    assert!(
        report.contains("the allocator can use 139.17 GiB (149431648256 B)")
            && report.contains(
                "(678232064 B) held outside the allocator (CUDA context and cuBLAS, measured)"
            ),
        "{report}"
    );
}

#[test]
fn the_margin_and_the_shortfall_are_exact_and_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let (ok, report, _) = fit(&path, &["--gpu", "1GiB", "--no-context"]);
    assert!(ok, "{report}");
    assert!(
        report.contains("1GiB: fits, 768.00 MiB (805306368 B) to spare (75.0%)"),
        "{report}"
    );
    // 1.25 GiB in one request on 1 GiB: it needs 256 MiB more, not the peak before the error.
    let (ok, report, _) = fit(&path, &["n=5", "--gpu", "1GiB", "--no-context"]);
    assert!(!ok, "exit status 1 when it does not fit");
    assert!(
        report.contains("1GiB: does not fit: needs 256.00 MiB (268435456 B) more on cuda:0 at ")
            && report.contains("units.rhai:3"),
        "{report}"
    );
    // --reserve holds memory for other tenants.
    let (ok, report, _) = fit(
        &path,
        &["--gpu", "1GiB", "--no-context", "--reserve", "512MiB"],
    );
    assert!(ok, "{report}");
    assert!(
        report.contains("fits, 256.00 MiB (268435456 B) to spare (50.0%)"),
        "{report}"
    );
    assert!(
        report.contains("less 512.00 MiB (536870912 B) --reserve"),
        "{report}"
    );
}

#[test]
fn a_machine_of_two_gpus_is_one_verdict_naming_the_device_that_ran_out() {
    let dir = tempfile::tempdir().unwrap();
    let body = "let a = empty(67108864, #{device: \"cuda:0\"});\nlet b = empty(335544320, #{device: \"cuda:1\"});\n";
    let path = write_script(dir.path(), "two.rhai", body);
    let (ok, report, err) = fit(&path, &["--devices", "2x1GiB", "--no-context"]);
    assert!(!ok, "{report}{err}");
    assert!(
        report.contains("2x1GiB: does not fit: needs 256.00 MiB (268435456 B) more on cuda:1 at ")
            && report.contains("two.rhai:2"),
        "{report}"
    );
}

#[test]
fn a_gpu_it_does_not_know_is_a_clear_error_listing_those_it_knows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    for (gpu, says) in [
        ("H300", "'H300': not a known GPU (H200, H100-80GB,"),
        ("80", "nor a size with a unit (24GiB, 24GB)"),
    ] {
        let (ok, _, err) = fit(&path, &["--gpu", gpu]);
        assert!(
            !ok && err.contains(says) && !err.contains("panicked"),
            "{gpu}: {err}"
        );
    }
    let (ok, _, err) = fit(&path, &[]);
    assert!(!ok && err.contains("say which GPU: --gpu H200"), "{err}");
}

#[test]
fn vary_gives_one_table_with_the_default_row_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let (ok, report, err) = fit(&path, &["--gpu", "1GiB", "--no-context", "--vary", "n=2,5"]);
    assert!(!ok, "n=5 does not fit: {report}{err}");
    let table: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("setting"))
        .collect();
    assert_eq!(table.len(), 4, "{report}");
    let verdict = table[0].find("1GiB verdict").unwrap();
    let cells: Vec<&str> = table[1..].iter().map(|l| &l[verdict..]).collect();
    assert_eq!(
        cells,
        [
            "fits, 768.00 MiB spare (75.0%)",
            "fits, 512.00 MiB spare (50.0%)",
            "needs 256.00 MiB more"
        ]
    );
    assert!(
        table[1].starts_with("default ") && table[3].starts_with("n=5 "),
        "{report}"
    );
}

#[test]
fn two_sweeps_give_the_grid() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let (_, report, err) = fit(
        &path,
        &[
            "--gpu",
            "1GiB",
            "--no-context",
            "--sweep",
            "n=1..4",
            "--sweep",
            "m=1,2",
        ],
    );
    let grid: Vec<Vec<&str>> = report
        .lines()
        .skip_while(|l| !l.starts_with("m \\ n"))
        .take(3)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(grid.len(), 3, "{report}{err}");
    assert_eq!(grid[0], ["m \\ n", "1", "2", "4"]);
    assert_eq!(
        grid[1],
        ["m=1", "yes 768.00 MiB", "yes 512.00 MiB", "yes 0.00 MiB"]
    );
    assert_eq!(grid[2], ["m=2", "yes 512.00 MiB", "yes 0.00 MiB", "no"]);
}

#[test]
fn config_fields_are_script_arguments_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"n": 5, "architectures": ["X"]}"#).unwrap();
    let config = config.to_str().unwrap();
    let (ok, report, _) = fit(
        &path,
        &["--gpu", "1GiB", "--no-context", "--config", config],
    );
    assert!(!ok && report.contains("needs 256.00 MiB"), "{report}");
    let (ok, report, _) = fit(
        &path,
        &["n=1", "--gpu", "1GiB", "--no-context", "--config", config],
    );
    assert!(ok, "{report}");
}

#[test]
fn json_has_every_figure_of_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "units.rhai", UNITS);
    let (_, out, err) = fit(
        &path,
        &["--gpu", "1GiB,H200", "--no-context", "n=5", "--json"],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let v = &doc["verdicts"];
    assert_eq!(v[0]["gpu"], "1GiB");
    assert_eq!(v[0]["fits"], false);
    assert_eq!(v[0]["needs_more"]["bytes"], 268435456u64);
    assert_eq!(v[0]["devices"][0]["usable"]["bytes"], 1u64 << 30);
    assert_eq!(v[1]["gpu"], "H200");
    assert_eq!(v[1]["devices"][0]["total"]["bytes"], 150109880320u64);
    assert_eq!(v[1]["devices"][0]["total_measured"], true);
    let spare = 150109880320u64 - 552402944 - (1280 << 20);
    assert_eq!(v[1]["spare"]["bytes"], spare);
    assert_eq!(v[1]["peaks"][0]["peak_reserved"]["reserved"], 1280u64 << 20);
}

/// A 4 MiB weight trained with Adam on an 8 MiB batch: every part of the breakdown is known.
const TRAIN: &str = r#"let dev = #{device: "cuda"};
let w = (randn(1024, 1024, dev) * 0.1).requires_grad_();
let x = randn(2048, 1024, dev);
let opt = optim::Adam([w], #{lr: 1e-3});
for step in 0..2 {
    let h = x.matmul(w).relu();
    let loss = (h * h).sum();
    loss.backward();
    opt.step();
    opt.zero_grad();
}
"#;

#[test]
fn the_memory_at_each_peak_is_broken_down_into_parts_that_add_up_to_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "train.rhai", TRAIN);
    let (ok, out, err) = fit(&path, &["--gpu", "H200", "--json"]);
    assert!(ok, "{out}{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let peaks = &doc["verdicts"][0]["peaks"][0];
    let parts = [
        "parameters",
        "gradients",
        "optimizer_state",
        "saved_for_backward",
        "other_tensors",
        "statement",
        "workspaces",
        "cached_free",
    ];
    for peak in ["peak_allocated", "peak_reserved"] {
        let b = &peaks[peak]["breakdown"];
        let sum: u64 = parts.iter().map(|p| b[*p].as_u64().unwrap()).sum();
        assert_eq!(
            sum,
            peaks[peak]["reserved"].as_u64().unwrap(),
            "{peak}: {b}"
        );
        assert_eq!(b["parameters"], 4u64 << 20, "the weight: {b}");
        assert_eq!(
            b["cached_free"].as_u64().unwrap(),
            peaks[peak]["reserved"].as_u64().unwrap() - peaks[peak]["allocated"].as_u64().unwrap()
        );
    }
    // The highest allocation is in the second step, with Adam's two moments of the weight's size
    // alive, and the weight's gradient.
    let b = &peaks["peak_allocated"]["breakdown"];
    assert_eq!(
        b["optimizer_state"],
        8u64 << 20,
        "exp_avg and exp_avg_sq: {b}"
    );
    assert!(
        b["workspaces"].as_u64().unwrap() > 0,
        "the matmul's cuBLAS workspace: {b}"
    );
    let saved: u64 = b["saved_by_statement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(saved, b["saved_for_backward"].as_u64().unwrap(), "{b}");
}

#[test]
fn the_text_report_gives_the_breakdown_with_the_statements_that_saved_activations() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "train.rhai", TRAIN);
    let (ok, out, err) = fit(&path, &["--gpu", "H200"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("what the reserved memory is at that peak:"),
        "{out}"
    );
    assert!(out.contains("4.00 MiB    "), "the parameter's line: {out}");
    assert!(out.contains("100.0%  reserved"), "{out}");
}

/// `fit --report` on the training script: (the page's text, its path's folder kept alive).
fn report_page() -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "train.rhai", TRAIN);
    let page = dir.path().join("report.html");
    let (ok, out, err) = fit(
        &path,
        &[
            "--gpu",
            "H200,64MiB",
            "--no-context",
            "--report",
            page.to_str().unwrap(),
        ],
    );
    // 64 MiB holds the first tensors and runs out in the forward, so both GPUs draw a timeline.
    assert!(!ok, "64 MiB is too little: {out}{err}");
    (
        std::fs::read_to_string(&page).expect("the page is written"),
        dir,
    )
}

#[test]
fn the_html_report_is_one_self_contained_page_with_the_timeline_and_the_breakdown() {
    let (page, _dir) = report_page();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    // Nothing is fetched: no external script, style, image or font (the SVG namespace is a name).
    for fetch in ["src=", "href=", "@import", "url("] {
        assert!(
            !page.contains(fetch),
            "the page fetches something ({fetch})"
        );
    }
    assert_eq!(
        page.matches("<svg class=\"timeline\"").count(),
        2,
        "one chart per GPU"
    );
    assert!(page.contains("class=\"usable\""), "the usable line");
    assert!(page.contains("class=\"reserved\""), "the reserved line");
    assert!(page.contains("class=\"peak\""), "the peak");
    assert!(
        page.contains("out of memory at "),
        "the OOM on 64 MiB is marked"
    );
    assert_eq!(
        page.matches("class=\"band\"").count(),
        12,
        "six bands per chart"
    );
    // Each breakdown's rows add up to the reserved bytes it states.
    for table in page
        .split("<table class=\"breakdown\" data-reserved=\"")
        .skip(1)
    {
        let reserved: u64 = table.split('"').next().unwrap().parse().unwrap();
        let sum: u64 = table
            .split("data-bytes=\"")
            .skip(1)
            .map(|p| p.split('"').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, reserved, "{table}");
    }
}

#[test]
fn the_html_report_renders_in_headless_chromium_with_breakdowns_that_add_up() {
    // Chromium is at /usr/bin/chromium here and in CI's image (TORCHLET_CHROMIUM elsewhere); the
    // structure test above covers the page where no browser is installed.
    let chromium = std::env::var_os("TORCHLET_CHROMIUM")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/usr/bin/chromium".into());
    if !chromium.is_file() {
        assert!(
            std::env::var_os("TORCHLET_SKIP_BROWSER").is_some(),
            "chromium not found at {} (install it, set TORCHLET_CHROMIUM, or TORCHLET_SKIP_BROWSER=1)",
            chromium.display()
        );
        return;
    }
    let (page, dir) = report_page();
    let file = dir.path().join("shown.html");
    std::fs::write(&file, page).unwrap();
    let out = std::process::Command::new(&chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    let dom = text(&out.stdout);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script ran: {dom}"
    );
    assert_eq!(dom.matches("data-sums=\"yes\"").count(), 2, "{dom}");
    assert!(!dom.contains("data-sums=\"no\""), "{dom}");
}

/// A DDP script written for torchrun: every rank holds the same model and buckets, except that
/// rank 0 also keeps `extra` MiB (say, an evaluation buffer only it makes).
const DDP_SCRIPT: &str =
    "import sys\nimport torch\nimport torch.distributed as dist\nfrom torch import nn\n\
dist.init_process_group('nccl')\n\
extra = int(sys.argv[1]) if len(sys.argv) > 1 else 0\n\
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()\n\
ddp = nn.parallel.DistributedDataParallel(model)\n\
held = torch.empty(extra * 262144, device='cuda') if dist.get_rank() == 0 else None\n\
for _ in range(2):\n    ddp(torch.randn(64, 1024, device='cuda')).sum().backward()\n\
print('rank', dist.get_rank(), 'of', dist.get_world_size())\n";

#[test]
fn world_size_runs_each_rank_and_says_whether_they_are_symmetric() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "ddp.py", DDP_SCRIPT);
    let (ok, report, err) = fit(&path, &["--gpu", "H100-80GB", "--world-size", "4"]);
    assert!(ok, "{report}{err}");
    assert!(report.contains("rank 0 of 4"), "{report}");
    assert!(
        report.contains("ranks (every rank of 4, each run as that rank):"),
        "{report}"
    );
    let rows = report
        .lines()
        .filter(|l| l.trim_start().starts_with("rank ") && l.contains("peak allocated"))
        .count();
    assert_eq!(rows, 4, "{report}");
    assert!(report.contains("the ranks are symmetric"), "{report}");
    assert!(
        report.contains("not counted: NCCL's own buffers") && report.contains("--reserve SIZE"),
        "the table says what it leaves out: {report}"
    );

    let (ok, report, err) = fit(&path, &["512", "--gpu", "H100-80GB", "--world-size", "16"]);
    assert!(ok, "{report}{err}");
    assert!(
        report.contains("ranks (ranks 0, 1 and 15 of 16"),
        "{report}"
    );
    assert!(
        report.contains("the ranks differ: rank 0 peaks highest"),
        "rank 0's 512 MiB more must show: {report}"
    );
}

#[test]
fn world_size_puts_each_ranks_peaks_in_the_json_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(dir.path(), "ddp.py", DDP_SCRIPT);
    let (ok, report, err) = fit(
        &path,
        &["512", "--gpu", "H100-80GB", "--world-size", "16", "--json"],
    );
    assert!(ok, "{report}{err}");
    let doc: serde_json::Value = serde_json::from_str(&report).expect("one JSON document");
    let verdict = &doc["verdicts"][0];
    let ranks = &verdict["ranks"];
    assert_eq!(ranks["world_size"], 16, "{ranks}");
    let rows = ranks["ranks"].as_array().expect("a row per simulated rank");
    let numbers: Vec<u64> = rows.iter().map(|r| r["rank"].as_u64().unwrap()).collect();
    assert_eq!(numbers, vec![0, 1, 15]);
    // Rank 0 holds 512 MiB more than the others, and its row is the verdict's own peaks.
    let allocated = |i: usize| rows[i]["peak_allocated"].as_u64().unwrap();
    assert_eq!(allocated(0) - allocated(1), 512 << 20, "{ranks}");
    assert_eq!(allocated(1), allocated(2), "{ranks}");
    let own = verdict["peaks"][0]["peak_allocated"]["allocated"]
        .as_u64()
        .unwrap();
    assert_eq!(allocated(0), own, "{verdict}");
    assert_eq!(
        (ranks["symmetric"].as_bool(), ranks["highest"].as_u64()),
        (Some(false), Some(0))
    );
    let (ok, plain, err) = fit(&path, &["--gpu", "H100-80GB", "--json"]);
    assert!(ok, "{plain}{err}");
    let doc: serde_json::Value = serde_json::from_str(&plain).unwrap();
    assert!(
        doc["verdicts"][0]["ranks"].is_null(),
        "no --world-size, no ranks"
    );
}
