//! `--sweep NAME=a..b`: the largest value of script argument NAME in a..b that fits each GPU, by
//! bisection (memory grows with a batch size or a sequence length, so one boundary is enough),
//! with each failing value's shortfall; `--sweep NAME=a,b,c` answers each value; two sweeps give
//! the fit/no-fit grid over both arguments (batch × sequence length).
use std::process::ExitCode;

use super::verdict::{judge, Verdict};
use super::{gpus, short, size, FitArgs, Gpu};

/// The values a sweep takes.
#[derive(Clone, Debug, PartialEq)]
enum Values {
    /// `a..b`: every integer between, found by bisection (or powers of two in a grid).
    Range(i64, i64),
    /// `a,b,c`: these.
    List(Vec<String>),
}

/// `NAME=a..b` or `NAME=a,b,c` → (NAME, values).
fn parse(spec: &str) -> Result<(String, Values), String> {
    let bad = || {
        format!(
            "--sweep {spec}: expected NAME=a..b with integers a <= b (batch=1..64), or NAME=a,b,c"
        )
    };
    let (name, values) = spec.split_once('=').ok_or_else(bad)?;
    if name.trim().is_empty() || values.trim().is_empty() {
        return Err(bad());
    }
    let values = match values.split_once("..") {
        Some((lo, hi)) => {
            let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
            let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi {
                return Err(bad());
            }
            Values::Range(lo, hi)
        }
        None => Values::List(values.split(',').map(|v| v.trim().to_string()).collect()),
    };
    Ok((name.trim().to_string(), values))
}

/// The script's arguments with `NAME=value` set (replacing any given).
pub fn with_value(args: &[String], name: &str, value: &str) -> Vec<String> {
    let prefix = format!("{name}=");
    let mut out: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with(&prefix))
        .cloned()
        .collect();
    out.push(format!("{name}={value}"));
    out
}

/// `--sweep …` for every machine asked.
pub fn run(a: &FitArgs, machines: &[Vec<Gpu>]) -> Result<ExitCode, String> {
    let specs = a
        .sweep
        .iter()
        .map(|s| parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let conf = a.alloc_confs.first().map(String::as_str);
    let mut all = true;
    let mut answers = Vec::new();
    for machine in machines {
        if !a.json {
            println!(
                "== {} on {} ({}, sweep {})",
                a.file.display(),
                gpus::machine_name(machine),
                a.mode(),
                a.sweep.join(" × ")
            );
        }
        let answer = match specs.as_slice() {
            [(name, Values::Range(lo, hi))] => bisect(a, machine, conf, name, *lo, *hi)?,
            [(name, Values::List(values))] => each(a, machine, conf, name, values)?,
            [first, second] => {
                super::vary::grid(a, machine, conf, first_values(first), first_values(second))?
            }
            _ => return Err("--sweep: give one or two arguments to sweep".into()),
        };
        all &= answer.fits;
        answers.push(answer);
    }
    if a.json {
        println!("{}", super::json::sweeps(a, &answers));
    }
    Ok(super::exit(all))
}

/// A sweep's answer for one machine.
pub struct Answer {
    /// The machine.
    pub name: String,
    /// Whether every value asked fits (for a range: whether any does).
    pub fits: bool,
    /// Each value run, with its verdict.
    pub probes: Vec<(String, Verdict)>,
    /// The largest value that fits (a range), as the report says it.
    pub largest: Option<String>,
    /// Grid cells (two sweeps): (first value, second value, fits, spare bytes).
    pub grid: Vec<(String, String, bool, Option<u64>)>,
}

/// (NAME, the values a grid takes): a list as given, a range as its powers of two and ends.
fn first_values(spec: &(String, Values)) -> (String, Vec<String>) {
    let values = match &spec.1 {
        Values::List(v) => v.clone(),
        Values::Range(lo, hi) => {
            let mut v = vec![*lo];
            let mut p = 1i64;
            while p <= *hi {
                if p > *lo {
                    v.push(p);
                }
                p *= 2;
            }
            if v.last() != Some(hi) {
                v.push(*hi);
            }
            v.iter().map(i64::to_string).collect()
        }
    };
    (spec.0.clone(), values)
}

/// One value: its verdict, printed as a sweep line.
fn probe(
    a: &FitArgs,
    machine: &[Gpu],
    conf: Option<&str>,
    name: &str,
    value: &str,
) -> Result<Verdict, String> {
    let v = judge(
        a,
        machine,
        conf,
        &with_value(&a.args, name, value),
        true,
        false,
    )?;
    if !a.json {
        println!("  {name}={value}: {}", v.short_line());
    }
    Ok(v)
}

/// `NAME=a,b,c`: each value's verdict.
fn each(
    a: &FitArgs,
    machine: &[Gpu],
    conf: Option<&str>,
    name: &str,
    values: &[String],
) -> Result<Answer, String> {
    let mut probes = Vec::new();
    for value in values {
        probes.push((value.clone(), probe(a, machine, conf, name, value)?));
    }
    Ok(Answer {
        name: gpus::machine_name(machine),
        fits: probes.iter().all(|(_, v)| v.fits()),
        probes,
        largest: None,
        grid: Vec::new(),
    })
}

/// `NAME=a..b`: the largest value that fits, by bisection.
fn bisect(
    a: &FitArgs,
    machine: &[Gpu],
    conf: Option<&str>,
    name: &str,
    mut lo: i64,
    mut hi: i64,
) -> Result<Answer, String> {
    let mut probes: Vec<(String, Verdict)> = Vec::new();
    let run = |value: i64, probes: &mut Vec<(String, Verdict)>| -> Result<bool, String> {
        let v = probe(a, machine, conf, name, &value.to_string())?;
        let fits = v.fits();
        probes.push((value.to_string(), v));
        Ok(fits)
    };
    let gpu = gpus::machine_name(machine);
    let largest = if run(hi, &mut probes)? {
        Some(hi)
    } else if !run(lo, &mut probes)? {
        None
    } else {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if run(mid, &mut probes)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    };
    let find = |value: i64| {
        probes
            .iter()
            .find(|(v, _)| *v == value.to_string())
            .map(|(_, v)| v)
    };
    let said = match largest {
        Some(best) => {
            let spare = find(best).and_then(Verdict::spare).map_or(0, |s| s.0);
            let next = find(best + 1)
                .and_then(|v| v.needs.as_ref())
                .map(|n| format!("; {name}={} needs {} more", best + 1, size(n.more)));
            format!(
                "{best} on {gpu} ({} to spare{})",
                short(spare),
                next.unwrap_or_default()
            )
        }
        None => format!("none on {gpu}: {name}={lo} does not fit"),
    };
    if !a.json {
        println!("the largest {name} that fits: {said}");
    }
    Ok(Answer {
        name: gpu,
        fits: largest.is_some(),
        probes,
        largest: largest.map(|b| b.to_string()),
        grid: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_lists_and_grid_values() {
        assert_eq!(parse("batch=1..64").unwrap().1, Values::Range(1, 64));
        assert_eq!(
            parse("dtype=float32,bfloat16").unwrap().1,
            Values::List(vec!["float32".into(), "bfloat16".into()])
        );
        assert!(parse("batch=9..1").is_err());
        assert!(parse("batch").is_err());
        let (_, v) = first_values(&("seq".into(), Values::Range(3, 40)));
        assert_eq!(v, ["3", "4", "8", "16", "32", "40"]);
    }
}
