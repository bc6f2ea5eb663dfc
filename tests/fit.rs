//! `torchlet fit`: a shapes-only run allocates exactly as a run with data does (every parity
//! program and script, to the byte), reports where the peaks and the first OOM happen, compares
//! allocator settings, sweeps an argument, stops clearly where values are needed, and needs no
//! host memory for the data.
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn torchlet() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_torchlet"));
    for var in [
        "TORCHLET_SIMULATE_CUDA",
        "TORCHLET_CUDA_ALLOC_CONF",
        "PYTORCH_CUDA_ALLOC_CONF",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Run `cmd`; (success, stdout, stderr).
fn output(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd.output().expect("torchlet runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// A parity program whose harness `checkpoint(label)` prints the allocator's figures.
fn instrumented(program: &Path, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(program).unwrap();
    let path = dir.join(program.file_name().unwrap());
    let checkpoint = "fn checkpoint(label) { print(`checkpoint ${label}: ${memory_allocated()} ${memory_reserved()} ${cuda::max_memory_allocated()} ${cuda::max_memory_reserved()}`); }";
    std::fs::write(&path, format!("{checkpoint}\n{text}")).unwrap();
    path
}

/// `peak allocated: N B` and `peak reserved: N B` of a fit report's first device.
fn fit_peaks(report: &str) -> (u64, u64) {
    let number = |key: &str| -> u64 {
        let line = report
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in\n{report}"));
        line.split(':')
            .nth(1)
            .unwrap()
            .trim()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (number("peak allocated:"), number("peak reserved:"))
}

/// The line a fit report says the run stopped at for want of values.
fn stopped_for_values(report: &str) -> Option<usize> {
    let line = report
        .lines()
        .find(|l| l.starts_with("stopped at ") && l.contains("no values here"))?;
    let at = line.strip_prefix("stopped at ")?.split(": ").next()?;
    at.rsplit(':').next()?.parse().ok()
}

/// Parity programs that read values (`.item()`), where a shapes-only run must stop.
const NEED_VALUES: &[&str] = &["loss_total_pitfall"];

/// PyTorch's figures at each checkpoint of a recorded parity program: allocated, reserved and
/// the two peaks (0 before CUDA starts); only checkpoints before a known difference.
fn recorded_checkpoints(name: &str) -> Vec<(String, [u64; 4])> {
    let known = common::parity_known::KNOWN
        .iter()
        .find(|(p, ..)| *p == name);
    let before = known.map_or(usize::MAX, |&(_, event, _)| event);
    let path = repo()
        .join("tests/data/torch_traces")
        .join(format!("{name}.json"));
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let stat = |c: &serde_json::Value, k: &str| c["memory_stats"][k].as_u64().unwrap_or(0);
    trace["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["events"].as_u64().unwrap() as usize <= before)
        .map(|c| {
            let figures = [
                c["memory_allocated"].as_u64().unwrap(),
                c["memory_reserved"].as_u64().unwrap(),
                stat(c, "allocated_bytes.all.peak"),
                stat(c, "reserved_bytes.all.peak"),
            ];
            (c["label"].as_str().unwrap().to_string(), figures)
        })
        .collect()
}

/// A shapes-only run of every parity program reaches, at every checkpoint, the allocated and
/// reserved bytes and peaks PyTorch recorded on the H200, which `tests/parity.rs` shows the
/// simulated GPU with data reaches too (it compares every statistic at every checkpoint).
#[test]
fn every_parity_program_allocates_as_pytorch_and_as_with_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(repo().join("tests/data/torch_traces"))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert!(names.len() >= 20);
    let mut stopped = Vec::new();
    for name in &names {
        let script = instrumented(
            &repo().join("tests/parity").join(format!("{name}.rhai")),
            dir.path(),
        );
        let (_, report, err) = output(torchlet().arg("fit").arg(&script).args(["--gpu", "16GiB"]));
        let printed: Vec<(String, [u64; 4])> = report
            .lines()
            .filter_map(|l| l.strip_prefix("checkpoint "))
            .map(|l| {
                let (label, numbers) = l.rsplit_once(": ").unwrap();
                let n: Vec<u64> = numbers.split(' ').map(|x| x.parse().unwrap()).collect();
                (label.to_string(), [n[0], n[1], n[2], n[3]])
            })
            .collect();
        let want = recorded_checkpoints(name);
        match stopped_for_values(&report) {
            Some(line) => {
                let text = std::fs::read_to_string(&script).unwrap();
                stopped.push(format!(
                    "{name}:{line}: {}",
                    text.lines().nth(line - 1).unwrap_or("")
                ));
                assert!(
                    printed.len() < want.len(),
                    "{name} stopped after its last checkpoint?"
                );
            }
            None => {
                assert!(
                    report.contains("fits: the script ran to its end"),
                    "{name}:\n{report}\n{err}"
                );
                assert!(printed.len() >= want.len(), "{name}: checkpoints\n{report}");
            }
        }
        for (got, want) in printed.iter().zip(&want) {
            assert_eq!(got, want, "{name}: [allocated, reserved, peak allocated, peak reserved] at a checkpoint, shapes only against PyTorch");
        }
    }
    let stopped_names: Vec<&str> = stopped
        .iter()
        .map(|s| s.split(':').next().unwrap())
        .collect();
    assert_eq!(
        stopped_names,
        NEED_VALUES,
        "programs a shapes-only run cannot finish:\n{}",
        stopped.join("\n")
    );
    assert!(stopped.iter().all(|s| s.contains(".item()")), "{stopped:?}");
}
