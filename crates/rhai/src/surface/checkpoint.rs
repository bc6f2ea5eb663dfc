//! `checkpoint(f, args…)`: activation checkpointing from a script, as PyTorch's
//! `torch.utils.checkpoint.checkpoint(f, *args, use_reentrant=False)`.
//!
//! The autograd layer keeps the placeholders (see [`torchlet_core::autograd::checkpoint`]); this layer
//! knows how to run `f` again. Backward needs the interpreter for that, so `backward()` lends its
//! call context to the recomputation for as long as it runs (see [`with_call_context`]), and the
//! function with its arguments waits in a per-thread table until the frame's graph is gone.
use std::any::TypeId;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use rhai::{Dynamic, Engine, EvalAltResult, FnPtr, Map, NativeCallContext};

use torchlet_core::autograd::checkpoint::Frame;
use torchlet_core::tensor::TensorError;

use super::documented::Documented;
use super::errors::{type_error, value_error};

type Res<T> = Result<T, Box<EvalAltResult>>;

/// The most arguments `checkpoint` passes on to the function.
const MAX_ARGS: usize = 8;

/// Options PyTorch's `checkpoint` takes, as a trailing map.
const OPTIONS: &[&str] = &["use_reentrant", "preserve_rng_state", "determinism_check"];

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The function and arguments of each live frame, by id.
    static CALLS: RefCell<HashMap<u64, (FnPtr, Vec<Dynamic>)>> = RefCell::new(HashMap::new());
    /// The call context of the `backward()` running on this thread, if any.
    static CONTEXT: Cell<Option<*const ()>> = const { Cell::new(None) };
}

/// Removes a frame's function and arguments from the table when the frame goes.
struct Registration(u64);

impl Drop for Registration {
    fn drop(&mut self) {
        let call = CALLS.with(|c| c.borrow_mut().remove(&self.0));
        drop(call);
    }
}

/// Run `f` with `ctx` lent to any recomputation it triggers (a `backward()`).
pub(crate) fn with_call_context<R>(ctx: &NativeCallContext, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<*const ()>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CONTEXT.with(|c| c.set(self.0));
        }
    }
    let outer = CONTEXT.with(|c| c.replace(Some(ctx as *const NativeCallContext as *const ())));
    let _restore = Restore(outer);
    f()
}

/// Call frame `id`'s function again through the lent context.
fn recompute(id: u64) -> torchlet_core::tensor::Result<()> {
    let call = CALLS.with(|c| c.borrow().get(&id).cloned());
    let (f, args) = call.ok_or_else(|| TensorError::runtime("checkpoint: the function is gone"))?;
    let Some(ctx) = CONTEXT.with(Cell::get) else {
        return Err(TensorError::runtime(
            "checkpoint: backward needs to run the checkpointed function again; call backward() from the script",
        ));
    };
    // SAFETY: the pointer was set by `with_call_context` on this thread from a live reference,
    // and is restored before that reference's call returns; the recomputation runs inside it.
    let ctx = unsafe { &*(ctx as *const NativeCallContext) };
    f.call_within_context::<Dynamic>(ctx, args)
        .map(drop)
        .map_err(|e| {
            TensorError::runtime(format!(
                "in the checkpointed function, run again by backward: {e}"
            ))
        })
}

/// `checkpoint(f, args…[, options])` from the raw arguments.
fn checkpoint_raw(ctx: NativeCallContext, args: &mut [&mut Dynamic]) -> Res<Dynamic> {
    let f = args[0].clone().try_cast::<FnPtr>().ok_or_else(|| {
        type_error("checkpoint(f, args…): f must be a function, e.g. Fn(\"block\") or |x| …")
    })?;
    checkpoint(&ctx, f, args[1..].iter().map(|a| (**a).clone()).collect())
}

/// Call `f(rest…)` in a new frame: its saves become placeholders that backward fills by calling
/// it again.
fn checkpoint(ctx: &NativeCallContext, f: FnPtr, mut rest: Vec<Dynamic>) -> Res<Dynamic> {
    if let Some(options) = rest
        .last()
        .and_then(|d| d.read_lock::<Map>().map(|m| m.clone()))
    {
        if options.keys().all(|k| OPTIONS.contains(&k.as_str())) {
            check_options(&options)?;
            rest.pop();
        }
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    CALLS.with(|c| c.borrow_mut().insert(id, (f.clone(), rest.clone())));
    let registration = Registration(id);
    let frame = Frame::new(Box::new(move || {
        let _keep = &registration;
        recompute(id)
    }));
    let _forward = frame.enter_forward();
    f.call_within_context(ctx, rest)
}

fn check_options(options: &Map) -> Res<()> {
    if let Some(v) = options.get("use_reentrant") {
        if v.as_bool()
            .map_err(|_| type_error("use_reentrant must be a bool"))?
        {
            return Err(value_error(
                "checkpoint: torchlet implements use_reentrant=false only (PyTorch's recommended mode); drop the option or pass #{use_reentrant: false}",
            ));
        }
    }
    Ok(())
}

/// Register `checkpoint` for one to [`MAX_ARGS`] arguments after the function.
pub(crate) fn register(engine: &mut Engine) {
    engine.register_doc(
        "checkpoint",
        &["checkpoint(f, args…[, #{use_reentrant: false}]) — f(args…) without keeping its activations: backward runs f again to remake them (torch.utils.checkpoint)"],
        |ctx: NativeCallContext, f: FnPtr| checkpoint(&ctx, f, Vec::new()),
    );
    for arity in 2..=MAX_ARGS + 2 {
        engine.register_raw_fn(
            "checkpoint",
            vec![TypeId::of::<Dynamic>(); arity],
            checkpoint_raw,
        );
    }
}
