//! The `optim` module (`optim::SGD`, `optim::Adam`, `optim::AdamW`, `optim::RMSprop`,
//! `optim::Adagrad`) and the optimizer type:
//! `.step()`, `.zero_grad([#{set_to_none}])`, `.state[p]`, and PyTorch's printed form.
use std::cell::RefCell;
use std::rc::Rc;

use rhai::{Array, Dynamic, Engine, Map, Module};

use super::convert::{OrRaise, Res};
use super::documented::{Documented, DocumentedModule};
use super::errors::{type_error, value_error};
use torchlet_core::optim::options::{keywords, OptionRow, OptionType};
use torchlet_core::optim::{Algorithm, Number, Optimizer, OptimizerKind, OptionValue, OPTIONS};
use torchlet_core::tensor::Tensor;

/// An optimizer as scripts hold it: copies of the value are the same optimizer, as in Python.
#[derive(Clone)]
pub struct ScriptOptimizer(pub Rc<RefCell<Optimizer>>);

/// `opt.state`: indexed by a parameter, as PyTorch's `optimizer.state[p]`.
#[derive(Clone)]
pub struct OptimizerState(Rc<RefCell<Optimizer>>);

/// Python's name for a script value's type, as `torch.typename` gives it.
fn python_type(value: &Dynamic) -> String {
    if let Some(t) = value.read_lock::<Tensor>() {
        return t.type_name();
    }
    let name = match value.type_name() {
        "i64" => "int",
        "f64" => "float",
        "bool" => "bool",
        "string" => "str",
        "array" => "list",
        "map" => "dict",
        "()" => "NoneType",
        other => other,
    };
    name.to_string()
}

/// The parameters an optimizer is given: an array of leaf tensors.
fn params_of(params: &Dynamic) -> Res<Vec<Tensor>> {
    let Some(items) = params.read_lock::<Array>() else {
        let hint = if params.is_map() {
            "; nn::parameters(layer) gathers a map's tensors into one"
        } else {
            ""
        };
        return Err(type_error(format!(
            "params argument given to the optimizer should be an array of Tensors, but got {}{hint}",
            python_type(params)
        )));
    };
    items
        .iter()
        .map(|item| {
            item.read_lock::<Tensor>()
                .map(|t| t.clone())
                .ok_or_else(|| {
                    type_error(format!(
                        "optimizer can only optimize Tensors, but one of the params is {}",
                        python_type(item)
                    ))
                })
        })
        .collect()
}

fn number(name: &str, value: &Dynamic) -> Res<Number> {
    if let Ok(i) = value.as_int() {
        Ok(Number::int(i))
    } else if let Ok(f) = value.as_float() {
        Ok(Number::float(f))
    } else {
        Err(type_error(format!(
            "{name} must be a number, not {}",
            python_type(value)
        )))
    }
}

fn flag(name: &str, value: &Dynamic) -> Res<bool> {
    value
        .as_bool()
        .map_err(|_| type_error(format!("{name} must be a bool, not {}", python_type(value))))
}

/// `foreach`: true, false, or () for PyTorch's choice.
fn optional_flag(name: &str, value: &Dynamic) -> Res<Option<bool>> {
    if value.is_unit() {
        return Ok(None);
    }
    flag(name, value).map(Some)
}

/// Options torchlet takes only at PyTorch's default (`fused`, `differentiable`, `capturable`).
fn only_default(name: &str, value: &Dynamic) -> Res<()> {
    if value.is_unit() || value.as_bool() == Ok(false) {
        return Ok(());
    }
    Err(value_error(format!(
        "{name}=True is not supported by torchlet; leave it out (PyTorch's default, false) and \
         the foreach path runs, as on CUDA by default"
    )))
}

/// Two numbers (`betas`), as an array like the row's Adam default.
fn pair(name: &str, value: &Dynamic) -> Res<(Number, Number)> {
    let items = value.read_lock::<Array>().map(|a| a.clone());
    match items.as_deref() {
        Some([a, b]) => Ok((
            number(&format!("{name}[0]"), a)?,
            number(&format!("{name}[1]"), b)?,
        )),
        _ => {
            let example = Algorithm::defaults(OptimizerKind::Adam)
                .get(name)
                .map_or(String::new(), |v| v.to_string());
            let example = example.replace('(', "[").replace(')', "]");
            Err(type_error(format!(
                "{name} must be an array of two numbers like {example}, not {}",
                python_type(value)
            )))
        }
    }
}

