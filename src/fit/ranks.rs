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

/// Each simulated rank's peaks beside rank 0's (from `v`), on the GPUs `v` ran on.
pub fn table(a: &FitArgs, world: usize, v: &Verdict, conf: Option<&str>) -> Result<String, String> {
    let mut rows = vec![(0, peaks(&v.report))];
    for rank in simulated(world).into_iter().skip(1) {
        let mut as_rank = a.clone();
        as_rank.rank = Some(rank);
        let report = run_child(&as_rank, &v.usable, conf, &a.args, true)?;
        rows.push((rank, peaks(&report)));
    }
    let ranks = if world <= ALL_RANKS_UP_TO {
        format!("every rank of {world}")
    } else {
        format!("ranks 0, 1 and {} of {world}", world - 1)
    };
    let mut out = format!("ranks ({ranks}, each run as that rank):\n");
    for (rank, (alloc, reserved, ended)) in &rows {
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
    let first = rows[0].1;
    if rows.iter().all(|(_, p)| *p == first) {
        out += "  the ranks are symmetric: each reaches rank 0's peaks, so rank 0's verdict is every rank's\n";
    } else {
        // The lowest of the ranks that peak highest (a failing rank first).
        let worst = rows
            .iter()
            .max_by_key(|(rank, p)| (!p.2, p.1, std::cmp::Reverse(*rank)))
            .expect("rank 0 is a row");
        out += &format!(
            "  the ranks differ: rank {} peaks highest (the verdict above is rank 0's)\n",
            worst.0
        );
    }
    Ok(out)
}
