//! Factories: `_make("zeros"|…, shape, dtype, device, requires_grad)`, `_full`, `_from_values`,
//! `_arange`, `_linspace`, `_eye`, `_randint`, and `_manual_seed`.

use torchlet_core::device::Device;
use torchlet_core::tensor::{DType, Tensor, TensorOptions};

use super::args::Args;
use super::tensor::{wrap, OrRaise};
use super::Native;
use rustpython_vm::PyResult;

/// Every factory, by the name `torch/__init__.py` calls it.
pub(crate) const FUNCTIONS: &[(&str, Native)] = &[
    ("_make", make),
    ("_full", |a| {
        let opts = options(a, 2)?;
        let t = Tensor::full(&a.shape(0)?, a.scalar(1)?, &opts).or_raise(a.vm)?;
        Ok(wrap(a.vm, t))
    }),
    ("_from_values", |a| {
        let values = a
            .sequence(0)?
            .iter()
            .map(|v| {
                super::args::scalar_of(a.vm, v)
                    .ok_or_else(|| a.vm.new_type_error("tensor(): the data must be numbers"))
            })
            .collect::<PyResult<Vec<_>>>()?;
        let opts = options(a, 2)?;
        let t = Tensor::from_values(values, a.shape(1)?, &opts).or_raise(a.vm)?;
        Ok(wrap(a.vm, t))
    }),
    ("_arange", |a| {
        let opts = options(a, 3)?;
        let t = Tensor::arange(a.float(0)?, a.float(1)?, a.float(2)?, &opts).or_raise(a.vm)?;
        Ok(wrap(a.vm, t))
    }),
    ("_linspace", |a| {
        let opts = options(a, 3)?;
        let steps = usize::try_from(a.int(2)?).map_err(|_| {
            a.vm.new_runtime_error("linspace(): number of steps must be non-negative")
        })?;
        let t = Tensor::linspace(a.float(0)?, a.float(1)?, steps, &opts).or_raise(a.vm)?;
        Ok(wrap(a.vm, t))
    }),
    ("_eye", |a| {
        let opts = options(a, 1)?;
        let n = a.shape(0)?;
        let (rows, cols) = (n[0], n.get(1).copied());
        Ok(wrap(a.vm, Tensor::eye(rows, cols, &opts).or_raise(a.vm)?))
    }),
    ("_randint", |a| {
        let opts = options(a, 3)?;
        let t = Tensor::randint(a.int(0)?, a.int(1)?, &a.shape(2)?, &opts).or_raise(a.vm)?;
        Ok(wrap(a.vm, t))
    }),
    ("_manual_seed", |a| {
        torchlet_core::tensor::manual_seed(a.int(0)? as u64);
        super::none(a.vm)
    }),
    ("_rng_snapshot", |a| {
        let id = RNG_STATES.with(|s| {
            let mut s = s.borrow_mut();
            let id = s.keys().next_back().map_or(0, |k| k + 1);
            s.insert(id, torchlet_core::tensor::snapshot_rng());
            id
        });
        Ok(a.vm.ctx.new_int(id).into())
    }),
    ("_rng_restore", |a| {
        let id = a.int(0)? as u64;
        let state = RNG_STATES.with(|s| s.borrow().get(&id).cloned());
        let state = state.ok_or_else(|| a.vm.new_value_error("this RNG state was released"))?;
        torchlet_core::tensor::restore_rng(&state);
        super::none(a.vm)
    }),
    ("_rng_release", |a| {
        let id = a.int(0)? as u64;
        RNG_STATES.with(|s| s.borrow_mut().remove(&id));
        super::none(a.vm)
    }),
];

thread_local! {
    /// Generator states Python holds (`torch.random._RngState`), by id.
    static RNG_STATES: std::cell::RefCell<std::collections::BTreeMap<u64, torchlet_core::tensor::RngState>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// `_make(kind, shape, dtype, device, requires_grad)` for zeros, ones, empty, rand and randn.
fn make(a: &Args) -> PyResult {
    let kind = a.str(0)?;
    let shape = a.shape(1)?;
    let opts = options(a, 2)?;
    let maker = match kind.as_str() {
        "zeros" => Tensor::zeros,
        "ones" => Tensor::ones,
        "empty" => Tensor::empty,
        "rand" => Tensor::rand,
        "randn" => Tensor::randn,
        other => return Err(a.vm.new_value_error(format!("no factory {other}"))),
    };
    Ok(wrap(a.vm, maker(&shape, &opts).or_raise(a.vm)?))
}

/// The options at arguments `i..i+3`: dtype name or None, device string or None, requires_grad.
pub(crate) fn options(a: &Args, i: usize) -> PyResult<TensorOptions> {
    let mut opts = TensorOptions::default();
    if let Some(name) = a.opt_str(i)? {
        opts = opts.dtype(dtype_named(a, &name)?);
    }
    if let Some(device) = a.opt_str(i + 1)? {
        opts = opts.device(Device::parse(&device).or_raise(a.vm)?);
    }
    if a.len() > i + 2 && !a.is_none(i + 2) {
        opts = opts.requires_grad(a.bool(i + 2)?);
    }
    Ok(opts)
}

/// The dtype PyTorch calls `name` (`float32`, `int64`, …).
pub(crate) fn dtype_named(a: &Args, name: &str) -> PyResult<DType> {
    DType::parse(name).ok_or_else(|| a.vm.new_type_error(format!("torchlet has no dtype {name}")))
}
