//! Provenance for the script layer: `__site(LINE, COL)` before each statement names it, as
//! `FILE:LINE:COL: text`, for the allocations it makes (see [`crate::alloc::site`]).
//!
//! The names are made once per statement of an input and shared after that, so a statement in a
//! loop costs a table lookup per run, not a string.
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Default)]
struct Input {
    source: String,
    code: String,
    names: HashMap<(i64, i64), Arc<str>>,
}

thread_local! {
    static INPUT: RefCell<Option<Input>> = const { RefCell::new(None) };
}

/// Register `__site(LINE, COL)`.
pub(crate) fn register(engine: &mut rhai::Engine) {
    engine.register_fn("__site", |line: rhai::INT, col: rhai::INT| enter(line, col));
}

/// An input starts: its statements will be named from `code`, under `source`.
pub fn begin_input(source: &str, code: &str) {
    INPUT.with(|i| {
        *i.borrow_mut() = Some(Input {
            source: source.to_string(),
            code: code.to_string(),
            names: HashMap::new(),
        })
    });
}

/// The input is done: allocations made now belong to no statement.
pub fn end_input() {
    INPUT.with(|i| *i.borrow_mut() = None);
    crate::alloc::site::set(None);
}

fn enter(line: rhai::INT, col: rhai::INT) {
    let site = INPUT.with(|i| {
        let mut input = i.borrow_mut();
        let input = input.as_mut()?;
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
    });
    crate::alloc::site::set(site);
}
