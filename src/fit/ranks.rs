//! `--world-size N`: a `torch.distributed` script runs as one rank of a world of N, each child
//! with torchrun's environment (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`) and `TORCHLET_WORLD_SIZE`/
//! `TORCHLET_RANK`, which make `init_process_group` that rank of that world whatever its backend
//! (torchlet runs one process; collectives move no data). The verdict is rank 0's; this module
//! runs the other ranks on the same GPUs and says whether any peaks elsewhere.
use std::process::Command;

use serde_json::Value;

use super::verdict::Verdict;
use super::{run_child, short, FitArgs};

/// Worlds up to this size have every rank simulated; larger ones their first, second and last.
const ALL_RANKS_UP_TO: usize = 8;

/// Give a child the environment of `rank` in a world of `world` ranks.
pub fn set_env(cmd: &mut Command, world: usize, rank: usize) {
    cmd.env("TORCHLET_WORLD_SIZE", world.to_string())
        .env("TORCHLET_RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("RANK", rank.to_string())
        .env("LOCAL_RANK", "0")
        .env("LOCAL_WORLD_SIZE", "1");
}

/// The ranks simulated for a world of `world`.
fn simulated(world: usize) -> Vec<usize> {
    if world <= ALL_RANKS_UP_TO {
        (0..world).collect()
    } else {
        vec![0, 1, world - 1]
    }
}

/// (peak allocated, peak reserved) over a report's devices, and whether the run ended well.
fn peaks(report: &Value) -> (u64, u64, bool) {
    let devices = report["devices"].as_array().cloned().unwrap_or_default();
    let most = |key: &str, field: &str| {
        devices
            .iter()
            .map(|d| d[key][field].as_u64().unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    (
        most("peak_allocated", "allocated"),
        most("peak_reserved", "reserved"),
        report["error"].is_null(),
    )
}

/// Each simulated rank's peaks: (rank, (peak allocated, peak reserved, ran to its end)).
pub struct Ranks {
    world: usize,
    rows: Vec<(usize, (u64, u64, bool))>,
}

/// Run the simulated ranks other than 0 on the GPUs `v` ran on, beside rank 0's peaks (from `v`).
pub fn run(a: &FitArgs, world: usize, v: &Verdict, conf: Option<&str>) -> Result<Ranks, String> {
    let mut rows = vec![(0, peaks(&v.report))];
    for rank in simulated(world).into_iter().skip(1) {
        let mut as_rank = a.clone();
        as_rank.rank = Some(rank);
        let report = run_child(&as_rank, &v.usable, conf, &a.args, true)?;
        rows.push((rank, peaks(&report)));
    }
    Ok(Ranks { world, rows })
}

impl Ranks {
    /// Which ranks ran, in words.
    fn which(&self) -> String {
        let world = self.world;
        if world <= ALL_RANKS_UP_TO {
            format!("every rank of {world}")
        } else {
            format!("ranks 0, 1 and {} of {world}", world - 1)
        }
    }

    /// `None` when every rank peaks as rank 0, else the lowest of the ranks that peak highest
    /// (a failing rank first).
    fn highest(&self) -> Option<usize> {
        let first = self.rows[0].1;
        if self.rows.iter().all(|(_, p)| *p == first) {
            return None;
        }
        let worst = self
            .rows
            .iter()
            .max_by_key(|(rank, p)| (!p.2, p.1, std::cmp::Reverse(*rank)));
        worst.map(|(rank, _)| *rank)
    }

    /// The table of the text report.
    pub fn text(&self) -> String {
        let mut out = format!("ranks ({}, each run as that rank):\n", self.which());
        for (rank, (alloc, reserved, ended)) in &self.rows {
            let end = if *ended {
                "runs to its end"
            } else {
                "does not fit"
            };
            out += &format!(
                "  rank {rank:>4}: peak allocated {:>10}, peak reserved {:>10}, {end}\n",
                short(*alloc),
                short(*reserved)
            );
        }
        out += &match self.highest() {
            None => "  the ranks are symmetric: each reaches rank 0's peaks, so rank 0's verdict is every rank's\n".to_string(),
            Some(rank) => format!(
                "  the ranks differ: rank {rank} peaks highest (the verdict above is rank 0's)\n"
            ),
        };
        out += "  not counted: NCCL's own buffers, which it allocates outside PyTorch's allocator \
                (per communicator, sized by NCCL_BUFFSIZE and its channels); hold room for them with --reserve SIZE\n";
        out
    }

    /// The `ranks` object of `--json`'s verdict (`docs/fit-json.md`).
    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|(rank, (alloc, reserved, ended))| {
                serde_json::json!({"rank": rank, "peak_allocated": alloc, "peak_reserved": reserved, "fits": ended})
            })
            .collect();
        serde_json::json!({
            "world_size": self.world,
            "simulated": self.which(),
            "symmetric": self.highest().is_none(),
            "highest": self.highest().unwrap_or(0),
            "ranks": rows,
        })
    }
}
