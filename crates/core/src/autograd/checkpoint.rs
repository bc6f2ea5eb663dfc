//! Activation checkpointing: an op's saved tensors are left out of the forward and made again,
//! by running the forward once more, when backward first needs one.
//!
//! This is PyTorch's non-reentrant `torch.utils.checkpoint.checkpoint` (`use_reentrant=False`):
//! while the checkpointed function runs, every tensor an op saves for backward is replaced by a
//! placeholder that holds nothing (the intermediate results are freed as soon as nothing else
//! holds them); the first time backward unpacks a placeholder, the function runs again with grad
//! enabled, and each tensor its ops save is kept, in order, for the placeholder of the same
//! position. A placeholder hands its tensor over once; the node that unpacked it frees it when it
//! releases its saved tensors, so the recomputed activations live only as long as backward needs
//! them, as in PyTorch.
//!
//! Note [checkpoint early stop]: as PyTorch's default (`set_checkpoint_early_stop(True)`), the
//! recomputation stops as soon as it has saved as many tensors as the first forward did: the op
//! that saved the last one fails with a stop error right after saving it, which unwinds the
//! function (its result and the function's locals are freed at once) and which the frame takes
//! as success. The rest of the function is never run again. PyTorch saves an op's inputs before
//! its kernel runs (and its outputs after): when the last save is an input, the op's result is
//! never made. torchlet's ops save after computing, but for the matrix products (`mm_named`),
//! which save first: a block's last op is usually its final projection.
//!
//! How to run the function again is the caller's business (the script layer calls back into the
//! interpreter): a frame only knows a closure that does it.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use crate::tensor::{Result, Tensor, TensorError};

/// Runs the checkpointed function again; the tensors it saves are collected by the frame.
pub type Recompute = Box<dyn Fn() -> Result<()> + Send + Sync>;

/// What a frame's forward saved: how many placeholders, and their tensors once recomputed.
#[derive(Default)]
struct Slots {
    /// Placeholders handed out during the first forward.
    packed: usize,
    /// After the recomputation: one entry per placeholder, taken when unpacked.
    recomputed: Option<Vec<Option<Tensor>>>,
    /// The recomputation stopped early, having remade every placeholder.
    stopped: bool,
}

/// The error that stops a recomputation early (Note [checkpoint early stop]).
const STOP: &str =
    "torch.utils.checkpoint: the recomputation has remade every saved tensor and stops here";

/// One call of a checkpointed function: the placeholders its forward made and how to fill them.
pub struct Frame {
    recompute: Recompute,
    slots: Mutex<Slots>,
}

/// What saving a tensor does on this thread now.
#[derive(Clone)]
enum Phase {
    /// The checkpointed forward: save nothing, hand out a placeholder.
    Forward(Arc<Frame>),
    /// The recomputation: save normally, and keep the tensor for its placeholder.
    Recompute(Arc<Frame>),
}

thread_local! {
    static PHASE: RefCell<Vec<Phase>> = const { RefCell::new(Vec::new()) };
}

/// Ends a phase when dropped (also when the function fails).
#[must_use = "the phase ends when the guard is dropped"]
pub struct PhaseGuard(());

impl Drop for PhaseGuard {
    fn drop(&mut self) {
        PHASE.with(|p| p.borrow_mut().pop());
    }
}

impl Frame {
    /// A frame whose recomputation runs `recompute`.
    pub fn new(recompute: Recompute) -> Arc<Frame> {
        Arc::new(Frame {
            recompute,
            slots: Mutex::new(Slots::default()),
        })
    }

    /// Run the checkpointed forward until the guard drops: saves become placeholders.
    pub fn enter_forward(self: &Arc<Frame>) -> PhaseGuard {
        PHASE.with(|p| p.borrow_mut().push(Phase::Forward(self.clone())));
        PhaseGuard(())
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().expect("checkpoint frame lock")
    }

    /// The tensor of placeholder `index`, recomputing the forward the first time one is asked for.
    fn unpack(self: &Arc<Frame>, index: usize) -> Result<Tensor> {
        if self.slots().recomputed.is_none() {
            self.run_again()?;
        }
        let mut slots = self.slots();
        let recomputed = slots.recomputed.as_mut().expect("recomputed above");
        recomputed.get_mut(index).and_then(Option::take).ok_or_else(|| {
            TensorError::runtime(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please open an issue with details on your use case.",
            )
        })
    }

    fn run_again(self: &Arc<Frame>) -> Result<()> {
        self.slots().recomputed = Some(Vec::new());
        let outcome = {
            let _grad = super::enable_grad();
            PHASE.with(|p| p.borrow_mut().push(Phase::Recompute(self.clone())));
            let _phase = PhaseGuard(());
            (self.recompute)()
        };
        let mut slots = self.slots();
        let made = slots.recomputed.as_ref().map_or(0, Vec::len);
        let stopped = std::mem::take(&mut slots.stopped);
        if let (Err(e), false) = (outcome, stopped) {
            slots.recomputed = None;
            return Err(e);
        }
        if made < slots.packed {
            slots.recomputed = None;
            return Err(TensorError::runtime(format!(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and recomputation.\nNumber of tensors saved during forward: {}\nNumber of tensors saved during recomputation: {made}",
                slots.packed
            )));
        }
        Ok(())
    }
}

/// A tensor an op wants saved, as the current phase keeps it.
pub(crate) enum Kept {
    /// Save it as usual (no checkpoint, or the recomputation).
    Saved,
    /// Save nothing: this placeholder of this frame stands for it.
    Placeholder(Arc<Frame>, usize),
}

/// Decide how `t` is saved now; in the recomputation, the frame keeps a handle to it, and the
/// last one the first forward saved stops the recomputation (Note [checkpoint early stop]).
pub(crate) fn keep(t: &Tensor) -> Result<Kept> {
    let phase = PHASE.with(|p| p.borrow().last().cloned());
    match phase {
        None => Ok(Kept::Saved),
        Some(Phase::Forward(frame)) => {
            let index = {
                let mut slots = frame.slots();
                slots.packed += 1;
                slots.packed - 1
            };
            Ok(Kept::Placeholder(frame, index))
        }
        Some(Phase::Recompute(frame)) => {
            let mut slots = frame.slots();
            let packed = slots.packed;
            let Some(list) = slots.recomputed.as_mut() else {
                return Ok(Kept::Saved);
            };
            list.push(Some(t.data_handle()));
            if list.len() == packed {
                slots.stopped = true;
                return Err(TensorError::runtime(STOP));
            }
            Ok(Kept::Saved)
        }
    }
}

/// The tensor behind a placeholder (see [`Frame`]).
pub(crate) fn unpack(frame: &Arc<Frame>, index: usize) -> Result<Tensor> {
    frame.unpack(index)
}
