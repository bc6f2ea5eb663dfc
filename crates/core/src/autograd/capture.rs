//! What a pass with inputs asks (`autograd.grad`, `backward(inputs=…)`): the inputs' gradients, captured or accumulated, and only the nodes that lead there run.
//!
//! Note [a pass with inputs]: PyTorch's engine (`GraphTask::init_to_execute`) marks a node
//! *needed* when one of its next edges leads to a needed node or to a captured one, and gives
//! each input a *capture*: a leaf's is its AccumulateGrad (which then never runs, so no `.grad`
//! changes), a non-leaf's is the slot of its `grad_fn` that its gradient enters. A node runs only
//! if needed, computes only the gradients of edges that lead somewhere that runs or captures
//! (`task_should_compute_output`), and hands nothing to the others; a captured node that is not
//! needed is skipped once its gradient is taken. The captured gradients live until the pass is
//! over and are returned, in the order of the inputs. `backward(inputs=…)` marks the inputs'
//! AccumulateGrad needed instead, so only their `.grad` changes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::engine::Task;
use super::graph::{self, Edge, Node};
use crate::tensor::{Result, Tensor, TensorError};

/// The key of an edge's task, as the engine keys its buffers.
fn key_of(edge: &Edge) -> *const () {
    Task::of(edge).key()
}

/// The captures of one pass and which tasks run (Note [a pass with inputs]).
pub(super) struct Captures {
    /// For each task that captures: (the slot of its gradient buffer, the input's position).
    at: HashMap<*const (), Vec<(usize, usize)>>,
    needed: HashSet<*const ()>,
    /// The gradient each input got, `None` until (unless) one arrives.
    pub(super) values: Vec<Option<Tensor>>,
}

impl Captures {
    /// The captures of `inputs`, and the nodes on a path from the start edges to one of them.
    /// With `accumulate` (`backward(inputs=…)`), the inputs are leaves whose AccumulateGrad runs
    /// instead of being captured.
    pub(super) fn new(starts: &[&Edge], inputs: &[Tensor], accumulate: bool) -> Result<Captures> {
        let mut at: HashMap<*const (), Vec<(usize, usize)>> = HashMap::new();
        let mut needed = HashSet::new();
        for (i, input) in inputs.iter().enumerate() {
            let edge = graph::edge_of(input).ok_or_else(|| {
                TensorError::runtime("One of the differentiated Tensors does not require grad")
            })?;
            match (&edge, accumulate) {
                (_, false) => at
                    .entry(key_of(&edge))
                    .or_default()
                    .push((input.meta().output_nr, i)),
                (Edge::Leaf(_), true) => {
                    needed.insert(key_of(&edge));
                }
                (Edge::Node(_), true) => {
                    return Err(TensorError::not_implemented(
                        "torchlet: backward(inputs=…) with a tensor that is not a leaf is not supported yet; \
                         pass leaves (parameters), or take a non-leaf's gradient with torch.autograd.grad",
                    ))
                }
            }
        }
        let mut captures = Captures {
            at,
            needed,
            values: vec![None; if accumulate { 0 } else { inputs.len() }],
        };
        for node in post_order(starts) {
            let leads = node.next.iter().flatten().any(|e| captures.runs(e));
            if leads {
                captures.needed.insert(Task::Node(node).key());
            }
        }
        Ok(captures)
    }

    /// Whether the task of `edge` gets its gradients: it runs or it captures.
    pub(super) fn runs(&self, edge: &Edge) -> bool {
        let key = key_of(edge);
        self.needed.contains(&key) || self.at.contains_key(&key)
    }

    /// Take what the task `key` captures from its gradients; whether the task then runs.
    pub(super) fn take(
        &mut self,
        key: *const (),
        grads: &[Option<Tensor>],
        hooks: impl Fn(Tensor) -> Result<Tensor>,
    ) -> Result<bool> {
        for &(slot, i) in self.at.get(&key).into_iter().flatten() {
            if let Some(g) = grads.get(slot).cloned().flatten() {
                self.values[i] = Some(hooks(g)?);
            }
        }
        Ok(self.needed.contains(&key))
    }

    /// The captured gradients, in the inputs' order; an input no gradient reached is an error
    /// unless `allow_unused`.
    pub(super) fn finish(self, allow_unused: bool) -> Result<Vec<Option<Tensor>>> {
        if !allow_unused && self.values.iter().any(Option::is_none) {
            return Err(TensorError::runtime(
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.",
            ));
        }
        Ok(self.values)
    }
}

/// Every node reachable from `starts`, each after all the nodes its next edges lead to.
fn post_order(starts: &[&Edge]) -> Vec<Arc<Node>> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(Arc<Node>, bool)> = Vec::new();
    for edge in starts {
        if let Edge::Node(n) = edge {
            stack.push((n.clone(), false));
        }
    }
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !seen.insert(Arc::as_ptr(&node)) {
            continue;
        }
        stack.push((node.clone(), true));
        for edge in node.next.iter().flatten() {
            if let Edge::Node(next) = edge {
                if !seen.contains(&Arc::as_ptr(next)) {
                    stack.push((next.clone(), false));
                }
            }
        }
    }
    order
}