/// A script's value for `row`, read as the row's type says.
fn option_value(row: &OptionRow, value: &Dynamic) -> Res<OptionValue> {
    let name = row.name;
    Ok(match row.ty {
        OptionType::Number => OptionValue::Number(number(name, value)?),
        OptionType::Flag => OptionValue::Flag(flag(name, value)?),
        OptionType::Auto => OptionValue::Auto(optional_flag(name, value)?),
        OptionType::Pair => OptionValue::Pair(pair(name, value)?),
    })
}

/// The keyword arguments of `kind`: each checked against its rows, read by its row's type and
/// handed to `set` (an option torchlet takes only at its default is checked, not set).
fn each_option(
    kind: OptimizerKind,
    options: &Map,
    mut set: impl FnMut(&str, OptionValue) -> bool,
) -> Res<()> {
    let rows = keywords(OPTIONS, kind);
    for (key, value) in options {
        let Some(row) = rows.iter().find(|r| r.name == key.as_str()) else {
            let names: Vec<&str> = rows.iter().map(|r| r.name).collect();
            return Err(type_error(format!(
                "{}.__init__() got an unexpected keyword argument '{key}'; valid options: {}",
                kind.name(),
                names.join(", ")
            )));
        };
        if row.only_default.is_some() {
            only_default(key, value)?;
        } else if !set(key, option_value(row, value)?) {
            return Err(type_error(format!("{} has no option {key}", kind.name())));
        }
    }
    Ok(())
}

fn make(name: &'static str, params: &Dynamic, algorithm: Algorithm) -> Res<ScriptOptimizer> {
    let params = params_of(params)?;
    let optimizer = Optimizer::new(name, params, algorithm).or_raise()?;
    Ok(ScriptOptimizer(Rc::new(RefCell::new(optimizer))))
}

/// `optim::KIND(params, #{…})`: PyTorch's defaults for `kind`, then the options given.
fn optimizer(kind: OptimizerKind, params: &Dynamic, options: &Map) -> Res<ScriptOptimizer> {
    let mut algorithm = Algorithm::defaults(kind);
    each_option(kind, options, |key, v| algorithm.set(key, v))?;
    make(kind.name(), params, algorithm)
}

fn zero_grad(opt: &ScriptOptimizer, options: &Map) -> Res<()> {
    let mut set_to_none = true;
    for (key, value) in options {
        match key.as_str() {
            "set_to_none" => set_to_none = flag("set_to_none", value)?,
            other => {
                return Err(type_error(format!(
                    "zero_grad() got an unexpected keyword argument '{other}'; valid options: set_to_none"
                )))
            }
        }
    }
    opt.0.borrow().zero_grad(set_to_none).or_raise()
}

/// `opt.state[p]`: the parameter's state as a map (empty before its first step).
fn state_of(state: &OptimizerState, param: &Tensor) -> Res<Map> {
    let opt = state.0.borrow();
    let Some(i) = opt.params().iter().position(|p| p.same_tensor(param)) else {
        return Err(super::errors::raise(
            "KeyError",
            "this tensor is not one of the optimizer's parameters",
        ));
    };
    let s = opt.state(i);
    let mut map = Map::new();
    if let Some(step) = s.step {
        let t = Tensor::from_values(
            vec![torchlet_core::tensor::Scalar::Float(step)],
            vec![],
            &Default::default(),
        )
        .or_raise()?;
        map.insert("step".into(), Dynamic::from(t));
    }
    for (name, t) in s.tensors() {
        map.insert(name.into(), Dynamic::from(t.clone()));
    }
    Ok(map)
}

/// How an optimizer or its `state` prints, for the values that are one.
pub(crate) fn repr(value: &Dynamic) -> Option<String> {
    if let Some(opt) = value.read_lock::<ScriptOptimizer>() {
        return Some(describe(&opt));
    }
    let state = value.read_lock::<OptimizerState>()?;
    Some(describe_state(&state))
}

/// PyTorch's `repr(optimizer.state)`: a dict from each parameter that has state to its map.
fn describe_state(state: &OptimizerState) -> String {
    let params: Vec<Tensor> = state.0.borrow().params().to_vec();
    let mut entries = Vec::new();
    for p in &params {
        let Ok(map) = state_of(state, p) else {
            continue;
        };
        if map.is_empty() {
            continue;
        }
        let text = super::display::repr(&Dynamic::from_map(map));
        entries.push(format!("{p}: {text}"));
    }
    format!("defaultdict(<class 'dict'>, {{{}}})", entries.join(", "))
}

