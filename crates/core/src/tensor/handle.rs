//! The `Tensor` handle: shared storage plus a strided view, a dtype and autograd state.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::autograd::Node;
use crate::device::{self, Backend, Device, Operand, Storage};
use torchlet_alloc::DevicePtr;

use super::{DType, Layout, Result};

/// How a new tensor is made: dtype, device, and whether it requires grad.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorOptions {
    /// Element type (default float32).
    pub dtype: DType,
    /// Device (default cpu).
    pub device: Device,
    /// Whether the new leaf requires grad.
    pub requires_grad: bool,
}

impl Default for TensorOptions {
    fn default() -> Self {
        TensorOptions {
            dtype: DType::F32,
            device: Device::Cpu,
            requires_grad: false,
        }
    }
}

impl TensorOptions {
    /// Options with this dtype.
    pub fn dtype(mut self, dtype: DType) -> Self {
        self.dtype = dtype;
        self
    }
    /// Options with this device.
    pub fn device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }
    /// Options with this requires_grad.
    pub fn requires_grad(mut self, requires_grad: bool) -> Self {
        self.requires_grad = requires_grad;
        self
    }
}

/// Autograd state of one tensor.
#[derive(Default)]
///
/// Fields drop in declaration order, and the order is PyTorch's: a tensor's graph goes before its
/// gradient, and both before its own memory (`TensorImpl` keeps `meta` ahead of `storage`), so
/// dropping the last handle to a loss frees the graph's saved tensors first and the loss last.
pub(crate) struct AutogradMeta {
    pub requires_grad: bool,
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    pub grad: Option<Tensor>,
    /// A leaf's gradient hooks: (hook id, hook), in registration order.
    pub hooks: Vec<(u64, crate::autograd::hooks::GradHook)>,
    /// A leaf's hooks run after its gradient is accumulated.
    pub post_accumulate_hooks: Vec<(u64, crate::autograd::hooks::PostAccumulateHook)>,
}

pub(crate) struct TensorImpl {
    pub meta: Mutex<AutogradMeta>,
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub dtype: DType,
    pub inference: bool,
    /// Made by a view op from another tensor, which PyTorch keeps alive as the view's `_base`:
    /// its memory is then never held by this tensor alone.
    pub view: bool,
}

/// A cheap handle to a tensor; clones are the same tensor (as Python references are).
#[derive(Clone)]
pub struct Tensor {
    pub(crate) inner: Arc<TensorImpl>,
}

impl Tensor {
    /// A tensor over `storage` with this layout and no autograd history.
    pub(crate) fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Tensor {
        Self::new_impl(storage, layout, dtype, false)
    }

    fn new_impl(storage: Arc<Storage>, layout: Layout, dtype: DType, view: bool) -> Tensor {
        Tensor {
            inner: Arc::new(TensorImpl {
                storage,
                layout,
                dtype,
                meta: Mutex::new(AutogradMeta::default()),
                inference: crate::autograd::is_inference_mode(),
                view,
            }),
        }
    }

