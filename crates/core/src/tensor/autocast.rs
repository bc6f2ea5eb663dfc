//! Automatic mixed precision (`torch.autocast`): per-device state, PyTorch's cast policies, its cast cache.
//!
//! PyTorch puts autocast in the dispatcher, ahead of autograd: an op on a list casts its inputs
//! (recorded in the graph as `ToCopyBackward0`) and then runs with autocast excluded, so the ops
//! it calls inside are not cast again. torchlet does the same at the top of each listed op
//! ([`cast_inputs`]); the [`Suspended`] guard it returns is the exclusion.
//!
//! The cache is PyTorch's heuristic: a float32 leaf that requires grad (a weight) cast to the
//! low-precision dtype is cast once for the whole outermost block, and the casts are dropped when
//! it exits. Entries hold the source weakly, as PyTorch's `weak_intrusive_ptr` does, so deleting a
//! weight inside the block still frees its memory.

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use super::handle::TensorImpl;
use super::{DType, Result, Tensor, TensorError};
use crate::device::Device;

/// How an op on PyTorch's autocast lists treats its floating-point inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `lower_precision_fp` (matmul, mm, linear, addmm, bmm …): cast to the autocast dtype.
    Lower,
    /// `fp32` (pow, exp, log, mse_loss, nll_loss, layer_norm …): cast to float32.
    Fp32,
    /// `fp32_set_opt_dtype` (softmax, log_softmax, sum …): produce float32 unless a dtype is given.
    Fp32Output,
    /// `promote` (dot, addcmul …): cast to the widest floating input type.
    Promote,
}

/// PyTorch's lists (aten/src/ATen/autocast_mode.cpp) for the ops torchlet has or is about to have
/// (an op calls [`cast_inputs`] or [`fp32_output`] with its name): the op, its policy under CUDA
/// autocast, its policy under CPU autocast. An op on no list runs in its inputs' dtype.
/// `cross_entropy_loss` is on the CPU list only: under CUDA autocast its `log_softmax` keeps the
/// logits' dtype and only `nll_loss` casts up.
const LISTS: &[(&str, Option<Policy>, Option<Policy>)] = &[
    ("matmul", Some(Policy::Lower), Some(Policy::Lower)),
    ("mm", Some(Policy::Lower), Some(Policy::Lower)),
    ("bmm", Some(Policy::Lower), Some(Policy::Lower)),
    ("addmm", Some(Policy::Lower), Some(Policy::Lower)),
    ("baddbmm", Some(Policy::Lower), Some(Policy::Lower)),
    ("linear", Some(Policy::Lower), Some(Policy::Lower)),
    ("conv2d", Some(Policy::Lower), Some(Policy::Lower)),
    ("conv3d", Some(Policy::Lower), Some(Policy::Lower)),
    ("conv_transpose2d", Some(Policy::Lower), Some(Policy::Lower)),
    ("conv_transpose3d", Some(Policy::Lower), Some(Policy::Lower)),
    (
        "scaled_dot_product_attention",
        Some(Policy::Lower),
        Some(Policy::Lower),
    ),
    ("exp", Some(Policy::Fp32), None),
    ("log", Some(Policy::Fp32), None),
    ("log1p", Some(Policy::Fp32), None),
    ("expm1", Some(Policy::Fp32), None),
    ("reciprocal", Some(Policy::Fp32), None),
    ("rsqrt", Some(Policy::Fp32), None),
    ("softplus", Some(Policy::Fp32), None),
    ("pow", Some(Policy::Fp32), None),
    ("layer_norm", Some(Policy::Fp32), None),
    ("mse_loss", Some(Policy::Fp32), Some(Policy::Fp32)),
    ("nll_loss", Some(Policy::Fp32), Some(Policy::Fp32)),
    ("cross_entropy_loss", None, Some(Policy::Fp32)),
    ("softmax", Some(Policy::Fp32Output), None),
    ("log_softmax", Some(Policy::Fp32Output), None),
    ("sum", Some(Policy::Fp32Output), None),
    ("dot", Some(Policy::Promote), None),
];

/// The policy of `op` under `device_type`'s autocast, if it is on a list.
pub fn policy(op: &str, device_type: DeviceType) -> Option<Policy> {
    let (_, cuda, cpu) = LISTS.iter().find(|(name, ..)| *name == op)?;
    match device_type {
        DeviceType::Cuda => *cuda,
        DeviceType::Cpu => *cpu,
    }
}

/// Which device type's autocast a block switches (PyTorch keeps one state per device type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceType {
    /// `torch.autocast("cuda")`: CUDA tensors; float16 by default.
    Cuda,
    /// `torch.autocast("cpu")`: CPU tensors; bfloat16 by default.
    Cpu,
}

impl DeviceType {
    /// The device type named `"cuda"` or `"cpu"` (PyTorch's `device_type` argument).
    pub fn parse(name: &str) -> Result<DeviceType> {
        match name {
            "cuda" => Ok(DeviceType::Cuda),
            "cpu" => Ok(DeviceType::Cpu),
            other => Err(TensorError::runtime(format!(
                "User specified an unsupported autocast device_type '{other}': torchlet's autocast supports \"cuda\" and \"cpu\""
            ))),
        }
    }

