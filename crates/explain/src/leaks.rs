//! Leak warnings: a loop whose iterations each leave more autograd graph held by a variable,
//! still held once the step that ran the loop is over, is named once, with the variable that
//! holds it and what to write instead.
//!
//! The language marks the top of every loop body; each pass reports `memory_allocated()` to the
//! loop's [`LeakWatch`] entry. After three growths in a row the variables are weighed (the bytes
//! each reaches, and how many of those only its graph holds) and compared with the weights taken
//! one growth earlier. See Note [what a leak is] for when that makes a warning.
//!
//! Note [what a leak is]: growth alone is no leak. A loop that builds a model or a data set grows
//! on purpose, and what it keeps is held directly (parameters, tensors in a list), not through a
//! graph: such growth never makes a warning. A forward pass over the layers grows the graph on
//! every iteration, but backward releases it later in the same step. So a graph that grew is
//! only a suspect, checked when the step is over: when the outermost loop around the loop starts
//! its next pass, or when the input ends. A suspect whose graph is still held then is the
//! classic leak (`total = total + loss`, a list of losses, a hidden state never detached, a
//! cache of outputs, closures that captured a loss); one whose graph is gone said nothing. A
//! loop between the two (a UNet's levels around its blocks, inside the forward of a training
//! step) is no end of the step: the suspect's graph is looked at when it passes, and forgotten
//! if gone, but still held there is no verdict yet.
//!
//! Nothing here iterates a hash map to decide what is said: the variables are weighed in the
//! order the language lists them, and the first of equal culprits is named, so a program gets
//! the same warning on every run.
use std::collections::{HashMap, HashSet};

use crate::bytes::human_bytes;
use crate::holders::HolderMap;
use crate::value::Value;

/// Growths in a row before a loop is suspected.
const GROWTHS: u32 = 3;

/// A loop, by the line and column of its body.
pub type LoopKey = (i64, i64);

/// The loops of one input, each watched for growth.
#[derive(Default)]
pub struct LeakWatch {
    loops: HashMap<LoopKey, Watch>,
    /// The loops running now, outermost first, as their passes reveal them.
    running: Vec<LoopKey>,
    /// Loops whose graph grew, waiting for the end of their step.
    suspects: Vec<Suspect>,
}

#[derive(Default)]
struct Watch {
    last: Option<u64>,
    growths: u32,
    growth: u64,
    /// Each variable's weight one growth before the suspicion.
    weights: Option<Vec<Weighed>>,
    /// Suspected (or cleared) once: the loop is not weighed again.
    settled: bool,
}

#[derive(Clone, Copy, Default, PartialEq)]
struct Weight {
    bytes: u64,
    graph_bytes: u64,
}

/// What a culprit is, which decides the advice.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A one-element tensor (a running loss).
    Scalar,
    /// A bigger tensor (a hidden state).
    Tensor,
    /// A list that gains an item.
    List,
    /// A map (a dict) that gains a key.
    Map,
    /// Functions that captured tensors.
    Function,
}

struct Weighed {
    name: String,
    weight: Weight,
    kind: Option<Kind>,
}

struct Suspect {
    key: LoopKey,
    growth: u64,
    name: String,
    kind: Kind,
    graph_bytes: u64,
    /// The loops around the suspect's loop when it was suspected, outermost first.
    outer: Vec<LoopKey>,
    /// A loop around it passed: check it at the next weighing.
    due: bool,
    /// The outermost loop around it passed: the step is over, and a graph held is a leak.
    step_over: bool,
}

impl LeakWatch {
    /// Forget every loop (a new input starts).
    pub fn clear(&mut self) {
        *self = LeakWatch::default();
    }

    /// Whether the next pass of `key` at `allocated` bytes needs the variables weighed;
    /// records the pass. When true, call [`LeakWatch::weighed`] with the variables.
    pub fn pass(&mut self, key: LoopKey, allocated: u64) -> bool {
        match self.running.iter().position(|k| *k == key) {
            // A new pass of a running loop: the loops inside it have ended their step.
            Some(at) => {
                self.running.truncate(at + 1);
                for suspect in &mut self.suspects {
                    if suspect.outer.contains(&key) {
                        suspect.due = true;
                        suspect.step_over |= suspect.outer[0] == key;
                    }
                }
            }
            None => self.running.push(key),
        }
        let watch = self.loops.entry(key).or_default();
        let grew = watch.last.is_some_and(|last| allocated > last);
        watch.growth = watch.last.map_or(0, |last| allocated.saturating_sub(last));
        watch.last = Some(allocated);
        watch.growths = if grew { watch.growths + 1 } else { 0 };
        let weigh_loop = !watch.settled && watch.growths >= GROWTHS - 1;
        weigh_loop || self.suspects.iter().any(|s| s.due)
    }

