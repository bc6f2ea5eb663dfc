//! PyTorch's optimizers (`SGD`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`) with PyTorch's allocations, step by step.
//!
//! Map: `options` holds the hyperparameters, one row each (PyTorch's defaults, types, checks and
//! help; `option_table` is the machinery the rows go through, `number` how they print); `sgd`,
//! `adam`, `rmsprop` and `adagrad` are the algorithms, each as PyTorch's `_multi_tensor_*` (foreach, CUDA's default) and
//! `_single_tensor_*` functions allocate and free; `undo` lets a step that runs out of memory
//! leave every tensor as it was. The optimizers hold handles to the parameters (as Python's
//! `param_groups` hold references), one group, and per-parameter state made at the first step
//! (Adagrad's when it is made, as its `__init__` makes it).

mod adagrad;
mod adam;
mod number;
mod option_table;
pub mod options;
mod rmsprop;
mod sgd;
mod undo;

use crate::device::Device;
use crate::tensor::{DType, Result, Tensor, TensorError};

pub use options::{
    AdagradOptions, AdamOptions, Number, OptimizerKind, OptionValue, RmsPropOptions, SgdOptions,
    OPTIONS,
};

/// The algorithm and its options.
#[derive(Clone, Debug, PartialEq)]
pub enum Algorithm {
    /// `torch.optim.SGD`.
    Sgd(SgdOptions),
    /// `torch.optim.Adam` (or `AdamW`, whose options decouple the weight decay).
    Adam(AdamOptions),
    /// `torch.optim.RMSprop`.
    RmsProp(RmsPropOptions),
    /// `torch.optim.Adagrad`.
    Adagrad(AdagradOptions),
}

impl Algorithm {
    /// `kind`'s algorithm with PyTorch's defaults.
    pub fn defaults(kind: OptimizerKind) -> Algorithm {
        match kind {
            OptimizerKind::Sgd => Algorithm::Sgd(SgdOptions::default()),
            OptimizerKind::Adam => Algorithm::Adam(AdamOptions::adam()),
            OptimizerKind::AdamW => Algorithm::Adam(AdamOptions::adamw()),
            OptimizerKind::RmsProp => Algorithm::RmsProp(RmsPropOptions::default()),
            OptimizerKind::Adagrad => Algorithm::Adagrad(AdagradOptions::default()),
        }
    }
    /// The value of the option called `name`, if this algorithm has it.
    pub fn get(&self, name: &str) -> Option<OptionValue> {
        match self {
            Algorithm::Sgd(o) => o.get(name),
            Algorithm::Adam(o) => o.get(name),
            Algorithm::RmsProp(o) => o.get(name),
            Algorithm::Adagrad(o) => o.get(name),
        }
    }
    /// Set the option called `name`; false when there is none or `value` has another type.
    pub fn set(&mut self, name: &str, value: OptionValue) -> bool {
        match self {
            Algorithm::Sgd(o) => o.set(name, value),
            Algorithm::Adam(o) => o.set(name, value),
            Algorithm::RmsProp(o) => o.set(name, value),
            Algorithm::Adagrad(o) => o.set(name, value),
        }
    }
    /// PyTorch's checks in the optimizer's `__init__`, with its messages.
    pub fn check(&self) -> Result<()> {
        match self {
            Algorithm::Sgd(o) => o.check(),
            Algorithm::Adam(o) => o.check(),
            Algorithm::RmsProp(o) => o.check(),
            Algorithm::Adagrad(o) => o.check(),
        }
    }
}

/// What an optimizer keeps for one parameter (`optimizer.state[p]`); empty until its first step.
#[derive(Clone, Default)]
pub struct ParamState {
    /// Adam's step count (PyTorch keeps it as a 0-d float32 CPU tensor, so no GPU memory).
    pub step: Option<f64>,
    /// Adam's first moment estimate.
    pub exp_avg: Option<Tensor>,
    /// Adam's second moment estimate.
    pub exp_avg_sq: Option<Tensor>,
    /// AMSGrad's running maximum of `exp_avg_sq`.
    pub max_exp_avg_sq: Option<Tensor>,
    /// RMSprop's running average of the squared gradients.
    pub square_avg: Option<Tensor>,
    /// SGD's and RMSprop's momentum buffer.
    pub momentum_buffer: Option<Tensor>,
    /// Centered RMSprop's running average of the gradients.
    pub grad_avg: Option<Tensor>,
    /// Adagrad's sum of squared gradients.
    pub sum: Option<Tensor>,
}

impl ParamState {
    /// The state's entries by PyTorch's names, tensors only (the step is a number).
    pub fn tensors(&self) -> Vec<(&'static str, &Tensor)> {
        let entries = [
            ("exp_avg", &self.exp_avg),
            ("exp_avg_sq", &self.exp_avg_sq),
            ("max_exp_avg_sq", &self.max_exp_avg_sq),
            ("square_avg", &self.square_avg),
            ("momentum_buffer", &self.momentum_buffer),
            ("grad_avg", &self.grad_avg),
            ("sum", &self.sum),
        ];
        entries
            .into_iter()
            .filter_map(|(name, t)| t.as_ref().map(|t| (name, t)))
            .collect()
    }
}