/// PyTorch's `repr(optimizer)`: the group's options, sorted by name.
fn describe(opt: &ScriptOptimizer) -> String {
    let opt = opt.0.borrow();
    let kind = match opt.algorithm() {
        Algorithm::Sgd(_) => OptimizerKind::Sgd,
        Algorithm::Adam(_) => OptimizerKind::Adam,
        Algorithm::RmsProp(_) => OptimizerKind::RmsProp,
        Algorithm::Adagrad(_) => OptimizerKind::Adagrad,
    };
    let value = |name: &str| opt.algorithm().get(name);
    let mut rows: Vec<(&str, String)> = OPTIONS
        .iter()
        .filter(|r| r.in_group_of(kind))
        .filter_map(|r| Some((r.name, value(r.name).or(r.only_default)?.to_string())))
        .collect();
    rows.sort();
    let body: String = rows
        .iter()
        .map(|(k, v)| format!("    {k}: {v}\n"))
        .collect();
    format!("{} (\nParameter Group 0\n{body})", opt.name())
}

/// `optim::NAME(params[, #{…}]) — what`: the options listed are the keywords torchlet runs.
fn usage(kind: OptimizerKind, what: &str) -> String {
    let names: Vec<&str> = keywords(OPTIONS, kind)
        .iter()
        .filter(|r| r.only_default.is_none())
        .map(|r| r.name)
        .collect();
    format!(
        "optim::{}(params[, #{{{}}}]) — {what}",
        kind.name(),
        names.join(", ")
    )
}

/// Register the `optim` module and the optimizer type.
pub(crate) fn register(engine: &mut Engine) {
    let mut m = Module::new();
    for (kind, what) in [
        (
            OptimizerKind::Sgd,
            "stochastic gradient descent over an array of tensors (lr 1e-3)",
        ),
        (
            OptimizerKind::Adam,
            "Adam (lr 1e-3, betas [0.9, 0.999], eps 1e-8)",
        ),
        (
            OptimizerKind::AdamW,
            "Adam with decoupled weight decay (weight_decay 0.01)",
        ),
        (
            OptimizerKind::RmsProp,
            "RMSprop: steps scaled by a running average of squared gradients (lr 1e-2, alpha 0.99)",
        ),
        (
            OptimizerKind::Adagrad,
            "Adagrad: steps scaled by each element's sum of squared gradients (lr 1e-2), made at once",
        ),
    ] {
        m.register_doc(kind.name(), &[&usage(kind, what)], move |p: Dynamic| {
            optimizer(kind, &p, &Map::new())
        });
        m.set_native_fn(kind.name(), move |p: Dynamic, o: Map| {
            optimizer(kind, &p, &o)
        });
    }
    engine.register_static_module("optim", m.into());

    engine.register_type_with_name::<ScriptOptimizer>("Optimizer");
    engine.register_type_with_name::<OptimizerState>("OptimizerState");
    engine.register_fn("to_string", |o: &mut ScriptOptimizer| describe(o));
    engine.register_fn("to_debug", |o: &mut ScriptOptimizer| describe(o));
    engine.register_fn("to_string", |s: &mut OptimizerState| describe_state(s));
    engine.register_fn("to_debug", |s: &mut OptimizerState| describe_state(s));
    engine.register_doc(
        "step",
        &["opt.step() — update every parameter that has a .grad (state is made at the first step)"],
        |o: &mut ScriptOptimizer| o.0.borrow_mut().step().or_raise(),
    );
    engine.register_doc(
        "zero_grad",
        &["opt.zero_grad([#{set_to_none: false}]) — free the parameters' .grad (or, set_to_none false, zero it)"],
        |o: &mut ScriptOptimizer| zero_grad(o, &Map::new()),
    );
    engine.register_fn("zero_grad", |o: &mut ScriptOptimizer, m: Map| {
        zero_grad(o, &m)
    });
    engine.register_get_doc(
        "state",
        "opt.state — per-parameter state: opt.state[p] is a map (step, exp_avg, momentum_buffer …)",
        |o: &mut ScriptOptimizer| OptimizerState(o.0.clone()),
    );
    engine.register_indexer_get(|s: &mut OptimizerState, p: Tensor| state_of(s, &p));
}
