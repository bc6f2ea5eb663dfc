//! Script values as the explanations see them: [`torchlet_explain::Value`].
use rhai::Dynamic;
use torchlet_core::tensor::Tensor;
use torchlet_explain::Value;

use super::optim_module::ScriptOptimizer;

/// What `value` holds, walked into arrays, maps and optimizers.
pub fn value(value: &Dynamic) -> Value {
    if let Some(t) = value.read_lock::<Tensor>() {
        return Value::Tensor(t.clone());
    }
    if let Some(items) = value.read_lock::<rhai::Array>() {
        return Value::List(items.iter().map(self::value).collect());
    }
    if let Some(map) = value.read_lock::<rhai::Map>() {
        return Value::Map(
            map.iter()
                .map(|(k, v)| (k.to_string(), self::value(v)))
                .collect(),
        );
    }
    if let Some(opt) = value.read_lock::<ScriptOptimizer>() {
        return optimizer(&opt);
    }
    if let Some(f) = value.read_lock::<rhai::FnPtr>() {
        // A closure's captured variables are curried into it, shared with the scope it came from.
        let captured: Vec<Value> = f.curry().iter().map(self::value).collect();
        if captured.iter().any(|v| !matches!(v, Value::Other)) {
            return Value::Function(captured);
        }
    }
    Value::Other
}

/// An optimizer as PyTorch's holds memory: `opt.state[p]`, a dict keyed by the parameters that
/// have taken a step, each with its buffers (`exp_avg`, `momentum_buffer` …).
fn optimizer(opt: &ScriptOptimizer) -> Value {
    let opt = opt.0.borrow();
    let entries = opt.params().iter().enumerate().filter_map(|(i, p)| {
        let tensors = opt.state(i).tensors();
        let members: Vec<(String, Value)> = tensors
            .into_iter()
            .map(|(name, t)| (name.to_string(), Value::Tensor(t.clone())))
            .collect();
        (!members.is_empty()).then(|| (p.clone(), Value::Map(members)))
    });
    Value::Map(vec![("state".into(), Value::Keyed(entries.collect()))])
}

/// The variables of `scope`: the newest binding of each name, oldest name first (as `:vars`
/// lists them), without `del`'s tombstones.
pub fn live_bindings(scope: &rhai::Scope) -> Vec<(String, Dynamic)> {
    // `iter_raw` walks from the newest binding back, so the first one seen for a name is the
    // one in force.
    let mut seen: Vec<(String, Dynamic)> = Vec::new();
    for (name, _, v) in scope.iter_raw() {
        if !crate::runtime::syntax::is_deleted(v) && !seen.iter().any(|(n, _)| n == name) {
            seen.push((name.to_string(), v.clone()));
        }
    }
    seen.reverse();
    seen
}

/// [`live_bindings`] as the explanations see them.
pub fn scope_values(scope: &rhai::Scope) -> Vec<(String, Value)> {
    let bindings = live_bindings(scope);
    bindings.into_iter().map(|(n, v)| (n, value(&v))).collect()
}
