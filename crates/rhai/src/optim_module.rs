//! The `optim` module (`optim::SGD`, `optim::Adam`, `optim::AdamW`) and the optimizer type:
//! `.step()`, `.zero_grad([#{set_to_none}])`, `.state[p]`, and PyTorch's printed form.
use std::cell::RefCell;
use std::rc::Rc;

use rhai::{Array, Dynamic, Engine, Map, Module};

use super::convert::{OrRaise, Res};
use super::documented::{Documented, DocumentedModule};
use super::errors::{type_error, value_error};
use torchlet_core::optim::{AdamOptions, Algorithm, Number, Optimizer, SgdOptions};
use torchlet_core::tensor::Tensor;

/// An optimizer as scripts hold it: copies of the value are the same optimizer, as in Python.
#[derive(Clone)]
pub struct ScriptOptimizer(pub Rc<RefCell<Optimizer>>);

/// `opt.state`: indexed by a parameter, as PyTorch's `optimizer.state[p]`.
#[derive(Clone)]
pub struct OptimizerState(Rc<RefCell<Optimizer>>);

const SGD_KEYS: &[&str] = &[
    "lr",
    "momentum",
    "dampening",
    "weight_decay",
    "nesterov",
    "maximize",
    "foreach",
    "differentiable",
    "fused",
];
const ADAM_KEYS: &[&str] = &[
    "lr",
    "betas",
    "eps",
    "weight_decay",
    "amsgrad",
    "maximize",
    "foreach",
    "capturable",
    "differentiable",
    "fused",
    "decoupled_weight_decay",
];

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

/// The keyword arguments of `optimizer`: checked against `keys`, each applied by `set`.
fn each_option(
    optimizer: &str,
    keys: &[&str],
    options: &Map,
    mut set: impl FnMut(&str, &Dynamic) -> Res<()>,
) -> Res<()> {
    for (key, value) in options {
        if !keys.contains(&key.as_str()) {
            return Err(type_error(format!(
                "{optimizer}.__init__() got an unexpected keyword argument '{key}'; valid options: {}",
                keys.join(", ")
            )));
        }
        match key.as_str() {
            "fused" | "differentiable" | "capturable" => only_default(key, value)?,
            name => set(name, value)?,
        }
    }
    Ok(())
}

fn sgd_options(options: &Map) -> Res<SgdOptions> {
    let mut o = SgdOptions::default();
    each_option("SGD", SGD_KEYS, options, |key, v| {
        match key {
            "lr" => o.lr = number(key, v)?,
            "momentum" => o.momentum = number(key, v)?,
            "dampening" => o.dampening = number(key, v)?,
            "weight_decay" => o.weight_decay = number(key, v)?,
            "nesterov" => o.nesterov = flag(key, v)?,
            "maximize" => o.maximize = flag(key, v)?,
            _ => o.foreach = optional_flag(key, v)?,
        }
        Ok(())
    })?;
    Ok(o)
}

fn adam_options(name: &str, base: AdamOptions, options: &Map) -> Res<AdamOptions> {
    let mut o = base;
    each_option(name, ADAM_KEYS, options, |key, v| {
        match key {
            "lr" => o.lr = number(key, v)?,
            "betas" => o.betas = betas(v)?,
            "eps" => o.eps = number(key, v)?,
            "weight_decay" => o.weight_decay = number(key, v)?,
            "amsgrad" => o.amsgrad = flag(key, v)?,
            "maximize" => o.maximize = flag(key, v)?,
            "decoupled_weight_decay" => o.decoupled_weight_decay = flag(key, v)?,
            _ => o.foreach = optional_flag(key, v)?,
        }
        Ok(())
    })?;
    Ok(o)
}

fn betas(value: &Dynamic) -> Res<(Number, Number)> {
    let pair = value.read_lock::<Array>().map(|a| a.clone());
    match pair.as_deref() {
        Some([b1, b2]) => Ok((number("betas[0]", b1)?, number("betas[1]", b2)?)),
        _ => Err(type_error(format!(
            "betas must be an array of two numbers like [0.9, 0.999], not {}",
            python_type(value)
        ))),
    }
}

