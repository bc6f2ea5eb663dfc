//! Leak warnings: a loop whose every iteration leaves more GPU memory allocated than the one
//! before is named once, with the variable that grows and why.
//!
//! The lifetime rewrite puts `__iteration LINE COL` at the top of every loop body. Each pass
//! reads `memory_allocated()`; after three growths in a row the variables are weighed (the bytes
//! each reaches, its graph's included) and compared with the weights taken one growth earlier:
//! the one that gained is the culprit. A tensor whose graph gained is the classic
//! `total = total + loss`, which keeps every iteration's graph.
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use rhai::{Dynamic, EvalAltResult, EvalContext, Expression};

use super::holders::HolderMap;
use super::Frontend;

/// Name of the statement that starts each loop iteration.
pub(crate) const ITERATION: &str = "__iteration";

/// Growths in a row before a loop is reported.
const GROWTHS: u32 = 3;

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

thread_local! {
    static WATCHES: RefCell<HashMap<(i64, i64), Watch>> = RefCell::new(HashMap::new());
}

/// Forget the loops of the previous input.
pub fn reset() {
    WATCHES.with(|w| w.borrow_mut().clear());
}

/// Register `__iteration LINE COL`; warnings go to `frontend`'s stderr.
pub(crate) fn register(engine: &mut rhai::Engine, frontend: Rc<dyn Frontend>) {
    engine.register_custom_syntax_with_state_raw(
        ITERATION,
        |symbols, _, _| Ok((symbols.len() < 3).then(|| "$int$".into())),
        false,
        move |context, inputs, _| iteration(context, inputs, &*frontend),
    );
}

fn iteration(
    context: &mut EvalContext,
    inputs: &[Expression],
    frontend: &dyn Frontend,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let Some(allocator) =
        torchlet_core::device::started_cuda_allocator(torchlet_core::device::current_device())
    else {
        return Ok(Dynamic::UNIT);
    };
    let int = |i: usize| inputs[i].get_literal_value::<rhai::INT>().unwrap_or(0);
    let key = (int(0), int(1));
    let now = allocator.memory_allocated();
    let step = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let watch = watches.entry(key).or_default();
        let grew = watch.last.is_some_and(|last| now > last);
        watch.growth = watch.last.map_or(0, |last| now.saturating_sub(last));
        watch.last = Some(now);
        watch.growths = if grew { watch.growths + 1 } else { 0 };
        (!watch.warned && watch.growths >= GROWTHS - 1).then_some(watch.growths)
    });
    let Some(growths) = step else {
        return Ok(Dynamic::UNIT);
    };
    let weights = weigh(context);
    let report = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let watch = watches.get_mut(&key)?;
        if growths < GROWTHS {
            watch.weights = Some(weights);
            return None;
        }
        watch.warned = true;
        let before = watch.weights.take().unwrap_or_default();
        Some(message(key.0, watch.growth, &before, &weights))
    });
    if let Some(text) = report {
        frontend.stderr(&format!("{text}\n"));
    }
    Ok(Dynamic::UNIT)
}

/// What each top-level variable reaches on the GPU: its own memory and its graph's.
fn weigh(context: &EvalContext) -> HashMap<String, Weight> {
    let mut weights = HashMap::new();
    for (name, _, value) in context.scope().iter_raw() {
        if super::syntax::is_deleted(value) || weights.contains_key(name) {
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
        super::numbers::human_bytes(growth)
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
