//! Tensors: the `Tensor` handle, shapes and views, dtypes, op dispatch, PyTorch-style printing.
//!
//! Map: `handle` is the `Tensor` (a storage, a `types::Layout`, autograd metadata); `creation`,
//! `random` and `convert` make tensors and read them back; `activations` (leaky_relu, elu,
//! softplus, mish, hardswish) and rounding; `elementwise_more` (maximum/minimum, `%` and `//`,
//! clamp_min/max, lerp, addcmul); `math` (elementwise, with PyTorch's
//! type promotion and each op's backward; `iter_layout` lays its outputs out as TensorIterator
//! does), `compare`, `reduce`, `linalg` (2-D products) and
//! `batched` (`matmul` of 3 or more dims, `linear`/`addmm` with a bias), `loss` (mse, cross-entropy)
//! and `loss_pointwise` (the elementwise losses with a reduction), `nn`
//! (`layer_norm`, `dropout`), `rms_norm`, `group_norm`, `pad` (constant padding), `upsample`
//! (nearest and bilinear `interpolate`), `vector_norm` (the norms of gradient clipping),
//! `amp_scale` (GradScaler's unscale and scale update), `conv` (conv1d/2d/3d, with cuDNN's workspaces from `conv_workspace`, whose recorded cases
//! are `conv_workspace_table` and `conv_workspace_table_3d`), `conv_transpose` (conv_transpose1d/2d/3d),
//! `pool` (max/avg/adaptive pooling, batch norm; `memory_format` for channels-last), `attention` (`scaled_dot_product_attention`: the backend choice, the
//! bool mask; `attention_fused` the cuDNN, flash and memory-efficient buffers, `attention_math`
//! the composite), `shape_ops` (cat, stack, split/chunk, repeat) and `index_ops`
//! (where, masked_fill, triu/tril, index_select, gather, embedding; `scatter`) compute through the
//! device backend and record autograd nodes; `sorting` (sort, argsort, topk), `scan` (cumsum,
//! flip), `moments` (var, std and their `_mean` forms), `logsumexp` (PyTorch's composite),
//! `mask_select` (nonzero, `x[mask]`, masked_select), `masked_scatter`, `fold` (unfold/fold:
//! im2col and col2im), `index_rows` (`x[idx]`; both add their
//! gradient up with `index_put_sorted`) and `multinomial` order, count, sum and draw
//! on the host, with PyTorch's device memory; `collective` checks and runs `all_reduce`, `broadcast`
//! and `all_gather` over one tensor per device; `unary_list` and `binary_list` declare each
//! elementwise method of one and of two operands once (methods, backward, the script's entry and
//! help) and list the rest for the script; `reduce_list` declares each reduction once (its
//! `ReduceOp`, fold, dtype rule, kernel, method, backward from `reduce_grad`, help); `views` and
//! `inplace` share storage; `update` holds the optimizers' in-place updates (no autograd, no
//! allocation); `grad` is the autograd surface of a tensor; `print` is PyTorch's repr; `autocast`
//! is mixed precision (which listed op casts its inputs to which dtype, and the cast cache);
//! `interrupt` is the per-thread stop flag ops check before they start. The tensor layer decides
//! every allocation (the backend only fills memory it is handed), which is what keeps memory
//! events PyTorch's.

mod activations;
pub mod amp_scale;
pub mod attention;
mod attention_fused;
mod attention_math;
pub mod autocast;
mod batched;
mod binary_list;
pub mod collective;
mod compare;
pub mod conv;
pub mod conv_transpose;
pub mod conv_workspace;
mod conv_workspace_table;
mod conv_workspace_table_3d;
pub(crate) mod convert;
mod creation;
mod elementwise_more;
pub mod fold;
mod grad;
mod group_norm;
mod handle;
mod index_ops;
mod index_put_sorted;
mod index_rows;
mod inplace;
mod interrupt;
mod iter_layout;
mod linalg;
mod logsumexp;
mod loss;
mod loss_pointwise;
mod mask_select;
mod masked_scatter;
mod math;
mod memory_format;
mod moments;
mod multinomial;
mod nn;
mod pad;
pub mod pool;
mod print;
mod random;
mod reduce;
mod reduce_grad;
mod reduce_list;
mod rms_norm;
mod scan;
mod scatter;
mod shape_ops;
mod sorting;
mod unary_list;
mod update;
pub mod upsample;
pub mod vector_norm;
mod views;

pub use binary_list::{BinaryKind, BinaryMethod, NumberFn, TensorsFn, BINARY_METHODS};
pub use handle::{Tensor, TensorOptions};
pub use interrupt::{check_interrupt, set_interrupt_flag};
pub use loss_pointwise::Reduction;
pub use moments::Moments;
pub use random::{manual_seed, restore as restore_rng, snapshot as snapshot_rng, RngState};
pub use reduce_list::{ReduceMethod, ReduceOp, REDUCE_METHODS};
pub use torchlet_alloc::types::{broadcast_shapes, Layout, OffsetIter};
pub use torchlet_alloc::types::{dtype, element, layout};
pub use torchlet_alloc::types::{Category, DType, ErrorKind, Result, Scalar, TensorError};
pub use unary_list::{UnaryMethod, UNARY_METHODS};
