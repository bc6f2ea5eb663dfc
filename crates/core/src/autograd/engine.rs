//! The backward pass: walk the graph from its roots, accumulate gradients into leaves' `.grad` (or capture them for `autograd.grad`).

use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use super::capture::Captures;
use super::graph::{self, Edge, Node};
use crate::tensor::{Result, Tensor, TensorError};

/// Message PyTorch gives when a released graph is used again.
const SECOND_BACKWARD: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// Something the pass runs once every gradient for it has arrived: a node's backward function,
/// or the accumulation of a leaf's gradient into its `.grad` (PyTorch's AccumulateGrad node).
#[derive(Clone)]
pub(super) enum Task {
    Node(Arc<Node>),
    Leaf(Tensor),
}

impl Task {
    pub(super) fn of(edge: &Edge) -> Task {
        match edge {
            Edge::Node(n) => Task::Node(n.clone()),
            Edge::Leaf(t) => Task::Leaf(t.clone()),
        }
    }

    pub(super) fn key(&self) -> *const () {
        match self {
            Task::Node(n) => Arc::as_ptr(n) as *const (),
            Task::Leaf(t) => t.identity(),
        }
    }

    /// PyTorch's ready-queue priority: AccumulateGrad first, then the latest-created node.
    fn priority(&self) -> u64 {
        match self {
            Task::Node(n) => n.seq,
            Task::Leaf(_) => u64::MAX,
        }
    }
}

/// A task in the ready queue; ties (several leaves) run in the order they became ready.
struct Ready {
    task: Task,
    order: std::cmp::Reverse<u64>,
}
impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.task.priority(), self.order).cmp(&(o.task.priority(), o.order))
    }
}

/// `root.backward()`: `root` must hold one element; leaves' `.grad` receive the gradients.
/// Saved tensors are freed as each node runs unless `retain_graph`.
pub fn backward(root: &Tensor, retain_graph: bool) -> Result<()> {
    backward_from(root, None, retain_graph)
}

/// `root.backward(gradient)`: the pass starts from `gradient` (of `root`'s shape) instead of
/// ones, which a non-scalar `root` needs; PyTorch uses the given tensor as it is.
pub fn backward_from(root: &Tensor, gradient: Option<&Tensor>, retain_graph: bool) -> Result<()> {
    backward_many(
        std::slice::from_ref(root),
        &[gradient.cloned()],
        retain_graph,
    )
}

/// `torch.autograd.backward(roots, gradients)`: one pass from every root at once, each starting
/// from its gradient (ones for a one-element root given none), as PyTorch's engine runs them.
pub fn backward_many(
    roots: &[Tensor],
    gradients: &[Option<Tensor>],
    retain_graph: bool,
) -> Result<()> {
    pass(roots, gradients, retain_graph, None).map(drop)
}

/// `torch.autograd.grad(roots, inputs, gradients)`: the gradients of the roots with respect to
/// `inputs`, from a pass that runs only what leads to them and leaves every `.grad` alone (Note
/// [a pass with inputs]); `None` for an input no gradient reached, when `allow_unused`.
pub fn grad(
    roots: &[Tensor],
    gradients: &[Option<Tensor>],
    inputs: &[Tensor],
    retain_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let captures = pass(roots, gradients, retain_graph, Some((inputs, false)))?;
    captures
        .expect("a pass with inputs captures")
        .finish(allow_unused)
}

/// `torch.autograd.backward(roots, gradients, inputs=…)`: a pass that accumulates into the
/// `.grad` of the leaves `inputs` only, running only what leads to them (Note [a pass with inputs]).
pub fn backward_to(
    roots: &[Tensor],
    gradients: &[Option<Tensor>],
    inputs: &[Tensor],
    retain_graph: bool,
) -> Result<()> {
    pass(roots, gradients, retain_graph, Some((inputs, true))).map(drop)
}

