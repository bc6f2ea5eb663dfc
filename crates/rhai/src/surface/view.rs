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
        // Indexed as PyTorch's `optimizer.state_dict()["state"]` numbers the parameters.
        let opt = opt.0.borrow();
        let state = (0..opt.params().len()).flat_map(|i| {
            let tensors = opt.state(i).tensors();
            let held: Vec<(String, Tensor)> = tensors
                .into_iter()
                .map(|(name, t)| (format!("state[{i}].{name}"), t.clone()))
                .collect();
            held
        });
        return Value::Holds(state.collect());
    }
    Value::Other
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