fn make(name: &'static str, params: &Dynamic, algorithm: Algorithm) -> Res<ScriptOptimizer> {
    let params = params_of(params)?;
    let optimizer = Optimizer::new(name, params, algorithm).or_raise()?;
    Ok(ScriptOptimizer(Rc::new(RefCell::new(optimizer))))
}

fn sgd(params: &Dynamic, options: &Map) -> Res<ScriptOptimizer> {
    make("SGD", params, Algorithm::Sgd(sgd_options(options)?))
}

fn adam(params: &Dynamic, options: &Map) -> Res<ScriptOptimizer> {
    let o = adam_options("Adam", AdamOptions::adam(), options)?;
    make("Adam", params, Algorithm::Adam(o))
}

fn adamw(params: &Dynamic, options: &Map) -> Res<ScriptOptimizer> {
    let o = adam_options("AdamW", AdamOptions::adamw(), options)?;
    make("AdamW", params, Algorithm::Adam(o))
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

/// PyTorch's `repr(optimizer)`: the group's options, sorted by name.
fn describe(opt: &ScriptOptimizer) -> String {
    let opt = opt.0.borrow();
    let py = |b: bool| if b { "True" } else { "False" }.to_string();
    let foreach = |f: Option<bool>| f.map_or("None".to_string(), py);
    let mut rows: Vec<(&str, String)> = match opt.algorithm() {
        Algorithm::Sgd(o) => vec![
            ("lr", o.lr.to_string()),
            ("momentum", o.momentum.to_string()),
            ("dampening", o.dampening.to_string()),
            ("weight_decay", o.weight_decay.to_string()),
            ("nesterov", py(o.nesterov)),
            ("maximize", py(o.maximize)),
            ("foreach", foreach(o.foreach)),
            ("differentiable", py(false)),
            ("fused", "None".into()),
        ],
        Algorithm::Adam(o) => vec![
            ("lr", o.lr.to_string()),
            ("betas", format!("({}, {})", o.betas.0, o.betas.1)),
            ("eps", o.eps.to_string()),
            ("weight_decay", o.weight_decay.to_string()),
            ("amsgrad", py(o.amsgrad)),
            ("maximize", py(o.maximize)),
            ("foreach", foreach(o.foreach)),
            ("capturable", py(false)),
            ("differentiable", py(false)),
            ("fused", "None".into()),
            ("decoupled_weight_decay", py(o.decoupled_weight_decay)),
        ],
    };
    rows.sort();
    let body: String = rows
        .iter()
        .map(|(k, v)| format!("    {k}: {v}\n"))
        .collect();
    format!("{} (\nParameter Group 0\n{body})", opt.name())
}

/// Register the `optim` module and the optimizer type.
pub(crate) fn register(engine: &mut Engine) {
    let mut m = Module::new();
    m.register_doc("SGD", &["optim::SGD(params[, #{lr, momentum, dampening, weight_decay, nesterov, maximize, foreach}]) — stochastic gradient descent over an array of tensors (lr 1e-3)"], |p: Dynamic| sgd(&p, &Map::new()));
    m.set_native_fn("SGD", |p: Dynamic, o: Map| sgd(&p, &o));
    m.register_doc("Adam", &["optim::Adam(params[, #{lr, betas, eps, weight_decay, amsgrad, maximize, foreach, decoupled_weight_decay}]) — Adam (lr 1e-3, betas [0.9, 0.999], eps 1e-8)"], |p: Dynamic| adam(&p, &Map::new()));
    m.set_native_fn("Adam", |p: Dynamic, o: Map| adam(&p, &o));
    m.register_doc("AdamW", &["optim::AdamW(params[, #{…Adam's options}]) — Adam with decoupled weight decay (weight_decay 0.01)"], |p: Dynamic| adamw(&p, &Map::new()));
    m.set_native_fn("AdamW", |p: Dynamic, o: Map| adamw(&p, &o));
    engine.register_static_module("optim", m.into());

    engine.register_type_with_name::<ScriptOptimizer>("Optimizer");
    engine.register_type_with_name::<OptimizerState>("OptimizerState");
    engine.register_fn("to_string", |o: &mut ScriptOptimizer| describe(o));
    engine.register_fn("to_debug", |o: &mut ScriptOptimizer| describe(o));
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