/// One pass from `roots`; with `inputs`, only what leads to them runs, and their gradients are
/// captured, or with the flag accumulated (Note [a pass with inputs]).
fn pass(
    roots: &[Tensor],
    gradients: &[Option<Tensor>],
    retain_graph: bool,
    inputs: Option<(&[Tensor], bool)>,
) -> Result<Option<Captures>> {
    if roots.len() != gradients.len() {
        return Err(TensorError::runtime(format!(
            "grad_tensors should have the same length as tensors: got {} and {}",
            gradients.len(),
            roots.len()
        )));
    }
    for (i, (root, gradient)) in roots.iter().zip(gradients).enumerate() {
        check_root(i, root, gradient.as_ref())?;
    }
    let starts: Vec<(Edge, usize)> = roots
        .iter()
        .map(|root| {
            let edge = graph::edge_of(root).expect("checked: every root requires grad");
            (edge, root.meta().output_nr)
        })
        .collect();
    let mut captures = match inputs {
        Some((inputs, accumulate)) => {
            let edges: Vec<&Edge> = starts.iter().map(|(e, _)| e).collect();
            Some(Captures::new(&edges, inputs, accumulate)?)
        }
        None => None,
    };
    let _mode = super::set_grad_enabled(false);
    // Backward formulas run in the dtypes the forward pass saved: a pass started inside an
    // autocast block does not cast again (PyTorch's backward kernels sit below autocast).
    let _autocast = crate::tensor::autocast::suspend();
    // PyTorch runs the pass on its engine's worker thread, whose cuBLAS handle is its own.
    let _handle =
        crate::device::blas_handle::enter(crate::device::blas_handle::BlasHandle::Autograd);
    // Python's `backward()` makes these gradients and holds them until the pass is over: they
    // are the first blocks the pass allocates and the last it frees, last to first as CPython
    // releases a tuple. A given gradient is used as it is.
    let mut grads = Vec::with_capacity(roots.len());
    for (root, gradient) in roots.iter().zip(gradients) {
        grads.push(match gradient {
            Some(g) => g.detach()?,
            None => root.ones_like()?,
        });
    }
    super::hooks::begin_pass();
    let starts = starts
        .into_iter()
        .zip(&grads)
        .map(|((edge, slot), g)| (edge, slot, g.clone()))
        .collect();
    let ran = run(starts, retain_graph, captures.as_mut());
    let result = super::hooks::end_pass(ran);
    while let Some(g) = grads.pop() {
        drop(g);
    }
    result.map(|()| captures)
}

/// PyTorch's checks of root `i` and its gradient, with its messages.
fn check_root(i: usize, root: &Tensor, gradient: Option<&Tensor>) -> Result<()> {
    if !root.requires_grad() {
        return Err(TensorError::runtime(format!(
            "element {i} of tensors does not require grad and does not have a grad_fn"
        )));
    }
    match gradient {
        None if root.numel() != 1 => Err(TensorError::runtime(
            "grad can be implicitly created only for scalar outputs",
        )),
        Some(g) if g.dims() != root.dims() => Err(TensorError::runtime(format!(
            "Mismatch in shape: grad_output[{i}] has a shape of torch.Size({:?}) and output[{i}] has a shape of torch.Size({:?}).",
            g.dims(),
            root.dims()
        ))),
        Some(g) if g.device() != root.device() || g.dtype() != root.dtype() => {
            Err(TensorError::runtime(format!(
                "invalid gradient at index {i} - expected {} on {} but got {} on {}",
                root.dtype().name(),
                root.device(),
                g.dtype().name(),
                g.device()
            )))
        }
        _ => Ok(()),
    }
}

/// Count, for every node and leaf reachable from the start edges, how many edges lead into it
/// (the start edges included, as PyTorch counts its GraphRoot's).
fn dependencies(starts: &[&Edge]) -> HashMap<*const (), usize> {
    let mut deps = HashMap::new();
    let mut stack = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut count = |edge: &Edge, stack: &mut Vec<Arc<Node>>| {
        *deps.entry(Task::of(edge).key()).or_insert(0) += 1;
        if let Edge::Node(next) = edge {
            if seen.insert(Arc::as_ptr(next)) {
                stack.push(next.clone());
            }
        }
    };
    for edge in starts {
        count(edge, &mut stack);
    }
    while let Some(n) = stack.pop() {
        for edge in n.next.iter().flatten() {
            count(edge, &mut stack);
        }
    }
    deps
}

/// Where a pass is: gradients waiting for the rest of their node's, and the nodes ready to run.
struct Pass {
    deps: HashMap<*const (), usize>,
    /// One slot per output of the node (one for a leaf), as PyTorch's InputBuffer.
    buffers: HashMap<*const (), Vec<Option<Tensor>>>,
    ready: BinaryHeap<Ready>,
    pushed: u64,
}

impl Pass {
    /// Add `g` into slot `slot` of the buffer of the edge's task, and queue the task once every
    /// gradient for it has come; a gradient added into another's stays alive in `spent`.
    fn feed(&mut self, edge: &Edge, slot: usize, g: Tensor, spent: &mut Vec<Tensor>) -> Result<()> {
        let next = Task::of(edge);
        let k = next.key();
        let slots = match edge {
            Edge::Node(n) => n.outputs,
            Edge::Leaf(_) => 1,
        };
        let buffer = self.buffers.entry(k).or_insert_with(|| vec![None; slots]);
        let slot = &mut buffer[slot];
        *slot = Some(match slot.take() {
            Some(old) => {
                let sum = accumulate_input(old, &g)?;
                spent.push(g);
                sum
            }
            None => g,
        });
        self.arrived(next)
    }

