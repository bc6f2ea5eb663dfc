//! The shared vocabulary at the bottom of the crate: element types, Python numbers, strided layouts,
//! element access at raw addresses, and the error every layer raises.
//!
//! Map: `dtype` (`DType`, promotion), `dtype_names` (every name a dtype goes by), `scalar` (`Scalar`), `layout` (`Layout`, broadcasting,
//! contiguous strides), `element` (load/store one element of any dtype), `error` (`TensorError`).
//! This module imports nothing from the crate; `alloc`, `device`, `tensor` and everything above
//! speak in its types, so a kernel never needs the tensor layer to name what it computes on.

pub mod dtype;
pub mod dtype_names;
pub mod element;
pub mod error;
pub mod layout;
pub mod scalar;

pub use dtype::{Category, DType};
pub use dtype_names::DTypeNames;
pub use error::{ErrorKind, Result, TensorError};
pub use layout::{broadcast_shapes, contiguous_strides, Layout, OffsetIter};
pub use scalar::Scalar;