    /// Take the variables' weights for loop `key`: the warnings of the suspects whose step is
    /// over and whose graph is still held.
    pub fn weighed<'a>(
        &mut self,
        key: LoopKey,
        variables: impl Iterator<Item = (&'a str, &'a Value)>,
    ) -> Vec<String> {
        let weights = weigh(variables);
        let warnings = self.check(false, &weights);
        let Some(watch) = self.loops.get_mut(&key) else {
            return warnings;
        };
        if watch.settled || watch.growths < GROWTHS - 1 {
            return warnings;
        }
        if watch.growths < GROWTHS {
            watch.weights = Some(weights);
            return warnings;
        }
        watch.settled = true;
        let before = watch.weights.take().unwrap_or_default();
        if let Some((name, kind, graph_bytes)) = culprit(&before, &weights) {
            let outer = self
                .running
                .iter()
                .take_while(|k| **k != key)
                .copied()
                .collect();
            self.suspects.push(Suspect {
                key,
                growth: watch.growth,
                name,
                kind,
                graph_bytes,
                outer,
                due: false,
                step_over: false,
            });
        }
        warnings
    }

    /// Whether [`LeakWatch::finish`] has anything to check.
    pub fn has_suspects(&self) -> bool {
        !self.suspects.is_empty()
    }

    /// The input ended: the warnings of every suspect whose graph `variables` still hold.
    pub fn finish<'a>(
        &mut self,
        variables: impl Iterator<Item = (&'a str, &'a Value)>,
    ) -> Vec<String> {
        let weights = weigh(variables);
        self.check(true, &weights)
    }

    /// Look at the suspects due (every one at the input's `end`): a warning for each whose
    /// step is over and whose graph is still held; one whose graph is gone is cleared, and one
    /// held before its step is over waits for a loop further out.
    fn check(&mut self, end: bool, weights: &[Weighed]) -> Vec<String> {
        let (now, later): (Vec<Suspect>, Vec<Suspect>) = std::mem::take(&mut self.suspects)
            .into_iter()
            .partition(|s| end || s.due);
        self.suspects = later;
        // A culprit no longer in scope (a function's local) may have handed its graph on:
        // what every variable's graph holds then stands for it.
        let all_graphs: u64 = weights.iter().map(|w| w.weight.graph_bytes).sum();
        let mut warnings = Vec::new();
        for mut s in now {
            let held = weights
                .iter()
                .find(|w| w.name == s.name)
                .map_or(all_graphs, |w| w.weight.graph_bytes);
            if held < s.graph_bytes {
                continue;
            }
            if end || s.step_over {
                warnings.push(message(&s));
            } else {
                s.due = false;
                self.suspects.push(s);
            }
        }
        warnings
    }
}

/// The variable whose graph gained the most over the last growth (the first of equals), its
/// kind and its graph's bytes; `None` when no graph grew (the loop built something).
fn culprit(before: &[Weighed], now: &[Weighed]) -> Option<(String, Kind, u64)> {
    let mut best: Option<(&Weighed, Kind, u64)> = None;
    for w in now {
        let Some(kind) = w.kind else { continue };
        let was = before
            .iter()
            .find(|b| b.name == w.name)
            .map_or(0, |b| b.weight.graph_bytes);
        let gained = w.weight.graph_bytes.saturating_sub(was);
        if gained > 0 && best.is_none_or(|(_, _, most)| gained > most) {
            best = Some((w, kind, gained));
        }
    }
    best.map(|(w, kind, _)| (w.name.clone(), kind, w.weight.graph_bytes))
}

/// What each variable reaches on the GPU, its graph's share, and what kind of holder it is.
fn weigh<'a>(variables: impl Iterator<Item = (&'a str, &'a Value)>) -> Vec<Weighed> {
    let mut weights: Vec<Weighed> = Vec::new();
    for (name, value) in variables {
        if weights.iter().any(|w| w.name == name) {
            continue;
        }
        let map = HolderMap::of_variables(std::iter::once((name, value)));
        let mut weight = Weight::default();
        let mut seen = HashSet::new();
        // A sum over the blocks: the order of the walk changes nothing.
        for (key, holders, bytes) in map.entries() {
            if !key.0.is_cuda() || !seen.insert(key) {
                continue;
            }
            weight.bytes += bytes;
            // A leaf the graph points to (a parameter, its `.grad`) is the model's, not memory
            // the graph keeps: only what the graph saves grows with a leak.
            if holders.iter().all(|h| h.starts_with("saved by")) {
                weight.graph_bytes += bytes;
            }
        }
        weights.push(Weighed {
            name: name.to_string(),
            weight,
            kind: kind_of(value),
        });
    }
    weights
}

fn kind_of(value: &Value) -> Option<Kind> {
    if value.holds_function() {
        return Some(Kind::Function);
    }
    match value {
        Value::Tensor(t) if t.numel() == 1 => Some(Kind::Scalar),
        Value::Tensor(_) => Some(Kind::Tensor),
        Value::List(_) => Some(Kind::List),
        Value::Map(_) | Value::Indexed(_) | Value::Keyed(_) | Value::Holds(_) => Some(Kind::Map),
        Value::Function(_) => Some(Kind::Function),
        Value::Other => None,
    }
}

fn message(s: &Suspect) -> String {
    let head = format!(
        "warning: line {}: GPU memory grows by {} B ({}) on every iteration of this loop",
        s.key.0,
        s.growth,
        human_bytes(s.growth)
    );
    let name = &s.name;
    let advice = match s.kind {
        Kind::Scalar => {
            format!("`{name}` holds each iteration's graph; keep a number instead (`loss.item()`)")
        }
        Kind::Tensor => format!(
            "`{name}` carries the graph of every earlier iteration; detach it once per \
             iteration (`{name} = {name}.detach()`)"
        ),
        Kind::List => format!(
            "`{name}` keeps each iteration's graph in a new item; keep a number (`loss.item()`) \
             or a detached tensor (`.detach()`) instead"
        ),
        Kind::Map => format!(
            "`{name}` keeps each iteration's graph under a new key; store a detached tensor \
             (`.detach()`) or a number (`.item()`) instead"
        ),
        Kind::Function => format!(
            "`{name}` keeps functions that captured each iteration's graph; capture a number \
             (`loss.item()`) or a detached tensor (`.detach()`) instead"
        ),
    };
    format!("{head}: {advice}")
}