    /// One edge into `next` has been walked: queue it when it was the last.
    fn arrived(&mut self, next: Task) -> Result<()> {
        let d = self.deps.get_mut(&next.key()).expect("dependency counted");
        *d -= 1;
        if *d == 0 {
            self.ready.push(Ready {
                task: next,
                order: std::cmp::Reverse(self.pushed),
            });
            self.pushed += 1;
        }
        Ok(())
    }
}

/// Run the graph from its start edges, each with its gradient and the output slot it enters;
/// with `captures`, only what leads to them (Note [a pass with inputs]).
fn run(
    starts: Vec<(Edge, usize, Tensor)>,
    retain_graph: bool,
    mut captures: Option<&mut Captures>,
) -> Result<()> {
    let edges: Vec<&Edge> = starts.iter().map(|(e, _, _)| e).collect();
    let mut pass = Pass {
        deps: dependencies(&edges),
        buffers: HashMap::new(),
        ready: BinaryHeap::new(),
        pushed: 0,
    };
    let mut spent = Vec::new();
    for (edge, slot, g) in starts {
        pass.feed(&edge, slot, g, &mut spent)?;
    }
    drop(spent);
    while let Some(Ready { task, .. }) = pass.ready.pop() {
        crate::tensor::check_interrupt()?;
        let Some(grads) = pass.buffers.remove(&task.key()) else {
            continue;
        };
        if let Some(captures) = captures.as_deref_mut() {
            let hooks = |g| match &task {
                Task::Leaf(leaf) => super::hooks::apply(&leaf.leaf_hooks(), g),
                Task::Node(_) => Ok(g),
            };
            if !captures.take(task.key(), &grads, hooks)? {
                continue;
            }
        }
        let node = match task {
            Task::Leaf(leaf) => {
                if let Some(grad) = grads.into_iter().next().flatten() {
                    let grad = super::hooks::apply(&leaf.leaf_hooks(), grad)?;
                    accumulate(&leaf, grad)?;
                    leaf.run_post_accumulate_hooks()?;
                }
                continue;
            }
            Task::Node(node) => node,
        };
        let grads = run_pre_hooks(&node, grads)?;
        let mask: Vec<bool> = node
            .next
            .iter()
            .map(|e| match (e, captures.as_deref()) {
                (Some(e), Some(c)) => c.runs(e),
                (e, _) => e.is_some(),
            })
            .collect();
        let grads = call(&node, grads, &mask, retain_graph)?;
        // Gradients added into another's buffer stay alive until every output has moved on:
        // PyTorch's engine adds through a reference into the node's output list.
        let mut spent = Vec::new();
        for (i, (edge, g)) in node.next.iter().zip(grads).enumerate() {
            let Some(edge) = edge.as_ref().filter(|_| mask[i]) else {
                continue;
            };
            match g {
                Some(g) => pass.feed(edge, node.slots[i], g, &mut spent)?,
                None => pass.arrived(Task::of(edge))?,
            }
        }
        drop(spent);
    }
    Ok(())
}

/// The node's output hooks, each on its output's gradient (Note [hooks run where PyTorch runs
/// them]); outputs that got no gradient are left alone.
fn run_pre_hooks(node: &Node, mut grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    let hooks: Vec<_> = node.hooks.lock().expect("hook lock").clone();
    for (_, slot, hook) in hooks {
        if let Some(g) = grads.get_mut(slot).and_then(Option::take) {
            grads[slot] = Some(super::hooks::apply(&[hook], g)?);
        }
    }
    Ok(grads)
}