    fn of(device: Device) -> DeviceType {
        if device.is_cuda() {
            DeviceType::Cuda
        } else {
            DeviceType::Cpu
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One entry of the cast cache: the source weight (held weakly) and its low-precision cast.
struct Cached {
    source: Weak<TensorImpl>,
    cast: Tensor,
}

struct State {
    enabled: [bool; 2],
    dtype: [DType; 2],
    cache_enabled: bool,
    nesting: usize,
    /// Nonzero while a listed op runs (PyTorch's `ExcludeDispatchKeyGuard`) or backward runs.
    suspended: usize,
    /// In insertion order: clearing drops the casts in the order they were made.
    cache: Vec<Cached>,
}

thread_local! {
    static STATE: RefCell<State> = const {
        RefCell::new(State {
            enabled: [false, false],
            // PyTorch's initial autocast dtypes: float16 for CUDA, bfloat16 for the CPU.
            dtype: [DType::F16, DType::BF16],
            cache_enabled: true,
            nesting: 0,
            suspended: 0,
            cache: Vec::new(),
        })
    };
}

/// Whether autocast is on for `device_type` on this thread (`torch.is_autocast_enabled`).
pub fn is_autocast_enabled(device_type: DeviceType) -> bool {
    STATE.with(|s| s.borrow().enabled[device_type.index()])
}

/// The low-precision dtype autocast uses for `device_type` (`torch.get_autocast_dtype`).
pub fn autocast_dtype(device_type: DeviceType) -> DType {
    STATE.with(|s| s.borrow().dtype[device_type.index()])
}

/// The dtype check PyTorch makes when a block is entered; torchlet refuses instead of warning.
fn check_dtype(device_type: DeviceType, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::F16 | DType::BF16) {
        return Ok(());
    }
    let (name, list) = match device_type {
        DeviceType::Cuda => ("CUDA", "torch.float16, torch.bfloat16"),
        DeviceType::Cpu => ("CPU", "torch.bfloat16, torch.float16"),
    };
    Err(TensorError::runtime(format!(
        "In {name} autocast, but the target dtype torch.{} is not supported: {name} Autocast only supports dtypes of {list} currently (\"float16\" or \"bfloat16\")",
        dtype.name()
    )))
}

/// Restores the autocast state of its device type when dropped; the outermost one clears the cache.
#[must_use = "autocast ends when the guard is dropped"]
pub struct AutocastGuard {
    device_type: DeviceType,
    enabled: bool,
    dtype: DType,
    cache_enabled: bool,
    suspended: usize,
}

/// Enter `torch.autocast(device_type, dtype, enabled, cache_enabled)` until the guard drops.
pub fn autocast(
    device_type: DeviceType,
    dtype: DType,
    enabled: bool,
    cache_enabled: bool,
) -> Result<AutocastGuard> {
    if enabled {
        check_dtype(device_type, dtype)?;
    }
    let i = device_type.index();
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let guard = AutocastGuard {
            device_type,
            enabled: s.enabled[i],
            dtype: s.dtype[i],
            cache_enabled: s.cache_enabled,
            suspended: s.suspended,
        };
        s.enabled[i] = enabled;
        s.dtype[i] = dtype;
        s.nesting += 1;
        s.cache_enabled = cache_enabled;
        // Note [a block inside backward casts]: backward runs with autocast off, but a block
        // entered there (reentrant checkpoint's recomputation, in PyTorch's autocast state of the
        // forward) casts again, with a cache of its own that its exit drops.
        s.suspended = 0;
        Ok(guard)
    })
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        // As `torch.autocast.__exit__`: leaving the outermost block drops the cache first, then the
        // previous state comes back.
        let dropped = STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.nesting = s.nesting.saturating_sub(1);
            let i = self.device_type.index();
            s.enabled[i] = self.enabled;
            s.dtype[i] = self.dtype;
            s.cache_enabled = self.cache_enabled;
            s.suspended = self.suspended;
            if s.nesting == 0 {
                std::mem::take(&mut s.cache)
            } else {
                Vec::new()
            }
        });
        // Dropped outside the borrow (freeing a cast may run code that reads the state), first
        // cast first.
        drop(dropped);
    }
}

/// Keeps autocast off on this thread until dropped (inside a listed op, and during backward).
#[must_use = "autocast resumes when the guard is dropped"]
pub struct Suspended(());

/// Turn autocast off until the guard drops.
pub fn suspend() -> Suspended {
    STATE.with(|s| s.borrow_mut().suspended += 1);
    Suspended(())
}

impl Drop for Suspended {
    fn drop(&mut self) {
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.suspended = s.suspended.saturating_sub(1);
        });
    }
}

