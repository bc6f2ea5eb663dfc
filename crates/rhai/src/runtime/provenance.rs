//! Provenance for the script layer: `__site(LINE, COL)` before each statement names it, as
//! `FILE:LINE:COL: text`, for the allocations it makes (see [`torchlet_alloc::site`]).
//!
//! The names are made once per statement of an input and shared after that, so a statement in a
//! loop costs a table lookup per run, not a string.
use std::collections::HashMap;
use std::sync::Arc;

use super::state::{LanguageState, State};

/// The input running now: its source, its text and its statements' names.
#[derive(Default)]
pub struct Input {
    source: String,
    code: String,
    names: HashMap<(i64, i64), Arc<str>>,
    /// The statement entered last: where an error with no position of its own happened.
    last: Option<(i64, i64)>,
}

/// Register `__site(LINE, COL)`.
pub(crate) fn register(engine: &mut rhai::Engine, state: &State) {
    let state = state.clone();
    engine.register_fn("__site", move |line: rhai::INT, col: rhai::INT| {
        enter(&state, line, col)
    });
}

/// An input starts: its statements will be named from `code`, under `source`.
pub fn begin_input(state: &LanguageState, source: &str, code: &str) {
    *state.input.borrow_mut() = Some(Input {
        source: source.to_string(),
        code: code.to_string(),
        names: HashMap::new(),
        last: None,
    });
}

/// The input is done: allocations made now belong to no statement. The (line, column) of the
/// statement that ran last, for an error Rhai gives no position (one raised in a module's
/// function, such as `cuda::all_reduce`).
pub fn end_input(state: &LanguageState) -> Option<(usize, usize)> {
    let last = state.input.borrow_mut().take().and_then(|i| i.last);
    torchlet_alloc::site::set(None);
    last.map(|(line, col)| (line as usize, col as usize))
}

fn enter(state: &LanguageState, line: rhai::INT, col: rhai::INT) {
    let site = (|| {
        let mut input = state.input.borrow_mut();
        let input = input.as_mut()?;
        input.last = Some((line, col));
        let name = input.names.entry((line, col)).or_insert_with(|| {
            let text = input
                .code
                .lines()
                .nth((line as usize).saturating_sub(1))
                .unwrap_or("")
                .trim();
            Arc::from(format!("{}:{line}:{col}: {text}", input.source))
        });
        Some(name.clone())
    })();
    torchlet_alloc::site::set(site);
}
