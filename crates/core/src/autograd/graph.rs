//! Graph nodes: a backward function per op, the edges to its inputs' nodes, and saved tensors.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::device::Storage;

use crate::tensor::{DType, Result, Tensor, TensorError};

/// A backward function: from the output's gradient and which inputs need one, each input's gradient.
pub(crate) type GradFn = dyn Fn(&Tensor, &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// A backward function of a node with several outputs (`split`, `chunk`): one gradient per
/// output, `None` where that output got none, as PyTorch hands undefined tensors to the formula.
pub type MultiGradFn =
    dyn Fn(&[Option<Tensor>], &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Where an input's gradient goes.
pub enum Edge {
    /// Into the node that produced the input.
    Node(Arc<Node>),
    /// Into the `.grad` of a leaf tensor (PyTorch's AccumulateGrad).
    Leaf(Tensor),
}

/// One recorded op.
///
/// Fields drop in declaration order: the saved tensors (in `func`) before the edges to earlier
/// nodes, as PyTorch destroys a node's saved variables before its `next_edges_`.
pub struct Node {
    /// `None` once released after backward (its saved tensors freed).
    pub(crate) func: Mutex<Option<Box<MultiGradFn>>>,
    name: &'static str,
    /// One entry per input; `None` where the input needs no gradient.
    pub(crate) next: Vec<Option<Edge>>,
    /// For each input, which output of its node it is (its gradient's slot there).
    pub(crate) slots: Vec<usize>,
    /// How many outputs the op made (1 except for `split`/`chunk`).
    pub(crate) outputs: usize,
    /// The dtype each input's gradient must have.
    pub(crate) input_dtypes: Vec<DType>,
    /// The shape each input's gradient must have (a broadcast one is summed down to it).
    pub(crate) input_shapes: Vec<Vec<usize>>,
    /// Whether `func` holds saved tensors (only then is it released after backward).
    pub(crate) saves: bool,
    /// Whether `func` holds checkpoint placeholders, whose recomputed tensors go as soon as the
    /// formula has run (Note [recomputed tensors go with the call]).
    pub(crate) recomputed: bool,
    /// Creation order: backward runs later nodes first, as PyTorch does.
    pub(crate) seq: u64,
    /// The memory of the tensors `func` saved, for telling who holds a block (weak: `func`
    /// owns them).
    saved: Vec<Weak<Storage>>,
    /// Gradient hooks of this node's outputs: (hook id, output slot, hook), in registration
    /// order (Note [hooks run where PyTorch runs them]).
    pub(crate) hooks: Mutex<Vec<(u64, usize, super::hooks::GradHook)>>,
}

impl Node {
    /// The node's class name, e.g. "MulBackward0".
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The storages this node's saved tensors keep alive (none once released after backward).
    pub fn saved_storages(&self) -> Vec<Arc<Storage>> {
        let released = self.func.lock().map(|f| f.is_none()).unwrap_or(true);
        if released {
            return Vec::new();
        }
        self.saved.iter().filter_map(Weak::upgrade).collect()
    }

    /// The nodes and leaves this node's gradient flows into.
    pub fn inputs(&self) -> impl Iterator<Item = &Edge> {
        self.next.iter().flatten()
    }
}

thread_local! {
    /// Storages saved by the op being recorded on this thread, claimed by its node in `record`.
    static PENDING_SAVES: RefCell<Vec<Weak<Storage>>> = const { RefCell::new(Vec::new()) };
    /// Placeholders (Note [checkpoint early stop]) saved by the op being recorded.
    static PENDING_PLACEHOLDERS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Placeholders unpacked by the backward calls running on this thread, in unpacking order
    /// (Note [recomputed tensors go with the call]).
    static UNPACKED: RefCell<Vec<Arc<OnceLock<Tensor>>>> = const { RefCell::new(Vec::new()) };
}

/// How many placeholders this thread has unpacked so far: a backward call's mark.
pub(crate) fn unpacked_mark() -> usize {
    UNPACKED.with(|u| u.borrow().len())
}

/// The placeholders unpacked since `mark`, which the caller frees last unpacked first.
pub(crate) fn unpacked_since(mark: usize) -> Vec<Arc<OnceLock<Tensor>>> {
    UNPACKED.with(|u| {
        let mut u = u.borrow_mut();
        let at = mark.min(u.len());
        u.split_off(at)
    })
}

/// Forget saves no node claimed (an op that failed after saving): called between inputs.
pub fn forget_unclaimed_saves() {
    PENDING_SAVES.with(|p| p.borrow_mut().clear());
    PENDING_PLACEHOLDERS.with(|p| p.set(0));
}

/// A tensor kept for backward: shares the memory, records the version to detect in-place writes.
/// Inside a checkpointed function it is a placeholder instead, filled when backward needs it.
#[derive(Clone)]
pub struct SavedTensor {
    kept: Kept,
    version: u64,
}

#[derive(Clone)]
enum Kept {
    Data(Tensor),
    Placeholder {
        frame: Arc<super::checkpoint::Frame>,
        index: usize,
        unpacked: Arc<OnceLock<Tensor>>,
    },
}

impl SavedTensor {
    /// Save `t` (its data only, so saving an op's own output makes no reference cycle).
    pub fn new(t: &Tensor) -> Result<SavedTensor> {
        if t.is_inference() && !super::is_inference_mode() {
            return Err(TensorError::runtime(
                "Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.",
            ));
        }
        let kept = match super::checkpoint::keep(t)? {
            super::checkpoint::Kept::Saved => {
                t.inner.storage.set_role(torchlet_alloc::Role::Saved);
                PENDING_SAVES.with(|p| p.borrow_mut().push(Arc::downgrade(&t.inner.storage)));
                Kept::Data(t.data_handle())
            }
            super::checkpoint::Kept::Placeholder(frame, index) => {
                PENDING_PLACEHOLDERS.with(|p| p.set(p.get() + 1));
                Kept::Placeholder {
                    frame,
                    index,
                    unpacked: Arc::new(OnceLock::new()),
                }
            }
        };
        Ok(SavedTensor {
            kept,
            version: t.storage_version(),
        })
    }

    /// Save `t` only when `needed`: a binary op keeps one input for the other input's gradient,
    /// so when that one needs none the memory is not held (as PyTorch's `SavedVariable`s).
    pub fn new_if(needed: bool, t: &Tensor) -> Result<Option<SavedTensor>> {
        if needed {
            Ok(Some(SavedTensor::new(t)?))
        } else {
            Ok(None)
        }
    }

    /// The saved tensor, or the error PyTorch raises when it was modified in place since.
    pub fn get(&self) -> Result<&Tensor> {
        let data = match &self.kept {
            Kept::Data(data) => data,
            // A recomputed tensor is new: no in-place write can have touched it.
            Kept::Placeholder {
                frame,
                index,
                unpacked,
            } => {
                if unpacked.get().is_none() {
                    let t = super::checkpoint::unpack(frame, *index)?;
                    let _ = unpacked.set(t);
                    UNPACKED.with(|u| u.borrow_mut().push(unpacked.clone()));
                }
                return Ok(unpacked.get().expect("set above"));
            }
        };
        let now = data.storage_version();
        if now != self.version {
            return Err(TensorError::runtime(format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {:?}] is at version {now}; expected version {} instead.",
                data.type_name(),
                data.shape(),
                self.version
            )));
        }
        Ok(data)
    }
}

