//! `--sweep NAME=a..b`: the largest value of script argument NAME in a..b that fits, by bisection
//! (memory grows with a batch size or a sequence length, so one boundary is enough).
use serde_json::Value;

use super::{describe, fits, run_child, FitArgs};

/// `NAME=a..b` → (NAME, a, b).
fn parse(spec: &str) -> Result<(String, i64, i64), String> {
    let bad =
        || format!("--sweep {spec}: expected NAME=a..b with integers a <= b, e.g. batch=1..64");
    let (name, range) = spec.split_once('=').ok_or_else(bad)?;
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    let (lo, hi): (i64, i64) = (
        lo.trim().parse().map_err(|_| bad())?,
        hi.trim().parse().map_err(|_| bad())?,
    );
    if name.is_empty() || lo > hi {
        return Err(bad());
    }
    Ok((name.to_string(), lo, hi))
}

/// The script's arguments with `NAME=value` set (replacing any given).
fn with_value(args: &[String], name: &str, value: i64) -> Vec<String> {
    let prefix = format!("{name}=");
    let mut out: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with(&prefix))
        .cloned()
        .collect();
    out.push(format!("{name}={value}"));
    out
}

/// Run the sweep for one allocator setting; prints each probe and the answer, returns the report
/// of the largest value that fits (or of `a` when none does).
pub fn sweep(a: &FitArgs, conf: Option<&str>, spec: &str) -> Result<Value, String> {
    let (name, mut lo, mut hi) = parse(spec)?;
    let probe = |value: i64| -> Result<Value, String> {
        let report = run_child(a, conf, &with_value(&a.args, &name, value), true)?;
        let peak = report["devices"][0]["peak_reserved"]["reserved"]
            .as_u64()
            .unwrap_or(0);
        println!(
            "  {name}={value}: {} (peak reserved {peak} B)",
            if fits(&report) {
                "fits"
            } else {
                "does not fit"
            }
        );
        Ok(report)
    };
    let top = probe(hi)?;
    if fits(&top) {
        println!("the largest {name} that fits: {hi} (the top of the range)");
        print!("{}", describe(&top));
        return Ok(top);
    }
    let mut best = probe(lo)?;
    if !fits(&best) {
        println!("no {name} in {lo}..{hi} fits; at {name}={lo}:");
        print!("{}", describe(&best));
        return Ok(best);
    }
    let mut failed = top;
    // lo fits, hi does not.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let report = probe(mid)?;
        if fits(&report) {
            (lo, best) = (mid, report);
        } else {
            (hi, failed) = (mid, report);
        }
    }
    println!("the largest {name} that fits: {lo}");
    print!("{}", describe(&best));
    println!("at {name}={hi}:");
    print!("{}", describe(&failed));
    Ok(best)
}