/// Run one node's backward function on its outputs' gradients: the gradients of its inputs.
fn call(
    node: &Node,
    grads: Vec<Option<Tensor>>,
    mask: &[bool],
    retain_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let mark = super::graph::unpacked_mark();
    let result = {
        let func = node.func.lock().expect("autograd node lock");
        let f = func
            .as_ref()
            .ok_or_else(|| TensorError::runtime(SECOND_BACKWARD))?;
        f(&grads, mask)
    };
    // This call's unpacked placeholders (also when it failed, so that nothing keeps them).
    let mut unpacked = super::graph::unpacked_since(mark);
    let mut out = result?;
    out.resize_with(node.next.len(), || None);
    // A formula that makes every gradient at once (attention's) may return some nobody asked
    // for: PyTorch's node keeps only the asked-for ones, and the rest go as its call returns,
    // first to last, before its saved tensors.
    for (slot, wanted) in out.iter_mut().zip(mask) {
        if !wanted {
            *slot = None;
        }
    }
    // Note [recomputed tensors go with the call]: a checkpoint's saved tensor is unpacked by
    // its hook into a local of the node's call, the recomputed tensor's only holder (the
    // checkpoint's frame hands it over once), so it goes as the call returns, last unpacked
    // first, before validate_outputs sums a broadcast gradient down (a bias's):
    // `py_checkpoint_reentrant`'s non-reentrant step frees the recomputed input of a Linear
    // before its bias gradient, and a LayerNorm's rstd, mean, then input.
    if !retain_graph && node.recomputed {
        *node.func.lock().expect("autograd node lock") = None;
    }
    while let Some(t) = unpacked.pop() {
        drop(t);
    }
    validate_outputs(node, &mut out)?;
    // PyTorch's order: the incoming gradient goes when the node's call returns, then the node
    // releases its saved tensors, then its outputs move on to the next nodes.
    drop(grads);
    if !retain_graph && node.saves {
        *node.func.lock().expect("autograd node lock") = None;
    }
    Ok(out)
}

/// Note [validate_outputs]: a broadcast input's gradient comes out of a backward formula in the
/// output's shape (`MulBackward0` multiplies, nothing more); PyTorch's engine then sums it down
/// to the input's shape and casts it to the input's dtype, input by input, once the node's whole
/// formula has run (`validate_outputs`), before the incoming gradient and the saved tensors go.
/// So `x * rsqrt(v)` with `v` of shape [B, T, 1] allocates both full products, then the sum.
fn validate_outputs(node: &Node, out: &mut [Option<Tensor>]) -> Result<()> {
    for (i, slot) in out.iter_mut().enumerate() {
        if node.next[i].is_none() {
            continue;
        }
        let Some(g) = slot.take() else { continue };
        let g = match node.input_shapes.get(i) {
            Some(shape) if g.dims() != shape.as_slice() => g.sum_to_size(shape)?,
            _ => g,
        };
        *slot = Some(match node.input_dtypes.get(i) {
            Some(&dtype) if g.dtype() != dtype => g.to_dtype(dtype)?,
            _ => g,
        });
    }
    Ok(())
}

/// Add a second gradient for the same input, as PyTorch's `InputBuffer::accumulate` does: into
/// `old` itself when nothing else holds its memory, else into a new tensor.
fn accumulate_input(old: Tensor, g: &Tensor) -> Result<Tensor> {
    // torch/csrc/autograd/input_buffer.cpp, `accumulate` and `can_accumulate_inplace`: with grad
    // mode off, `old.add_(new)` only when `old` is dense and non-overlapping and both its
    // TensorImpl and its Storage have a use count of one. A view made by a view op keeps its
    // base alive through its view info, so its storage always has a second holder: a view
    // never qualifies (cat's backward narrows, sum_to's `view`), while a result an op merely
    // re-shaped before returning it (repeat's backward `sum(dims)`) is no view and does.
    if old.is_uniquely_owned() && !old.is_view() && old.is_contiguous() && old.shape() == g.shape()
    {
        old.add_grad_in_place(g)?;
        Ok(old)
    } else {
        let sum = old.add(g)?;
        drop(old);
        Ok(sum)
    }
}

/// PyTorch's `obeys_layout_contract`: a dense leaf's gradient has the leaf's strides (dims of
/// size 1 aside), any other leaf's is contiguous.
fn obeys_layout(g: &Tensor, leaf: &Tensor) -> bool {
    if !crate::tensor::convert::is_dense(leaf) {
        return g.is_contiguous();
    }
    let (gs, ls) = (g.stride(), leaf.stride());
    (0..g.dim()).all(|d| g.dims()[d] == 1 || gs[d] == ls[d])
}

/// Add `g` into `leaf.grad`: take `g` itself when nothing else holds it (no copy), as PyTorch does.
fn accumulate(leaf: &Tensor, g: Tensor) -> Result<()> {
    let g = if g.shape() != leaf.shape() {
        g.sum_to_size(&leaf.shape())?
    } else {
        g
    };
    match leaf.grad() {
        Some(existing) => {
            existing.add_grad_in_place(&g)?;
        }
        None => {
            let owned = if g.is_uniquely_owned() && obeys_layout(&g, leaf) {
                g
            } else {
                g.copy_laid_out_as(leaf)?
            };
            leaf.set_grad_unchecked(Some(owned));
        }
    }
    Ok(())
}
