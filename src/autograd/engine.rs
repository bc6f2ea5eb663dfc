//! The backward pass: walk the graph from a scalar, accumulate gradients into leaves' `.grad`.

use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use super::graph::{Edge, Node};
use crate::tensor::{Result, Tensor, TensorError};

/// Message PyTorch gives when a released graph is used again.
const SECOND_BACKWARD: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// A node ready to run, ordered by creation (latest first).
struct Ready(Arc<Node>);
impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.0.seq == o.0.seq
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
        self.0.seq.cmp(&o.0.seq)
    }
}

fn key(n: &Arc<Node>) -> *const Node {
    Arc::as_ptr(n)
}

/// `root.backward()`: `root` must hold one element; leaves' `.grad` receive the gradients.
/// Saved tensors are freed as each node runs unless `retain_graph`.
pub fn backward(root: &Tensor, retain_graph: bool) -> Result<()> {
    if !root.requires_grad() {
        return Err(TensorError::runtime(
            "element 0 of tensors does not require grad and does not have a grad_fn",
        ));
    }
    if root.numel() != 1 {
        return Err(TensorError::runtime(
            "grad can be implicitly created only for scalar outputs",
        ));
    }
    let _mode = super::set_grad_enabled(false);
    // PyTorch runs the pass on its engine's worker thread, whose cuBLAS handle is its own.
    let _handle = crate::device::blas_handle::enter(crate::device::blas_handle::BlasHandle::Autograd);
    // Python's `backward()` makes this gradient and holds it until the pass is over: it is the
    // first block the pass allocates and the last it frees.
    let grad = root.ones_like()?;
    let result = match root.grad_fn() {
        None => accumulate(root, grad.clone()),
        Some(node) => run(node, grad.clone(), retain_graph),
    };
    drop(grad);
    result
}

/// Count, for every node reachable from `root`, how many edges lead into it.
fn dependencies(root: &Arc<Node>) -> HashMap<*const Node, usize> {
    let mut deps = HashMap::new();
    let mut stack = vec![root.clone()];
    let mut seen = std::collections::HashSet::new();
    seen.insert(key(root));
    while let Some(n) = stack.pop() {
        for edge in n.next.iter().flatten() {
            if let Edge::Node(next) = edge {
                *deps.entry(key(next)).or_insert(0) += 1;
                if seen.insert(key(next)) {
                    stack.push(next.clone());
                }
            }
        }
    }
    deps
}

fn run(root: Arc<Node>, grad: Tensor, retain_graph: bool) -> Result<()> {
    let mut deps = dependencies(&root);
    let mut buffers: HashMap<*const Node, Tensor> = HashMap::new();
    buffers.insert(key(&root), grad);
    let mut ready = BinaryHeap::new();
    ready.push(Ready(root));
    while let Some(Ready(node)) = ready.pop() {
        crate::tensor::check_interrupt()?;
        let Some(grad) = buffers.remove(&key(&node)) else {
            continue;
        };
        let mask: Vec<bool> = node.next.iter().map(Option::is_some).collect();
        let grads = {
            let func = node.func.lock().expect("autograd node lock");
            let f = func
                .as_ref()
                .ok_or_else(|| TensorError::runtime(SECOND_BACKWARD))?;
            f(&grad, &mask)?
        };
        // PyTorch's order: the incoming gradient goes when the node's call returns, then the node
        // releases its saved tensors, then its outputs move on to the next nodes.
        drop(grad);
        if !retain_graph && node.saves {
            *node.func.lock().expect("autograd node lock") = None;
        }
        let mut grads: Vec<Option<Tensor>> = grads;
        for (i, edge) in node.next.iter().enumerate() {
            let g = grads.get_mut(i).and_then(Option::take);
            let Some(edge) = edge else { continue };
            let g = match g {
                Some(g) if g.dtype() != node.input_dtypes[i] => {
                    Some(g.to_dtype(node.input_dtypes[i])?)
                }
                g => g,
            };
            match edge {
                Edge::Leaf(leaf) => {
                    if let Some(g) = g {
                        accumulate(leaf, g)?;
                    }
                }
                Edge::Node(next) => {
                    let k = key(next);
                    if let Some(g) = g {
                        let merged = match buffers.remove(&k) {
                            Some(old) => old.add(&g)?,
                            None => g,
                        };
                        buffers.insert(k, merged);
                    }
                    let d = deps.get_mut(&k).expect("dependency counted");
                    *d -= 1;
                    if *d == 0 {
                        ready.push(Ready(next.clone()));
                    }
                }
            }
        }
    }
    Ok(())
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
            let owned = if g.is_uniquely_owned() && g.is_contiguous() {
                g
            } else {
                g.contiguous_copy()?
            };
            leaf.set_grad_unchecked(Some(owned));
        }
    }
    Ok(())
}
