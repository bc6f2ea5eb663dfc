//! Tensors and autograd on every device: ops, shapes, indexing, dtypes, attention, autocast, norms, optimizers, printing, activations, the meta device.
#[path = "../common/mod.rs"]
mod common;

mod activations;
mod arg_extremes;
mod attention;
mod autocast;
mod autograd;
mod conv;
mod conv3d;
mod elementwise_more;
mod fold_scatter;
mod hooks;
mod index_ops;
mod mask_select;
mod meta;
mod model_ops;
mod norms;
mod ops;
mod optim;
mod printing;
mod reduce_scratch;
mod shape_ops;
mod sorting;
mod spread;
