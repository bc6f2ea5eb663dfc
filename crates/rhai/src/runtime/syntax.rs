//! The statements Rhai lacks: the grad-mode blocks `no_grad { … }` and friends, and the
//! tombstones `del` and rebinding leave.
//!
//! Why `del` leaves a tombstone instead of removing the scope entry: Rhai's parser resolves most
//! variables to a fixed offset from the end of the scope. Removing an entry from the middle of the
//! scope inside a nested block shifts every later entry, and once the block ends the parser's
//! offsets point at the wrong variables (or past the end). So `del x` drops x's value at once (its
//! tensor is freed if nothing else holds it) and puts a `Deleted` marker in its slot; reading the
//! marker is a `NameError`, exactly as Python reports a deleted name. The session removes the
//! markers between inputs, when no compiled offsets are live.
use rhai::{Dynamic, Engine, EvalAltResult, EvalContext, Expression, ImmutableString, Position};

/// What a deleted variable's slot holds until the session compacts its scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deleted;

/// Whether a scope value is the tombstone `del` leaves.
pub fn is_deleted(value: &Dynamic) -> bool {
    value.is::<Deleted>()
}

/// Remove the tombstones `del` left, keeping every other variable in order.
pub fn compact_deleted(scope: &mut rhai::Scope<'static>) {
    if !scope.iter_raw().any(|(_, _, value)| is_deleted(value)) {
        return;
    }
    // `iter_raw` walks from the newest binding back: re-push oldest first so that shadowing
    // (`let a = 1; let a = 2;`) still resolves to the newest binding.
    let kept: Vec<(String, bool, Dynamic)> = scope
        .iter_raw()
        .filter(|(_, _, value)| !is_deleted(value))
        .map(|(name, constant, value)| (name.to_string(), constant, value.clone()))
        .collect();
    scope.clear();
    for (name, constant, value) in kept.into_iter().rev() {
        if constant {
            scope.push_constant_dynamic(name, value);
        } else {
            scope.push_dynamic(name, value);
        }
    }
}

/// Which grad mode a block runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockMode {
    /// `no_grad { … }`
    NoGrad,
    /// `enable_grad { … }`
    EnableGrad,
    /// `inference_mode { … }`
    InferenceMode,
}

impl BlockMode {
    /// The keyword that opens the block.
    pub fn keyword(self) -> &'static str {
        match self {
            BlockMode::NoGrad => "no_grad",
            BlockMode::EnableGrad => "enable_grad",
            BlockMode::InferenceMode => "inference_mode",
        }
    }
}

/// Register `del`, the grad-mode blocks, and the variable hook that makes deleted names undefined.
pub(crate) fn register(engine: &mut Engine, state: &super::state::State) {
    engine.register_type_with_name::<Deleted>("deleted");
    let state = state.clone();
    #[allow(deprecated)] // on_var is stable in practice; Rhai marks it "volatile".
    engine.on_var(move |name, index, mut context| {
        if context.call_level() > 0 {
            super::globals::resolve_in_function(&state, name, index, &mut context);
        }
        match context.scope().get(name) {
            Some(value) if is_deleted(value) => {
                Err(EvalAltResult::ErrorVariableNotFound(name.to_string(), Position::NONE).into())
            }
            _ => Ok(None),
        }
    });
    engine.register_custom_syntax_with_state_raw(UNSHADOW, parse_name, false, eval_unshadow);
    engine.register_custom_syntax_with_state_raw(BIND, parse_bind, false, eval_bind);
    for mode in [
        BlockMode::NoGrad,
        BlockMode::EnableGrad,
        BlockMode::InferenceMode,
    ] {
        engine.register_custom_syntax_with_state_raw(
            mode.keyword(),
            parse_block_statement,
            true,
            move |context, inputs, _| {
                let _guard = enter(mode);
                eval_in_callers_scope(context, &inputs[0])
            },
        );
    }
}

/// Tokens that would silently continue a block as an expression: `no_grad { … }\n[a, b]` would
/// index the block's value, `no_grad { … }\n-x` would subtract. Python users expect a new statement.
pub(crate) const CONTINUATIONS: &[&str] = &[
    "[", ".", "?.", "?[", "(", "+", "-", "*", "/", "%", "**", "==", "!=", "<", ">", "<=", ">=",
    "&&", "||", "&", "|", "^", "??", "..", "..=", "<<", ">>", "=", "+=", "-=", "*=", "/=",
];

