//! Backward hooks: gradient hooks on tensors, nodes whose backward is the caller's, and callbacks
//! that run when a backward pass is over.
//!
//! Note [hooks run where PyTorch runs them]: a hook on a tensor made by an op is a pre-hook of the
//! node that made it, for that output: it runs when the node is taken from the ready queue, before
//! its backward function, and may replace the gradient (PyTorch's `call_tensor_pre_hooks`). A hook
//! on a leaf runs before the gradient is accumulated into `.grad`. Callbacks queued during a pass
//! run once the graph is done and before the pass lets go of its starting gradient, as the
//! engine's final callbacks do (FSDP2 finishes its last gradients in one).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::graph::{record_multi, MultiGradFn};
use crate::tensor::{Result, Tensor, TensorError};

/// A gradient hook: sees the gradient and may return one to use instead.
pub type GradHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A hook run on a leaf once its gradient has been accumulated into `.grad`.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// A callback queued during a backward pass, run at its end.
pub type FinalCallback = Box<dyn FnOnce() -> Result<()>>;

/// The backward function of a node made by [`record_custom`]: the gradients of its outputs
/// (`None` where one got none), one gradient per input back.
pub type CustomBackward = Box<MultiGradFn>;

static NEXT_HOOK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// One list per backward pass running on this thread (innermost last).
    static FINAL_CALLBACKS: RefCell<Vec<Vec<FinalCallback>>> = const { RefCell::new(Vec::new()) };
}

impl Tensor {
    /// `t.register_hook(hook)`: the hook's id, for [`Tensor::remove_hook`].
    pub fn register_hook(&self, hook: GradHook) -> Result<u64> {
        if !self.requires_grad() {
            return Err(TensorError::runtime(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
        let mut meta = self.meta();
        match &meta.grad_fn {
            Some(node) => {
                let slot = meta.output_nr;
                node.hooks.lock().expect("hook lock").push((id, slot, hook));
            }
            None => meta.hooks.push((id, hook)),
        }
        Ok(id)
    }

    /// Remove the hook `id` registered on this tensor (nothing if it is gone already).
    pub fn remove_hook(&self, id: u64) {
        let removed = {
            let mut meta = self.meta();
            match &meta.grad_fn {
                Some(node) => {
                    let mut hooks = node.hooks.lock().expect("hook lock");
                    let kept = hooks
                        .iter()
                        .position(|h| h.0 == id)
                        .map(|i| hooks.remove(i));
                    kept.map(|h| h.2)
                }
                None => {
                    let i = meta.hooks.iter().position(|h| h.0 == id);
                    i.map(|i| meta.hooks.remove(i).1)
                }
            }
        };
        // The hook (and what it holds) goes after the locks are released.
        drop(removed);
    }

    /// The hooks of a leaf, in registration order.
    pub(crate) fn leaf_hooks(&self) -> Vec<GradHook> {
        self.meta().hooks.iter().map(|h| h.1.clone()).collect()
    }

    /// `t.register_post_accumulate_grad_hook(hook)`: `hook(t)` runs each time backward has
    /// accumulated a gradient into this leaf's `.grad` (DDP's Reducer hooks there). Its id is for
    /// [`Tensor::remove_post_accumulate_grad_hook`].
    pub fn register_post_accumulate_grad_hook(&self, hook: PostAccumulateHook) -> Result<u64> {
        if !self.requires_grad() {
            return Err(TensorError::runtime(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let mut meta = self.meta();
        if meta.grad_fn.is_some() {
            return Err(TensorError::runtime(
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
            ));
        }
        let id = NEXT_HOOK.fetch_add(1, Ordering::Relaxed);
        meta.post_accumulate_hooks.push((id, hook));
        Ok(id)
    }

    /// Remove the post-accumulate hook `id` (nothing if it is gone already).
    pub fn remove_post_accumulate_grad_hook(&self, id: u64) {
        let removed = {
            let mut meta = self.meta();
            let i = meta.post_accumulate_hooks.iter().position(|h| h.0 == id);
            i.map(|i| meta.post_accumulate_hooks.remove(i))
        };
        drop(removed);
    }

    /// Run this leaf's post-accumulate hooks, in registration order.
    pub(crate) fn run_post_accumulate_hooks(&self) -> Result<()> {
        let hooks: Vec<PostAccumulateHook> = self
            .meta()
            .post_accumulate_hooks
            .iter()
            .map(|h| h.1.clone())
            .collect();
        hooks.iter().try_for_each(|hook| hook(self))
    }
}

/// Run `hooks` on `grad` in order, each on what the one before returned.
pub(crate) fn apply(hooks: &[GradHook], mut grad: Tensor) -> Result<Tensor> {
    for hook in hooks {
        if let Some(replaced) = hook(&grad)? {
            grad = replaced;
        }
    }
    Ok(grad)
}

/// Make `outputs` the outputs of one node named `name` over `inputs`, whose backward is
/// `backward` (`torch.autograd.Function.apply`). An output that is one of the inputs becomes a
/// view of it first, as PyTorch makes it. The node's backward is released after the pass, with
/// what it holds (its context and saved tensors), unless the graph is retained.
pub fn record_custom(
    name: &'static str,
    inputs: &[Tensor],
    outputs: &[Tensor],
    backward: CustomBackward,
) -> Result<Vec<Tensor>> {
    let outs: Vec<Tensor> = outputs
        .iter()
        .map(|o| {
            if inputs.iter().any(|i| i.same_tensor(o)) {
                o.data_handle()
            } else {
                o.clone()
            }
        })
        .collect();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    record_multi(&outs, name, &refs, true, backward);
    Ok(outs)
}

/// `Variable._execution_engine.queue_callback(cb)`: run `cb` when the current pass is over.
pub fn queue_callback(cb: FinalCallback) -> Result<()> {
    FINAL_CALLBACKS.with(|c| match c.borrow_mut().last_mut() {
        Some(pass) => {
            pass.push(cb);
            Ok(())
        }
        None => Err(TensorError::runtime(
            "Final callbacks can only be installed during backward pass.",
        )),
    })
}

/// Open a pass's callback list; [`run_final_callbacks`] closes it.
pub(crate) fn begin_pass() {
    FINAL_CALLBACKS.with(|c| c.borrow_mut().push(Vec::new()));
}

/// Close the current pass's callback list: when the graph ran (`ran` is Ok), its callbacks run
/// first, also those they queue; after a failure they are dropped unrun.
pub(crate) fn end_pass(ran: Result<()>) -> Result<()> {
    let mut result = ran;
    loop {
        let next = FINAL_CALLBACKS.with(|c| {
            let mut c = c.borrow_mut();
            let pass = c.last_mut()?;
            (!pass.is_empty()).then(|| pass.remove(0))
        });
        let Some(cb) = next else { break };
        if result.is_ok() {
            result = cb();
        }
    }
    FINAL_CALLBACKS.with(|c| c.borrow_mut().pop());
    result
}