    /// A new contiguous, uninitialised tensor on `device` (allocates exactly its bytes).
    pub(crate) fn empty_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        super::check_interrupt()?;
        let backend = device::backend(device)?;
        Self::empty_with(backend, shape, dtype)
    }

    /// A new contiguous, uninitialised tensor on `backend`.
    pub(crate) fn empty_with(
        backend: Arc<dyn Backend>,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Tensor> {
        super::layout::check_shape(shape, dtype.size())?;
        let bytes = shape.iter().product::<usize>() * dtype.size();
        let storage = Arc::new(Storage::new(backend, bytes)?);
        Ok(Self::from_parts(storage, Layout::contiguous(shape), dtype))
    }

    /// Whether the tensor's memory holds its values (not under `torchlet fit`, which has none).
    pub fn has_values(&self) -> bool {
        self.inner.storage.has_values()
    }

    /// A new uninitialised tensor like `self`'s shape on `self`'s device.
    pub(crate) fn empty_same(&self, shape: &[usize], dtype: DType) -> Result<Tensor> {
        super::check_interrupt()?;
        Self::empty_with(self.backend().clone(), shape, dtype)
    }

    /// Another view of the same storage (no autograd history).
    pub(crate) fn view_as_layout(&self, layout: Layout) -> Tensor {
        Self::new_impl(self.inner.storage.clone(), layout, self.inner.dtype, true)
    }

    /// The same storage with another layout, a view only when `self` is one: an op's own
    /// re-shaping of the result it just allocated, which PyTorch never hands out as a view.
    pub(crate) fn relayout_result(&self, layout: Layout) -> Tensor {
        Self::new_impl(
            self.inner.storage.clone(),
            layout,
            self.inner.dtype,
            self.inner.view,
        )
    }

    /// Whether a view op made this tensor (PyTorch's `._base` is set).
    pub(crate) fn is_view(&self) -> bool {
        self.inner.view
    }

    /// The same data without autograd state (what autograd saves, and `detach`).
    pub(crate) fn data_handle(&self) -> Tensor {
        self.view_as_layout(self.inner.layout.clone())
    }

    /// The kernel operand for this view.
    pub(crate) fn operand(&self) -> Operand<'_> {
        Operand {
            ptr: self.inner.storage.ptr(),
            dtype: self.inner.dtype,
            layout: &self.inner.layout,
        }
    }

    /// The kernel operand for this tensor seen through another layout (e.g. broadcast).
    pub(crate) fn operand_with<'a>(&self, layout: &'a Layout) -> Operand<'a> {
        Operand {
            ptr: self.inner.storage.ptr(),
            dtype: self.inner.dtype,
            layout,
        }
    }

    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        self.inner.storage.backend()
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    pub(crate) fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.inner.meta.lock().expect("tensor autograd state lock")
    }

    pub(crate) fn storage_version(&self) -> u64 {
        self.inner.storage.version()
    }

    pub(crate) fn bump_version(&self) {
        self.inner.storage.bump_version()
    }

    /// Whether no other handle or view holds this tensor's memory (so autograd may keep it as `.grad`).
    /// The same address for every handle of this tensor (not for views of it).
    pub(crate) fn identity(&self) -> *const () {
        Arc::as_ptr(&self.inner) as *const ()
    }

    /// Whether no other handle or view holds this tensor's memory (so autograd may keep it as `.grad`).
    pub(crate) fn is_uniquely_owned(&self) -> bool {
        Arc::strong_count(&self.inner) == 1 && Arc::strong_count(&self.inner.storage) == 1
    }

    /// PyTorch's legacy type name, e.g. "torch.cuda.FloatTensor".
    pub fn type_name(&self) -> String {
        let base = self.dtype().names().legacy_tensor;
        if self.device().is_cuda() {
            format!("torch.cuda.{base}")
        } else {
            format!("torch.{base}")
        }
    }

    // ---- inspecting ----

    /// Size of each dimension.
    pub fn shape(&self) -> Vec<usize> {
        self.inner.layout.shape.clone()
    }
    /// Size of each dimension, borrowed.
    pub fn dims(&self) -> &[usize] {
        &self.inner.layout.shape
    }
    /// Strides in elements.
    pub fn stride(&self) -> Vec<usize> {
        self.inner.layout.strides.clone()
    }
    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.inner.layout.ndim()
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.inner.layout.numel()
    }
    /// Element type.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }
    /// Where the tensor lives.
    pub fn device(&self) -> Device {
        self.inner.storage.device()
    }
    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.inner.dtype.size()
    }
    /// `numel() * element_size()`.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.element_size()
    }
    /// Address of the first element.
    pub fn data_ptr(&self) -> DevicePtr {
        let s = &self.inner.storage;
        if s.bytes() == 0 {
            return 0;
        }
        s.ptr() + (self.inner.layout.offset * self.element_size()) as u64
    }
    /// The memory under this view, shared by every view of it.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.inner.storage
    }
    /// Identifies the storage: views of one tensor give the same number.
    pub fn storage_id(&self) -> usize {
        self.inner.storage.id()
    }
    /// Bytes of the storage under this view (what it keeps allocated).
    pub fn storage_nbytes(&self) -> usize {
        self.inner.storage.bytes()
    }
    /// `untyped_storage().resize_(bytes)`: free the memory under every view of this storage
    /// (`bytes` 0) or allocate it again (Note [resizable storage]).
    pub fn resize_storage(&self, bytes: usize) -> Result<()> {
        self.inner.storage.resize(bytes)
    }
    /// Address of the storage's first byte (where its allocator block starts; 0 when empty).
    pub fn storage_ptr(&self) -> DevicePtr {
        self.inner.storage.ptr()
    }
    /// Element offset of this view into its storage.
    pub fn storage_offset(&self) -> usize {
        self.inner.layout.offset
    }
    /// Whether the elements are dense in row-major order.
    pub fn is_contiguous(&self) -> bool {
        self.inner.layout.is_contiguous()
    }
    /// Whether the tensor lives on a CUDA device.
    pub fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }
    /// Whether the tensor was made inside `inference_mode`.
    pub fn is_inference(&self) -> bool {
        self.inner.inference
    }
    /// Whether two handles are the same tensor.
    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