/// KEYWORD `{` … `}`, refusing a continuation right after the block.
fn parse_block_statement(
    symbols: &[ImmutableString],
    look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    match symbols.len() {
        1 => Ok(Some("$block$".into())),
        _ if CONTINUATIONS.contains(&look_ahead) => Err(rhai::LexError::ImproperSymbol(
            look_ahead.to_string(),
            format!(
                "'{look_ahead}' right after a {} {{ … }} block: end the block with ';' to start a new statement",
                symbols[0]
            ),
        )
        .into_err(Position::NONE)),
        _ => Ok(None),
    }
}

/// `__unshadow` NAME
fn parse_name(
    symbols: &[ImmutableString],
    _look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    Ok((symbols.len() == 1).then(|| "$ident$".into()))
}

/// `__bind` NAME EXPR
fn parse_bind(
    symbols: &[ImmutableString],
    _look_ahead: &str,
    _state: &mut Dynamic,
) -> Result<Option<ImmutableString>, rhai::ParseError> {
    Ok(match symbols.len() {
        1 => Some("$ident$".into()),
        2 => Some("$expr$".into()),
        _ => None,
    })
}

/// The expression the lifetime rewrite makes of a plain assignment `NAME = EXPR`.
pub(crate) const BIND: &str = "__bind";

/// `__bind NAME EXPR`: Python's assignment. The value is computed first, then bound, and the old
/// value dropped last (an array's items last to first, as CPython frees a list). A slot that
/// holds a tombstone (a deleted name, or one the session declared for a name first bound
/// inside a block) is bound like any other, as Python binds `x = 5` after `del x`.
fn eval_bind(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let name = inputs[0].get_string_value().unwrap_or_default().to_string();
    let value = context.eval_expression_tree(&inputs[1])?.flatten();
    let scope = context.scope_mut();
    if !scope.contains(&name) {
        return Err(EvalAltResult::ErrorVariableNotFound(name, inputs[0].position()).into());
    }
    match scope.get_mut(&name) {
        Some(slot) => {
            super::lifetimes::drop_like_python(std::mem::replace(slot, value));
            Ok(Dynamic::UNIT)
        }
        None => Err(crate::surface::errors::raise(
            "TypeError",
            format!("cannot assign to constant '{name}'"),
        )),
    }
}

/// The statement the lifetime rewrite puts after a top-level `let` of a name already bound.
pub(crate) const UNSHADOW: &str = "__unshadow";

/// `__unshadow NAME`, right after `let NAME = …`: the older binding's value is dropped, as
/// Python's assignment drops the old value of a name it rebinds. Rhai's `let` pushes a new
/// binding and leaves the old one alive underneath, so re-running `let x = randn(…).cuda()` in a
/// notebook would hold two tensors. The old slot becomes a tombstone, like `del`'s, so that the
/// scope keeps its shape (see the module doc); the session compacts it between inputs.
fn eval_unshadow(
    context: &mut EvalContext,
    inputs: &[Expression],
    _state: &Dynamic,
) -> Result<Dynamic, Box<EvalAltResult>> {
    let Some(name) = inputs.first().and_then(|i| i.get_string_value()) else {
        return Ok(Dynamic::UNIT);
    };
    let scope = context.scope_mut();
    // The new binding was pushed by the `let` just before: it is the last entry.
    let is_last = scope.iter_raw().next().is_some_and(|(n, _, _)| n == name);
    if !is_last {
        return Ok(Dynamic::UNIT);
    }
    let newest = scope.get_mut(name).map(std::mem::take).unwrap_or_default();
    scope.pop();
    let old = match scope.get_mut(name) {
        Some(slot) if !is_deleted(slot) && !slot.is_read_only() => {
            Some(std::mem::replace(slot, Dynamic::from(Deleted)))
        }
        _ => None,
    };
    scope.push_dynamic(name, newest);
    if let Some(old) = old {
        super::lifetimes::drop_like_python(old);
    }
    Ok(Dynamic::UNIT)
}

/// Run a block's statements in the caller's scope (Python's `with`): `let` inside stays visible.
pub(crate) fn eval_in_callers_scope(
    context: &mut EvalContext,
    block: &Expression,
) -> Result<Dynamic, Box<EvalAltResult>> {
    // The syntax is registered with `scope_may_be_changed`, so the parser puts a barrier before the
    // block and resolves every later variable of the enclosing block by name; the variables this
    // block adds therefore cannot shift any pre-computed offset.
    #[allow(deprecated)] // not deprecated: Rhai marks the raw form "volatile".
    context.eval_expression_tree_raw(block, false)
}

/// Enter a grad mode until the returned guard drops (also when the block fails).
fn enter(mode: BlockMode) -> torchlet_core::autograd::GradModeGuard {
    match mode {
        BlockMode::NoGrad => torchlet_core::autograd::no_grad(),
        BlockMode::EnableGrad => torchlet_core::autograd::enable_grad(),
        BlockMode::InferenceMode => torchlet_core::autograd::inference_mode(),
    }
}