/// An optimizer over one group of parameters.
pub struct Optimizer {
    name: &'static str,
    params: Vec<Tensor>,
    algorithm: Algorithm,
    state: Vec<ParamState>,
}

impl Optimizer {
    /// `name` ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad") over `params`, with PyTorch's
    /// checks of both.
    pub fn new(name: &'static str, params: Vec<Tensor>, algorithm: Algorithm) -> Result<Self> {
        algorithm.check()?;
        if params.is_empty() {
            return Err(TensorError::value("optimizer got an empty parameter list"));
        }
        if params.iter().any(|p| !p.is_leaf()) {
            return Err(TensorError::value("can't optimize a non-leaf Tensor"));
        }
        let mut state = vec![ParamState::default(); params.len()];
        if let Algorithm::Adagrad(o) = &algorithm {
            let _mode = crate::autograd::no_grad();
            adagrad::init_state(o, &params, &mut state)?;
        }
        Ok(Optimizer {
            name,
            params,
            algorithm,
            state,
        })
    }

    /// "SGD", "Adam", "AdamW", "RMSprop" or "Adagrad".
    pub fn name(&self) -> &'static str {
        self.name
    }
    /// The parameters, in the order given.
    pub fn params(&self) -> &[Tensor] {
        &self.params
    }
    /// The algorithm and its options.
    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }
    /// The algorithm's options, to change between steps (`group["lr"] = …`, as schedulers do).
    pub fn algorithm_mut(&mut self) -> &mut Algorithm {
        &mut self.algorithm
    }
    /// The state of the `i`-th parameter.
    pub fn state(&self, i: usize) -> &ParamState {
        &self.state[i]
    }

    /// One update of every parameter that has a gradient (`optimizer.step()`).
    ///
    /// All or nothing: when an allocation fails, the parameters, their gradients and the state are
    /// as they were before the call, and what the step allocated is freed.
    pub fn step(&mut self) -> Result<()> {
        let _mode = crate::autograd::no_grad();
        let with_grad: Vec<usize> = (0..self.params.len())
            .filter(|&i| self.params[i].grad().is_some())
            .collect();
        if with_grad.is_empty() {
            return Ok(());
        }
        let params: Vec<Tensor> = with_grad.iter().map(|&i| self.params[i].clone()).collect();
        let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
        let state: Vec<ParamState> = with_grad.iter().map(|&i| self.state[i].clone()).collect();
        let new_state = match &self.algorithm {
            Algorithm::Sgd(o) => sgd::step(o, &params, &grads, state)?,
            Algorithm::Adam(o) => adam::step(o, &params, &grads, state)?,
            Algorithm::RmsProp(o) => rmsprop::step(o, &params, &grads, state)?,
            Algorithm::Adagrad(o) => adagrad::step(o, &params, &grads, state)?,
        };
        for (&i, s) in with_grad.iter().zip(new_state) {
            self.state[i] = s;
        }
        Ok(())
    }

    /// `optimizer.zero_grad(set_to_none)`: free the gradients (PyTorch's default), or zero them.
    pub fn zero_grad(&self, set_to_none: bool) -> Result<()> {
        let _mode = crate::autograd::no_grad();
        for p in &self.params {
            let Some(grad) = p.grad() else { continue };
            if set_to_none {
                drop(grad);
                p.set_grad(None)?;
            } else {
                grad.detach_();
                grad.zero_()?;
            }
        }
        Ok(())
    }
}

/// Whether PyTorch would take the foreach path: asked for, or by default when every parameter
/// is on a GPU (`_default_to_fused_or_foreach`).
pub(crate) fn use_foreach(foreach: Option<bool>, params: &[Tensor]) -> bool {
    foreach.unwrap_or_else(|| params.iter().all(|p| p.device().is_cuda()))
}

/// Indices of `params` grouped by device and dtype, groups in order of first appearance, as
/// `_group_tensors_by_device_and_dtype` hands them to the foreach functions.
pub(crate) fn groups(params: &[Tensor]) -> Vec<Vec<usize>> {
    let mut keys: Vec<(Device, DType)> = Vec::new();
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, p) in params.iter().enumerate() {
        let key = (p.device(), p.dtype());
        match keys.iter().position(|k| *k == key) {
            Some(g) => out[g].push(i),
            None => {
                keys.push(key);
                out.push(vec![i]);
            }
        }
    }
    out
}

/// Drop a Python list of temporaries (if any) as CPython does: its items from last to first.
pub(crate) fn drop_list(list: Option<Vec<Tensor>>) {
    let mut list = list.unwrap_or_default();
    while let Some(t) = list.pop() {
        drop(t);
    }
}
