//! Functions read top-level variables as Python functions read globals.
//!
//! Rhai runs a script function in a scope of its own, so `fn step() { w.grad }` cannot see the
//! session's `w`. Each call of a script function from top-level code is wrapped in
//! `__with_globals(…)`, which keeps a shallow copy of the top-level bindings (tensors are shared
//! handles, so nothing is copied but the handles) while the call runs. A name a function does
//! not bind is looked up there on first use and copied into the function's own scope, so
//! assigning to it inside the function changes a local, as Python's assignment makes a local.
//! The copies go when the outermost call returns; the top-level bindings keep their values
//! alive anyway, so the extra handles never change when memory is freed.
use rhai::{Dynamic, EvalContext, ImmutableString};

use super::state::{LanguageState, State};

/// Name of the custom expression that wraps a top-level call of a script function.
pub(crate) const WITH_GLOBALS: &str = "__with_globals";

/// The top-level bindings a running script function reads as globals.
#[derive(Default)]
pub struct Mirror {
    /// How many wrapped calls are running (a call's arguments may hold another).
    depth: usize,
    /// The top-level bindings, newest first.
    bindings: Vec<(ImmutableString, Dynamic)>,
}

/// Register `__with_globals EXPR`.
pub(crate) fn register(engine: &mut rhai::Engine, state: &State) {
    let state = state.clone();
    engine.register_custom_syntax_with_state_raw(
        WITH_GLOBALS,
        |symbols, _, _| Ok((symbols.len() == 1).then(|| "$expr$".into())),
        false,
        move |context, inputs, _| {
            let _running = enter(&state, context);
            context.eval_expression_tree(&inputs[0])
        },
    );
}

/// Leaves the mirror when the wrapped call ends, also by an error.
struct Running(State);

fn enter(state: &State, context: &EvalContext) -> Running {
    {
        let mut m = state.mirror.borrow_mut();
        if m.depth == 0 {
            m.bindings = context
                .scope()
                .iter_raw()
                .filter(|(_, _, value)| !super::syntax::is_deleted(value))
                .map(|(name, _, value)| (name.into(), value.clone()))
                .collect();
        }
        m.depth += 1;
    }
    Running(state.clone())
}

impl Drop for Running {
    fn drop(&mut self) {
        let released = {
            let mut m = self.0.mirror.borrow_mut();
            m.depth -= 1;
            if m.depth == 0 {
                std::mem::take(&mut m.bindings)
            } else {
                Vec::new()
            }
        };
        drop(released); // outside the borrow: a drop may run script code (none today)
    }
}

/// Inside a function, make a top-level `name` visible by copying it into the function's scope;
/// `index` is the parser's offset (non-zero for a name the function binds itself).
pub(crate) fn resolve_in_function(
    state: &LanguageState,
    name: &str,
    index: usize,
    context: &mut EvalContext,
) {
    if index > 0 || context.scope().contains(name) {
        return;
    }
    let found = state
        .mirror
        .borrow()
        .bindings
        .iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, value)| value.clone());
    if let Some(value) = found {
        context.scope_mut().push_dynamic(name, value);
    }
}
