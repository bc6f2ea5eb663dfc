//! Leak warnings: a loop whose every iteration leaves more GPU memory allocated than the one
//! before is named once, with the variable that grows and why.
//!
//! The language marks the top of every loop body; each pass reports `memory_allocated()` to the
//! loop's [`LeakWatch`] entry. After three growths in a row the variables are weighed (the bytes
//! each reaches, its graph's included) and compared with the weights taken one growth earlier:
//! the one that gained is the culprit. A tensor whose graph gained is the classic
//! `total = total + loss`, which keeps every iteration's graph.
use std::collections::{HashMap, HashSet};

use crate::bytes::human_bytes;
use crate::holders::HolderMap;
use crate::value::Value;

/// Growths in a row before a loop is reported.
const GROWTHS: u32 = 3;

/// A loop, by the line and column of its body.
pub type LoopKey = (i64, i64);

/// The loops of one input, each watched for growth.
#[derive(Default)]
pub struct LeakWatch(HashMap<LoopKey, Watch>);

#[derive(Default)]
struct Watch {
    last: Option<u64>,
    growths: u32,
    growth: u64,
    /// Each variable's weight one growth before the report.
    weights: Option<HashMap<String, Weight>>,
    warned: bool,
}

#[derive(Clone, Copy, Default, PartialEq)]
struct Weight {
    bytes: u64,
    graph_bytes: u64,
}

impl LeakWatch {
    /// Forget every loop (a new input starts).
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Whether the next pass of `key` at `allocated` bytes needs the variables weighed;
    /// records the pass. When true, call [`LeakWatch::weighed`] with the variables.
    pub fn pass(&mut self, key: LoopKey, allocated: u64) -> bool {
        let watch = self.0.entry(key).or_default();
        let grew = watch.last.is_some_and(|last| allocated > last);
        watch.growth = watch.last.map_or(0, |last| allocated.saturating_sub(last));
        watch.last = Some(allocated);
        watch.growths = if grew { watch.growths + 1 } else { 0 };
        !watch.warned && watch.growths >= GROWTHS - 1
    }

    /// Take the variables' weights for loop `key`; the warning, once the loop has grown enough.
    pub fn weighed<'a>(
        &mut self,
        key: LoopKey,
        variables: impl Iterator<Item = (&'a str, &'a Value)>,
    ) -> Option<String> {
        let weights = weigh(variables);
        let watch = self.0.get_mut(&key)?;
        if watch.growths < GROWTHS {
            watch.weights = Some(weights);
            return None;
        }
        watch.warned = true;
        let before = watch.weights.take().unwrap_or_default();
        Some(message(key.0, watch.growth, &before, &weights))
    }
}

/// What each variable reaches on the GPU: its own memory and its graph's.
fn weigh<'a>(variables: impl Iterator<Item = (&'a str, &'a Value)>) -> HashMap<String, Weight> {
    let mut weights = HashMap::new();
    for (name, value) in variables {
        if weights.contains_key(name) {
            continue;
        }
        let map = HolderMap::of_variables(std::iter::once((name, value)));
        let mut weight = Weight::default();
        let mut seen = HashSet::new();
        for (key, holders, bytes) in map.entries() {
            if !key.0.is_cuda() || !seen.insert(key) {
                continue;
            }
            weight.bytes += bytes;
            if holders
                .iter()
                .all(|h| h.contains(" graph") || h.starts_with("saved by"))
            {
                weight.graph_bytes += bytes;
            }
        }
        weights.insert(name.to_string(), weight);
    }
    weights
}

fn message(
    line: i64,
    growth: u64,
    before: &HashMap<String, Weight>,
    now: &HashMap<String, Weight>,
) -> String {
    let head = format!(
        "warning: line {line}: GPU memory grows by {growth} B ({}) on every iteration of this loop",
        human_bytes(growth)
    );
    let culprit = now
        .iter()
        .filter_map(|(name, w)| {
            let was = before.get(name).copied().unwrap_or_default();
            (w.bytes > was.bytes)
                .then(|| (name, w.bytes - was.bytes, w.graph_bytes > was.graph_bytes))
        })
        .max_by_key(|(_, gained, _)| *gained);
    match culprit {
        Some((name, _, true)) => format!(
            "{head}: `{name}` holds each iteration's graph; keep a number instead (`loss.item()`)"
        ),
        Some((name, _, false)) => format!("{head}: `{name}` keeps more of it on every pass"),
        None => format!("{head}; no variable holds the growth (a temporary, or memory held outside the session)"),
    }
}
