//! The language's face of the leak warnings: `__iteration LINE COL` at the top of every loop body
//! reports each pass to the session's [`LeakWatch`](torchlet_explain::leaks::LeakWatch), kept in its [`State`];
//! [`finish`] settles the loops still suspected when the input ends.
use std::rc::Rc;

use super::state::{LanguageState, State};
use crate::Frontend;
use rhai::{Dynamic, EvalAltResult, EvalContext, Expression};

/// Name of the statement that starts each loop iteration.
pub(crate) const ITERATION: &str = "__iteration";

/// Register `__iteration LINE COL`; warnings go to `frontend`'s stderr.
pub(crate) fn register(engine: &mut rhai::Engine, frontend: Rc<dyn Frontend>, state: &State) {
    let state = state.clone();
    engine.register_custom_syntax_with_state_raw(
        ITERATION,
        |symbols, _, _| Ok((symbols.len() < 3).then(|| "$int$".into())),
        false,
        move |context, inputs, _| iteration(context, inputs, &*frontend, &state),
    );
}

fn iteration(
    context: &mut EvalContext,
    inputs: &[Expression],
    frontend: &dyn Frontend,
    state: &LanguageState,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let Some(allocator) =
        torchlet_core::device::started_cuda_allocator(torchlet_core::device::current_device())
    else {
        return Ok(Dynamic::UNIT);
    };
    let int = |i: usize| inputs[i].get_literal_value::<rhai::INT>().unwrap_or(0);
    let key = (int(0), int(1));
    let now = allocator.memory_allocated();
    if !state.leaks.borrow_mut().pass(key, now) {
        return Ok(Dynamic::UNIT);
    }
    let variables = crate::surface::view::scope_values(context.scope());
    let named = variables.iter().map(|(n, v)| (n.as_str(), v));
    let report = state.leaks.borrow_mut().weighed(key, named);
    for text in report {
        frontend.stderr(&format!("{text}\n"));
    }
    Ok(Dynamic::UNIT)
}

/// The input ended: the warnings of the loops whose graph `scope` still holds (see
/// Note [what a leak is] in `torchlet_explain::leaks`).
pub fn finish(state: &LanguageState, scope: &rhai::Scope) -> Vec<String> {
    if !state.leaks.borrow().has_suspects() {
        return Vec::new();
    }
    let variables = crate::surface::view::scope_values(scope);
    let named = variables.iter().map(|(n, v)| (n.as_str(), v));
    state.leaks.borrow_mut().finish(named)
}