/// The low-precision dtype if autocast applies to an op whose first tensor is on `device`.
fn active(device: Device) -> Option<(DeviceType, DType)> {
    let device_type = DeviceType::of(device);
    STATE.with(|s| {
        let s = s.borrow();
        let i = device_type.index();
        (s.enabled[i] && s.suspended == 0).then_some((device_type, s.dtype[i]))
    })
}

/// PyTorch's `is_eligible`: a floating tensor (not float64) of the device type autocast is for.
fn eligible(t: &Tensor, device_type: DeviceType) -> bool {
    DeviceType::of(t.device()) == device_type && t.dtype().is_float() && t.dtype() != DType::F64
}

/// PyTorch's `promote_type`: float32 if any eligible input is float32, else the low dtype.
fn promote_type(inputs: &[&Tensor], device_type: DeviceType, low: DType) -> DType {
    let wide = inputs
        .iter()
        .any(|t| eligible(t, device_type) && t.dtype() == DType::F32);
    if wide {
        DType::F32
    } else {
        low
    }
}

/// For `op` when autocast applies to it (on, not inside another op, and `op` on the list of the
/// first input's device type): its inputs cast as its policy says, and a guard that keeps autocast
/// off while the op runs. Inputs are cast last to first, the order in which C++ evaluates the
/// arguments of PyTorch's wrapper, and so the order of the casts' allocations.
pub(crate) fn cast_inputs(
    op: &str,
    inputs: &[&Tensor],
) -> Result<Option<(Vec<Tensor>, Suspended)>> {
    let Some(first) = inputs.first() else {
        return Ok(None);
    };
    let Some((device_type, low)) = active(first.device()) else {
        return Ok(None);
    };
    let to = match policy(op, device_type) {
        Some(Policy::Lower) => low,
        Some(Policy::Fp32) => DType::F32,
        Some(Policy::Promote) => promote_type(inputs, device_type, low),
        Some(Policy::Fp32Output) | None => return Ok(None),
    };
    let off = suspend();
    let mut cast = Vec::with_capacity(inputs.len());
    for t in inputs.iter().rev() {
        cast.push(cached_cast(t, to, device_type, low)?);
    }
    cast.reverse();
    Ok(Some((cast, off)))
}

/// PyTorch's `fp32_set_opt_dtype` for `op` (softmax, log_softmax, sum): float32, the dtype the op
/// should produce when autocast applies and `input` is eligible, with the guard that keeps
/// autocast off while it runs; `None` otherwise (the op then runs as it would outside).
pub(crate) fn fp32_output(op: &str, input: &Tensor) -> Option<(DType, Suspended)> {
    let (device_type, _) = active(input.device())?;
    let listed = policy(op, device_type) == Some(Policy::Fp32Output);
    (listed && eligible(input, device_type)).then(|| (DType::F32, suspend()))
}

/// PyTorch's `cached_cast`: `t` in dtype `to`, from the cache when `t` is a float32 weight.
fn cached_cast(t: &Tensor, to: DType, device_type: DeviceType, low: DType) -> Result<Tensor> {
    if !eligible(t, device_type) || t.dtype() == to {
        return Ok(t.clone());
    }
    let cacheable = to == low
        && t.dtype() == DType::F32
        && t.requires_grad()
        && t.is_leaf()
        && STATE.with(|s| s.borrow().cache_enabled);
    if !cacheable {
        return t.to_dtype(to);
    }
    let key = Arc::as_ptr(&t.inner);
    let hit = STATE.with(|s| {
        s.borrow()
            .cache
            .iter()
            .find(|c| c.source.as_ptr() == key && c.cast.dtype() == to)
            .map(|c| c.cast.clone())
    });
    if let Some(cast) = hit {
        return Ok(cast);
    }
    let cast = t.to_dtype(to)?;
    STATE.with(|s| {
        s.borrow_mut().cache.push(Cached {
            source: Arc::downgrade(&t.inner),
            cast: cast.clone(),
        })
    });
    Ok(cast)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_nest_restore_and_clear_at_the_outermost_exit() {
        assert!(!is_autocast_enabled(DeviceType::Cuda));
        {
            let _a = autocast(DeviceType::Cuda, DType::BF16, true, true).unwrap();
            assert_eq!(autocast_dtype(DeviceType::Cuda), DType::BF16);
            {
                let _b = autocast(DeviceType::Cuda, DType::F16, false, true).unwrap();
                assert!(!is_autocast_enabled(DeviceType::Cuda));
            }
            assert!(is_autocast_enabled(DeviceType::Cuda));
            assert!(!is_autocast_enabled(DeviceType::Cpu));
        }
        assert!(!is_autocast_enabled(DeviceType::Cuda));
        assert_eq!(autocast_dtype(DeviceType::Cuda), DType::F16);
    }

    #[test]
    fn only_low_precision_dtypes_are_accepted() {
        let e = autocast(DeviceType::Cuda, DType::F32, true, true)
            .err()
            .unwrap();
        assert!(e.to_string().contains("bfloat16"), "{e}");
        // A disabled block does not care which dtype it names.
        let _off = autocast(DeviceType::Cuda, DType::F32, false, true).unwrap();
    }
}
