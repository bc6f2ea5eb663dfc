//! One verdict for one machine: run the script with the memory its allocator can use there, then
//! say "fits, X to spare (P%)" or "does not fit: needs X more at FILE:LINE".
//!
//! Note [how much more]: what a failing run reserved before its out-of-memory error says little
//! about what it needs, and neither does what it reserves on an unbounded GPU (the allocator frees
//! its cache and retries before it gives up, so it can fit in less). The answer is the smallest
//! memory it fits in: a run on a GPU large enough gives an upper bound (its peak reserved), and a
//! bisection between that and the memory it had finds the smallest, to the 2 MiB the driver hands
//! out (or to 1% in sweeps, where every failing value needs its own search).
use serde_json::Value;

use super::{fits, run_child, size, FitArgs, Gpu};

/// The driver's granularity: segments are multiples of 2 MiB.
const GRANULE: u64 = 2 << 20;

/// How much more memory a failing run needs, on which device.
#[derive(Clone, Debug)]
pub struct Needs {
    /// The device that ran out.
    pub device: usize,
    /// Bytes more than that device's usable memory (the smallest found that fits).
    pub more: u64,
    /// The search could not find memory enough (the run fails even at this much more).
    pub at_least: bool,
}

/// The answer for one machine.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// The machine as asked (`H200`, `2xH100-80GB`).
    pub name: String,
    /// Its GPUs.
    pub machine: Vec<Gpu>,
    /// Whether the run multiplied matrices (so cuBLAS's memory came off).
    pub cublas: bool,
    /// What the allocator could use on each device.
    pub usable: Vec<u64>,
    /// The child's report.
    pub report: Value,
    /// For an out-of-memory error: how much more it needs.
    pub needs: Option<Needs>,
    /// Under `--world-size`: every simulated rank's peaks (`ranks::Ranks::json`).
    pub ranks: Option<Value>,
}

impl Verdict {
    /// Whether the script ran to its end.
    pub fn fits(&self) -> bool {
        fits(&self.report)
    }

    /// The peak reserved of the device with the least to spare (or the one that ran out).
    pub fn peak_reserved(&self) -> u64 {
        let peaks = self.peaks();
        match &self.needs {
            Some(n) => peaks.get(n.device).copied().unwrap_or(0),
            None => self
                .tightest()
                .map_or(0, |i| peaks.get(i).copied().unwrap_or(0)),
        }
    }

    fn peaks(&self) -> Vec<u64> {
        self.report["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["peak_reserved"]["reserved"].as_u64().unwrap_or(0))
            .collect()
    }

    /// The device with the least to spare.
    fn tightest(&self) -> Option<usize> {
        let peaks = self.peaks();
        (0..self.usable.len())
            .min_by_key(|&i| self.usable[i].saturating_sub(peaks.get(i).copied().unwrap_or(0)))
    }

    /// Bytes to spare on the tightest device, and the share of its usable memory.
    pub fn spare(&self) -> Option<(u64, f64)> {
        if !self.fits() {
            return None;
        }
        let i = self.tightest()?;
        let spare = self.usable[i].saturating_sub(self.peaks()[i]);
        Some((spare, 100.0 * spare as f64 / self.usable[i].max(1) as f64))
    }

    /// What the allocator can use, per device, and why.
    pub fn usable_lines(&self) -> String {
        let mut out = String::new();
        for (i, (g, u)) in self.machine.iter().zip(&self.usable).enumerate() {
            out += &format!(
                "cuda:{i} ({}): the allocator can use {}: {}; total from {}\n",
                g.name,
                size(*u),
                g.why(self.cublas),
                g.source
            );
        }
        out
    }

    /// The verdict as one sentence, led by the machine's name.
    pub fn line(&self) -> String {
        format!("{}: {}", self.name, self.sentence())
    }

    /// The verdict for a table: the same sentence.
    pub fn short_line(&self) -> String {
        self.sentence()
    }

    fn sentence(&self) -> String {
        if let Some((spare, pct)) = self.spare() {
            return format!("fits, {} to spare ({pct:.1}%)", size(spare));
        }
        let error = &self.report["error"];
        let at = error["at"].as_str().unwrap_or("?");
        match &self.needs {
            Some(n) => format!(
                "does not fit: needs {}{} more on cuda:{} at {at}",
                if n.at_least { "over " } else { "" },
                size(n.more),
                n.device
            ),
            None => format!(
                "cannot say: the run stopped at {at}: {}: {}",
                error["kind"].as_str().unwrap_or("Error"),
                error["message"].as_str().unwrap_or("")
            ),
        }
    }
}

/// Run on `machine` and judge. `exact`: find how much more to 2 MiB (else to 1%).
pub fn judge(
    a: &FitArgs,
    machine: &[Gpu],
    conf: Option<&str>,
    args: &[String],
    quiet: bool,
    exact: bool,
) -> Result<Verdict, String> {
    let mut usable: Vec<u64> = machine.iter().map(|g| g.usable(true)).collect();
    let mut report = run_child(a, &usable, conf, args, quiet)?;
    let mut cublas = used_cublas(&report);
    let without: Vec<u64> = machine.iter().map(|g| g.usable(false)).collect();
    if !cublas && without != usable {
        // cuBLAS never loaded, so its memory was the allocator's (Note [usable memory]).
        usable = without;
        report = run_child(a, &usable, conf, args, true)?;
        cublas = used_cublas(&report);
    }
    let needs = match oom_device(&report) {
        Some(device) if device < usable.len() => {
            Some(how_much_more(a, &usable, device, conf, args, exact)?)
        }
        _ => None,
    };
    Ok(Verdict {
        name: super::gpus::machine_name(machine),
        machine: machine.to_vec(),
        cublas,
        usable,
        report,
        needs,
        ranks: None,
    })
}

fn used_cublas(report: &Value) -> bool {
    report["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|d| d["cublas"] == true)
}

/// The device an out-of-memory error names (`GPU 1 has a total capacity…`).
fn oom_device(report: &Value) -> Option<usize> {
    let error = &report["error"];
    if error["oom"] != true {
        return None;
    }
    let message = error["message"].as_str()?;
    let after = message.split("GPU ").nth(1)?;
    after.split(' ').next()?.parse().ok()
}

/// The smallest memory on `device` that the run fits in, less what it had (Note [how much more]).
fn how_much_more(
    a: &FitArgs,
    usable: &[u64],
    device: usize,
    conf: Option<&str>,
    args: &[String],
    exact: bool,
) -> Result<Needs, String> {
    let had = usable[device];
    let run = |capacity: u64| -> Result<Value, String> {
        let mut sizes = usable.to_vec();
        sizes[device] = capacity;
        run_child(a, &sizes, conf, args, true)
    };
    let big = (had * 8).max(1 << 40);
    let ample = run(big)?;
    if !fits(&ample) {
        return Ok(Needs {
            device,
            more: big - had,
            at_least: true,
        });
    }
    let peak = ample["devices"][device]["peak_reserved"]["reserved"]
        .as_u64()
        .unwrap_or(big);
    let (mut lo, mut hi) = (had, (peak.div_ceil(GRANULE) * GRANULE).max(had + GRANULE));
    let tolerance = if exact {
        GRANULE
    } else {
        ((hi - had) / 100).max(GRANULE)
    };
    while hi - lo > tolerance {
        let mid = (lo + (hi - lo) / 2).div_ceil(GRANULE) * GRANULE;
        if mid >= hi {
            break;
        }
        if fits(&run(mid)?) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Needs {
        device,
        more: hi - had,
        at_least: false,
    })
}
