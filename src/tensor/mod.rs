//! Tensors: the `Tensor` handle, shapes and views, dtypes, op dispatch, PyTorch-style printing.

pub mod collective;
mod compare;
mod convert;
mod creation;
pub mod dtype;
pub mod element;
mod error;
mod grad;
mod handle;
mod inplace;
mod interrupt;
pub mod layout;
mod linalg;
mod loss;
mod math;
mod print;
mod random;
mod reduce;
mod scalar;
mod views;

pub use dtype::{Category, DType};
pub use error::{ErrorKind, Result, TensorError};
pub use handle::{Tensor, TensorOptions};
pub use interrupt::{check_interrupt, set_interrupt_flag};
pub use layout::{broadcast_shapes, Layout, OffsetIter};
pub use random::manual_seed;
pub use scalar::Scalar;