/// Whether an op on `inputs` must be recorded now.
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    super::is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// Which output of its node `t` is (0 for leaves and single-output ops).
fn slot_of(t: &Tensor) -> usize {
    t.meta().output_nr
}

/// The edge an input contributes to a new node.
pub(crate) fn edge_of(t: &Tensor) -> Option<Edge> {
    if !t.requires_grad() {
        return None;
    }
    Some(match t.grad_fn() {
        Some(node) => Edge::Node(node),
        None => Edge::Leaf(t.clone()),
    })
}

/// Build a node named `name` over `inputs` and make `out` its output (caller checked `needs_grad`).
pub(crate) fn record(
    out: &Tensor,
    name: &'static str,
    inputs: &[&Tensor],
    saves: bool,
    func: Box<GradFn>,
) {
    let single: Box<MultiGradFn> = Box::new(move |grads, mask| match &grads[0] {
        Some(g) => func(g, mask),
        None => Ok(Vec::new()),
    });
    let node = new_node(name, inputs, saves, single, 1);
    out.set_history(node, 0);
}

/// Build one node for an op with several outputs (`outs[i]` is output `i`).
pub(crate) fn record_multi(
    outs: &[Tensor],
    name: &'static str,
    inputs: &[&Tensor],
    saves: bool,
    func: Box<MultiGradFn>,
) {
    let node = new_node(name, inputs, saves, func, outs.len());
    for (i, out) in outs.iter().enumerate() {
        out.set_history(node.clone(), i);
    }
}

fn new_node(
    name: &'static str,
    inputs: &[&Tensor],
    saves: bool,
    func: Box<MultiGradFn>,
    outputs: usize,
) -> Arc<Node> {
    Arc::new(Node {
        name,
        next: inputs.iter().map(|t| edge_of(t)).collect(),
        slots: inputs.iter().map(|t| slot_of(t)).collect(),
        outputs,
        input_dtypes: inputs.iter().map(|t| t.dtype()).collect(),
        input_shapes: inputs.iter().map(|t| t.dims().to_vec()).collect(),
        func: Mutex::new(Some(func)),
        saves,
        recomputed: PENDING_PLACEHOLDERS.with(|p| p.replace(0)) > 0,
        seq: SEQUENCE.fetch_add(1, Ordering::Relaxed),
        saved: PENDING_SAVES.with(|p| std::mem::take(&mut *p.borrow_mut())),
        hooks: Mutex::new(Vec::new()),
    })
}
