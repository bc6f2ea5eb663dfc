"""torch.Tensor: PyTorch's tensor methods and operators, with PyTorch's signatures, over torch._C."""

import sys
import weakref

import torch

_C = sys.modules["torch._C"]


def _shape_of(size):
    """A shape from a factory's or a view's *size: (2, 3), ((2, 3),), (torch.Size([2, 3]),)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    shape = []
    for d in size:
        if isinstance(d, Tensor):
            d = d.item()
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"a size must be a tuple of ints, not one holding {type(d).__name__}")
        shape.append(d)
    return tuple(shape)


def _moment_args(dim, unbiased, keepdim, correction):
    """(dims, correction, keepdim) of std/var/std_mean/var_mean as PyTorch reads them: `x.std(False)`
    is `unbiased=False`; `correction` wins over `unbiased`."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased else 0
    dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return dims, float(correction), keepdim


def _dims(dim, name):
    """One reduction dim, from an int or a one-element tuple (several at once are not supported)."""
    if isinstance(dim, (tuple, list)):
        if len(dim) != 1:
            raise NotImplementedError(
                f"torchlet: {name}() over several dims at once is not supported yet; "
                f"reduce one dim at a time"
            )
        return dim[0]
    return dim



# How many backward passes have run: DDP rebuilds its buckets at the first forward after one.
_BACKWARD_PASSES = [0]

class _Node:
    """A tensor's grad_fn: prints as PyTorch's does, <MulBackward0 object at 0x…>."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"


class Tensor(_C.TensorBase):
    """A multi-dimensional array on the CPU or a (real or simulated) CUDA GPU."""

    __hash__ = object.__hash__

    # What a tensor is.
    @property
    def shape(self):
        return torch.Size(_C._shape(self))

    def size(self, dim=None):
        shape = _C._shape(self)
        return torch.Size(shape) if dim is None else shape[dim]

    def dim(self):
        return len(_C._shape(self))

    ndimension = dim

    @property
    def ndim(self):
        return self.dim()

    def numel(self):
        return _C._numel(self)

    nelement = numel

    @property
    def dtype(self):
        return torch._DTYPES[_C._dtype(self)]

    @property
    def device(self):
        return torch.device(_C._device(self))

    @property
    def is_cuda(self):
        return _C._device(self).startswith("cuda")

    @property
    def is_cpu(self):
        return _C._device(self) == "cpu"

    @property
    def is_meta(self):
        return _C._device(self) == "meta"

    @property
    def requires_grad(self):
        return _C._requires_grad(self)

    @requires_grad.setter
    def requires_grad(self, value):
        _C._set_requires_grad(self, value)

    @property
    def grad(self):
        return _C._grad(self)

    @grad.setter
    def grad(self, value):
        _C._set_grad(self, value)

    @grad.deleter
    def grad(self):
        _C._set_grad(self, None)

    @property
    def is_leaf(self):
        return _C._is_leaf(self)

    @property
    def grad_fn(self):
        name = _C._grad_fn_name(self)
        return None if name is None else _Node(name)

    @property
    def data(self):
        return _C._detach(self)

    @data.setter
    def data(self, value):
        # `p.data = t`: p now holds t's storage (p's old one freed if nothing else holds it).
        _C._set_data(self, value)

    @property
    def T(self):
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self):
        return self.transpose(-2, -1)

    def element_size(self):
        return _C._element_size(self)

    @property
    def itemsize(self):
        return _C._element_size(self)

    @property
    def nbytes(self):
        return _C._numel(self) * _C._element_size(self)

    def data_ptr(self):
        return _C._data_ptr(self)

    def record_stream(self, stream):
        """Mark this CUDA tensor as used on `stream`: its memory is reused only after that
        stream's work queued before the tensor is freed."""
        _C._record_stream(self, stream.cuda_stream)

    def storage_offset(self):
        return _C._storage_offset(self)

    def untyped_storage(self):
        return _Storage(self)

    def stride(self, dim=None):
        stride = _C._stride(self)
        return stride if dim is None else stride[dim]

    def is_contiguous(self, memory_format=None):
        if memory_format is torch.channels_last:
            return _C._is_channels_last(self)
        return _C._is_contiguous(self)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def get_device(self):
        d = self.device
        return -1 if d.type == "cpu" else d.index

    def item(self):
        return _C._item(self)

    def tolist(self):
        values = _C._values(self)
        shape = _C._shape(self)
        if not shape:
            return values[0]

        def nest(values, shape):
            if len(shape) == 1:
                return list(values)
            step = len(values) // shape[0] if shape[0] else 0
            return [nest(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]

        return nest(values, shape)

    def numpy(self):
        raise NotImplementedError("torchlet has no numpy; use .tolist() for the values")

    def __repr__(self):
        return _C._repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __bool__(self):
        return _C._truth(self)

    def __len__(self):
        shape = _C._shape(self)
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter([_C._select(self, 0, i) for i in range(len(self))])

    def __int__(self):
        return int(self.item())

    def __float__(self):
        return float(self.item())

    def __index__(self):
        return int(self.item())

    # Moving and converting.
    def to(self, *args, **kwargs):
        device, dtype = None, None
        for a in args:
            if isinstance(a, torch.dtype):
                dtype = a
            elif isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif a is not None:
                device = a
        device = kwargs.pop("device", device)
        dtype = kwargs.pop("dtype", dtype)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        moves = (device is not None and torch.device(device) != self.device) or (dtype is not None and dtype != self.dtype)
        if copy and not moves:
            # to(copy=True) copies even when nothing changes (one new tensor, as clone makes).
            return self.clone(memory_format=fmt or torch.preserve_format)
        if fmt is None or fmt is torch.preserve_format:
            return _C._to(self, torch._device_name(device), torch._dtype_name(dtype))
        if moves:
            raise NotImplementedError(
                "torchlet: to(device or dtype, memory_format=...) in one call is not supported yet "
                "(PyTorch makes one copy): call .to(memory_format=...) and .to(device/dtype) separately")
        return _C._to_memory_format(self, fmt is torch.channels_last, True)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        return _C._to(self, torch._device_name(device) or "cuda", None)

    def cpu(self, memory_format=None):
        return _C._to(self, "cpu", None)

    def half(self, memory_format=None):
        return _C._to(self, None, "float16")

    def float(self, memory_format=None):
        return _C._to(self, None, "float32")

    def double(self, memory_format=None):
        return _C._to(self, None, "float64")

    def bfloat16(self, memory_format=None):
        return _C._to(self, None, "bfloat16")

    def long(self, memory_format=None):
        return _C._to(self, None, "int64")

    def int(self, memory_format=None):
        return _C._to(self, None, "int32")

    def bool(self, memory_format=None):
        return _C._to(self, None, "bool")

    def type_as(self, other):
        return _C._to(self, None, _C._dtype(other))

    def contiguous(self, memory_format=None):
        if memory_format is torch.channels_last:
            return _C._to_memory_format(self, True, False)
        return _C._contiguous(self)

    def clone(self, *, memory_format=None):
        return _C._clone(self)

    def detach(self):
        return _C._detach(self)

    def reciprocal(self):
        return _C._reciprocal(self)

    def detach_(self):
        _C._detach_(self)
        return self

    def requires_grad_(self, requires_grad=True):
        _C._set_requires_grad(self, requires_grad)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if create_graph:
            raise NotImplementedError(
                "torchlet: backward(create_graph=True) (a graph of the gradients, for a second "
                "derivative) is not supported yet"
            )
        if inputs is not None:
            import torch.autograd
            return torch.autograd.backward(self, gradient, retain_graph, inputs=inputs)
        _C._backward(self, gradient, bool(retain_graph))
        _BACKWARD_PASSES[0] += 1

    def retain_grad(self):
        """Keep this non-leaf's gradient in `.grad` (Note [retain_grad])."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self.__dict__.get("_retain_handle") is not None:
            return
        self._retain_handle = _C._register_hook(self, _retain_grad_hook(weakref.ref(self)))

    @property
    def retains_grad(self):
        return self.__dict__.get("_retain_handle") is not None

    def register_hook(self, hook):
        """Call `hook(grad)` when this tensor's gradient is computed; a tensor it returns is used
        instead. The handle's `remove()` takes the hook off (it does not keep the tensor alive)."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        handle = _HookHandle(self, _C._register_hook(self, hook))
        retain = self.__dict__.get("_retain_handle")
        if retain is not None:
            # retain_grad's hook runs after every other hook, on the gradient they give.
            _C._remove_hook(self, retain)
            self._retain_handle = None
            self.retain_grad()
        return handle

    def register_post_accumulate_grad_hook(self, hook):
        """Call `hook(self)` each time backward has accumulated a gradient into this leaf's
        `.grad`; the handle's `remove()` takes it off."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hook_id = _C._register_post_accumulate_grad_hook(self, hook)
        return _HookHandle(self, hook_id, _C._remove_post_accumulate_grad_hook)

    # New tensors like this one.
    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("zeros", size, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("ones", size, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new("empty", size, dtype, device, requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        dtype = torch._dtype_name(dtype) or _C._dtype(self)
        device = torch._device_name(device) or _C._device(self)
        return _C._full(_shape_of((size,)), fill_value, dtype, device, requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        return torch.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                            requires_grad=requires_grad)

    def _new(self, kind, size, dtype, device, requires_grad):
        dtype = torch._dtype_name(dtype) or _C._dtype(self)
        device = torch._device_name(device) or _C._device(self)
        return _C._make(kind, _shape_of(size), dtype, device, requires_grad)

    # Views.
    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            raise NotImplementedError("torchlet: view(dtype) is not supported yet")
        return _C._view(self, _shape_of(shape))

    def view_as(self, other):
        return _C._view(self, _C._shape(other))

    def reshape(self, *shape):
        return _C._reshape(self, _shape_of(shape))

    def reshape_as(self, other):
        return _C._reshape(self, _C._shape(other))

    def flatten(self, start_dim=0, end_dim=-1):
        shape = _C._shape(self)
        if not shape:
            return _C._reshape(self, (1,))
        n = len(shape)
        start, end = start_dim % n, end_dim % n
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if start == end:
            return self
        size = 1
        for d in shape[start:end + 1]:
            size *= d
        return _C._reshape(self, shape[:start] + (size,) + shape[end + 1:])

    def unflatten(self, dim, sizes):
        shape = _C._shape(self)
        dim = dim % len(shape)
        return _C._reshape(self, shape[:dim] + tuple(sizes) + shape[dim + 1:])

    def transpose(self, dim0, dim1):
        return _C._transpose(self, dim0, dim1)

    def swapaxes(self, dim0, dim1):
        return _C._transpose(self, dim0, dim1)

    def t(self):
        return _C._t(self)

    def permute(self, *dims):
        return _C._permute(self, _shape_of(dims))

    def unsqueeze(self, dim):
        return _C._unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return _C._squeeze(self, _dims(dim, "squeeze") if dim is not None else None)

    def expand(self, *sizes):
        sizes = _shape_of(sizes)
        shape = _C._shape(self)
        lead = len(sizes) - len(shape)
        full = [shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)]
        return _C._expand(self, tuple(full))

    def expand_as(self, other):
        return _C._expand(self, _C._shape(other))

    def select(self, dim, index):
        return _C._select(self, dim, index)

    def narrow(self, dim, start, length):
        return _C._narrow(self, dim, start, length)

    def split(self, split_size, dim=0):
        if isinstance(split_size, (list, tuple)):
            return _C._split_sizes(self, tuple(split_size), dim)
        return _C._split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        return _C._chunk(self, chunks, dim)

    def unbind(self, dim=0):
        return tuple(_C._select(self, dim, i) for i in range(self.size(dim)))

    def repeat(self, *sizes):
        return _C._repeat(self, _shape_of(sizes))

    # Indexing.
    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        remaining = sum(1 for k in key if k is not None and k is not Ellipsis)
        out, dim = self, 0
        # PyTorch's applySlicing does the basic indexing (ints, slices, None) first and indexes
        # with the tensors afterwards, once, on what is left: x[idx, 7:] slices, then picks rows.
        advanced = None
        for k in key:
            if k is None:
                out = _C._unsqueeze(out, dim)
                dim += 1
                continue
            if k is Ellipsis:
                dim = out.dim() - remaining
                continue
            remaining -= 1
            if isinstance(k, bool):
                raise NotImplementedError("torchlet: indexing with a bool is not supported yet")
            if isinstance(k, int):
                out = _C._select(out, dim, k)
            elif isinstance(k, slice):
                size = _C._shape(out)[dim]
                if k.step is not None and k.step <= 0:
                    raise ValueError("step must be greater than zero")
                start, stop, step = k.indices(size)
                # A slice of the whole dim is skipped, as PyTorch's applySlice skips it (no
                # SliceBackward0, whose backward would allocate a zero-filled gradient).
                if step != 1:
                    out = _C._slice(out, dim, start, max(0, (stop - start + step - 1) // step), step)
                elif not (start == 0 and stop == size):
                    out = _C._narrow(out, dim, start, max(0, stop - start))
                dim += 1
            elif isinstance(k, (Tensor, list)):
                if isinstance(k, list):
                    # A list's negative entries count from the end, as advanced indexing wraps them.
                    size = _C._shape(out)[dim]
                    k = [i + size if isinstance(i, int) and i < 0 else i for i in k]
                index = k if isinstance(k, Tensor) else torch.tensor(k, device=out.device)
                if index.dtype is torch.bool:
                    if len(key) != 1 or out is not self:
                        raise NotImplementedError(
                            "torchlet: a boolean mask beside other indices (x[:, mask], x[mask, 0]) is not "
                            "supported yet; x[mask] is (a mask over the leading dims)")
                    return _C._index_mask(self, index)
                if index.dim() == 0:
                    out = _C._select(out, dim, index.item())
                    continue
                if advanced is not None:
                    raise NotImplementedError(
                        "torchlet: only one index tensor or list is supported (x[idx], x[idx, 1:], x[:, idx])")
                advanced = (dim, index)
                dim += 1
            else:
                raise TypeError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long tensors are valid indices"
                )
        if advanced is not None:
            return self._index_advanced(out, *advanced)
        if out is self:
            out = self.view(_C._shape(self))  # indexing always makes a new tensor (a view)
        return out

    @staticmethod
    def _index_advanced(out, dim, index):
        """`out[..., index]` at `dim`: rows by an int64 index as PyTorch's `index`; an index at a
        later dim through index_select (1-d only)."""
        if dim == 0 and index.dtype is torch.int64:
            return _C._index_rows(out, index)
        if index.dim() != 1:
            raise NotImplementedError(
                "torchlet: an index tensor of several dims is supported on the first dim only (x[idx])")
        return _C._index_select(out, dim, index)

    def __setitem__(self, key, value):
        if isinstance(key, Tensor) and key.dtype is torch.bool and (
                not isinstance(value, Tensor) or value.dim() == 0):
            # PyTorch's fast path: a bool mask set to one value is masked_fill_ (no index tensor).
            self.masked_fill_(key, value)
            return
        if any(isinstance(k, list) or isinstance(k, Tensor) and k.dim() > 0
               for k in (key if isinstance(key, tuple) else (key,))):
            # Advanced indexing makes a copy: writing into it would leave self unchanged.
            raise NotImplementedError(
                "torchlet: assigning through a tensor or list index (x[idx] = t, index_put_) is not "
                "supported yet; x[mask] = number, x[i] = t and slices are")
        target = self[key]
        if isinstance(value, Tensor):
            _C._copy_(target, value)
        else:
            _C._fill_(target, value)

    # Arithmetic and comparisons.
    def __add__(self, other):
        return _C._binary("add", self, other)

    def __radd__(self, other):
        return _C._binary("add", self, other)

    def __sub__(self, other):
        return _C._binary("sub", self, other)

    def __rsub__(self, other):
        return _C._rbinary("sub", self, other)

    def __mul__(self, other):
        return _C._binary("mul", self, other)

    def __rmul__(self, other):
        return _C._binary("mul", self, other)

    def __truediv__(self, other):
        return _C._binary("div", self, other)

    def __rtruediv__(self, other):
        return _C._rbinary("div", self, other)

    def __pow__(self, other):
        return self.pow(other)

    def __rpow__(self, other):
        return _C._rbinary("pow", self, other)

    def __mod__(self, other):
        return _C._pairwise("remainder", self, other, False)

    def __rmod__(self, other):
        return _C._pairwise("remainder", self, other, True)

    def __floordiv__(self, other):
        return _C._pairwise("floor_divide", self, other, False)

    def __rfloordiv__(self, other):
        return _C._pairwise("floor_divide", self, other, True)

    def remainder(self, other):
        return _C._pairwise("remainder", self, other, False)

    def floor_divide(self, other):
        return _C._pairwise("floor_divide", self, other, False)

    def maximum(self, other):
        return _C._pairwise("maximum", self, other, False)

    def minimum(self, other):
        return _C._pairwise("minimum", self, other, False)

    def clamp_min(self, min):
        return _C._clamp_min(self, min)

    def clamp_max(self, max):
        return _C._clamp_max(self, max)

    def lerp(self, end, weight):
        if isinstance(weight, Tensor):
            raise NotImplementedError("torchlet: lerp by a tensor weight is not supported yet; pass a number")
        return _C._lerp(self, end, weight)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return _C._addcmul(self, tensor1, tensor2, value)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        if dtype is not None:
            raise NotImplementedError("torchlet: norm(..., dtype=...) is not supported yet")
        ord = 2.0 if p in ("fro", None) else float(p)
        dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
        return _C._norm_over(self, ord, dims, keepdim)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        if not isinstance(repeats, int):
            raise NotImplementedError("torchlet: repeat_interleave by a tensor of repeats is not supported yet; pass an int")
        x = self if dim is None else self
        if dim is None:
            x, dim = self.flatten(), 0
        dim = dim % x.dim()
        shape = list(x.shape)
        expanded = x.unsqueeze(dim + 1).expand(*shape[:dim + 1], repeats, *shape[dim + 1:])
        return expanded.contiguous().flatten(dim, dim + 1)

    def movedim(self, source, destination):
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        n = self.dim()
        src, dst = [s % n for s in src], [d % n for d in dst]
        order = [None] * n
        for s_, d_ in zip(src, dst):
            order[d_] = s_
        rest = iter(i for i in range(n) if i not in src)
        order = [o if o is not None else next(rest) for o in order]
        return self.permute(*order)

    moveaxis = movedim

    def __matmul__(self, other):
        return _C._matmul(self, other)

    def __rmatmul__(self, other):
        return _C._matmul(other, self)

    def __neg__(self):
        return _C._unary("neg", self, None)

    def __pos__(self):
        return self

    def __abs__(self):
        return _C._unary("abs", self, None)

    def __iadd__(self, other):
        return _C._inplace("add", self, other)

    def __isub__(self, other):
        return _C._inplace("sub", self, other)

    def __imul__(self, other):
        return _C._inplace("mul", self, other)

    def __itruediv__(self, other):
        return _C._inplace("div", self, other)

    def __eq__(self, other):
        if other is None:
            return False
        return _C._binary("eq", self, other)

    def __ne__(self, other):
        if other is None:
            return True
        return _C._binary("ne", self, other)

    def __lt__(self, other):
        return _C._binary("lt", self, other)

    def __le__(self, other):
        return _C._binary("le", self, other)

    def __gt__(self, other):
        return _C._binary("gt", self, other)

    def __ge__(self, other):
        return _C._binary("ge", self, other)

    def add(self, other, *, alpha=1):
        if alpha != 1:
            return _C._add_scaled(self, other, alpha)
        return _C._binary("add", self, other)

    def sub(self, other, *, alpha=1):
        if alpha != 1:
            return _C._add_scaled(self, other, -alpha)
        return _C._binary("sub", self, other)

    def pow(self, exponent):
        if isinstance(exponent, Tensor):
            return _C._binary("pow", self, exponent)
        return _C._pow_number(self, exponent)

    def square(self):
        # PyTorch's square is pow(self, 2).
        return _C._pow_number(self, 2)

    def add_(self, other, *, alpha=1):
        if alpha != 1:
            other = other * alpha
        return _C._inplace("add", self, other)

    def sub_(self, other, *, alpha=1):
        if alpha != 1:
            other = other * alpha
        return _C._inplace("sub", self, other)

    def mul_(self, other):
        return _C._inplace("mul", self, other)

    def div_(self, other):
        return _C._inplace("div", self, other)

    def fill_(self, value):
        return _C._fill_(self, value)

    def zero_(self):
        return _C._zero_(self)

    def relu_(self):
        return _C._relu_(self)

    def copy_(self, src, non_blocking=False):
        return _C._copy_(self, src)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        _before_random_op(self)
        return _C._uniform_(self, a, b)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        _before_random_op(self)
        return _C._normal_(self, mean, std)

    def masked_fill(self, mask, value):
        if isinstance(value, Tensor):
            value = value.item()
        return _C._masked_fill(self, mask, value)

    def masked_fill_(self, mask, value):
        if isinstance(value, Tensor):
            value = value.item()
        return _C._masked_fill_(self, mask, value)

    def masked_scatter(self, mask, source):
        return _C._masked_scatter(self, mask, source)

    def masked_scatter_(self, mask, source):
        return _C._masked_scatter_(self, mask, source)

    def clamp(self, min=None, max=None):
        return _C._clamp(self, min, max)

    clip = clamp

    # Rounding (PyTorch's nodes save nothing; their gradient is zeros).
    def floor(self):
        return _C._activation("floor", self, 0.0, 0.0)

    def ceil(self):
        return _C._activation("ceil", self, 0.0, 0.0)

    def round(self, decimals=0):
        if decimals != 0:
            raise NotImplementedError("torchlet: round(decimals=...) is not supported yet; round(x * 10**d) / 10**d does it")
        return _C._activation("round", self, 0.0, 0.0)

    def trunc(self):
        return _C._activation("trunc", self, 0.0, 0.0)

    # Tests, as ATen writes them: isnan is `self != self`, isinf `self.abs() == inf`, isfinite
    # `(self == self) * (self.abs() != inf)` (its right operand made first).
    def isnan(self):
        return self != self

    def isinf(self):
        if not self.is_floating_point():
            return torch.zeros_like(self, dtype=torch.bool)
        return self.abs() == float("inf")

    def isfinite(self):
        if not self.is_floating_point():
            return torch.ones_like(self, dtype=torch.bool)
        magnitude = self.abs()
        finite = magnitude != float("inf")
        same = self == self
        out = same * finite
        del same, finite, magnitude
        return out

    # Bool logic: one bool output each, as PyTorch's bitwise kernels make. A Python bool is a
    # number, not a device tensor (PyTorch wraps it on the host): `m & True` is a copy of `m`,
    # `m & False` all False, made as one comparison each.
    def _logic(self, other, op):
        if self.dtype is not torch.bool or not isinstance(other, (bool, Tensor)) or (
            isinstance(other, Tensor) and other.dtype is not torch.bool
        ):
            raise NotImplementedError(f"torchlet: {op} runs on bool tensors only yet (no integer bitwise ops)")
        if isinstance(other, Tensor):
            if op == "^":
                return _C._binary("ne", self, other)
            return _C._bool_logic(self, other, op == "|")
        keeps = {"&": other, "|": not other, "^": not other}[op]
        if op == "^" or keeps:
            return _C._binary("eq" if keeps else "ne", self, True)
        return _C._binary("eq" if op == "|" else "ne", self, self)

    def __and__(self, other):
        return self._logic(other, "&")

    def __or__(self, other):
        return self._logic(other, "|")

    def __xor__(self, other):
        return self._logic(other, "^")

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self):
        if self.dtype is not torch.bool:
            raise NotImplementedError("torchlet: ~ runs on bool tensors only yet (no integer bitwise ops)")
        return _C._binary("eq", self, False)

    logical_not = __invert__

    def clamp_(self, min=None, max=None):
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        return _C._unary_("clamp", self, min, max)

    clip_ = clamp_

    # In place, as initialisation writes them (outside a graph, allocating nothing).
    def erfinv_(self):
        return _C._unary_("erfinv", self, None, None)

    def exp_(self):
        return _C._unary_("exp", self, None, None)

    def log_(self):
        return _C._unary_("log", self, None, None)

    def sqrt_(self):
        return _C._unary_("sqrt", self, None, None)

    def rsqrt_(self):
        return _C._unary_("rsqrt", self, None, None)

    def abs_(self):
        return _C._unary_("abs", self, None, None)

    def neg_(self):
        return _C._unary_("neg", self, None, None)

    def sigmoid_(self):
        return _C._unary_("sigmoid", self, None, None)

    def tanh_(self):
        return _C._unary_("tanh", self, None, None)

    def gelu(self, approximate="none"):
        return _C._unary("gelu", self, approximate)

    # Products.
    def matmul(self, other):
        return _C._matmul(self, other)

    def mm(self, mat2):
        return _C._mm(self, mat2)

    def bmm(self, mat2):
        return _C._bmm(self, mat2)

    # Reductions.
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        t = self if dtype is None else self.to(dtype=dtype)
        if isinstance(dim, (tuple, list)) and len(dim) > 1:
            return _C._reduce_over("sum", t, tuple(dim), keepdim)
        return _C._reduce("sum", t, _dims(dim, "sum"), keepdim)

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        t = self if dtype is None else self.to(dtype=dtype)
        if isinstance(dim, (tuple, list)) and len(dim) > 1:
            return _C._reduce_over("mean", t, tuple(dim), keepdim)
        return _C._reduce("mean", t, _dims(dim, "mean"), keepdim)

    def any(self, dim=None, keepdim=False):
        """any() of a bool tensor, whole or along a dim: bools, as PyTorch's reduction makes them."""
        if self.dtype is not torch.bool:
            raise NotImplementedError("torchlet: any() runs only on bool tensors yet; compare first (t != 0)")
        if dim is None:
            return _C._reduce("max", self, None, False)
        return self._over("amax", dim, keepdim)

    def all(self, dim=None, keepdim=False):
        """all() of a bool tensor, whole or along a dim."""
        if self.dtype is not torch.bool:
            raise NotImplementedError("torchlet: all() runs only on bool tensors yet; compare first (t != 0)")
        if dim is None:
            return _C._reduce("min", self, None, False)
        return self._over("amin", dim, keepdim)

    def cumsum(self, dim, dtype=None):
        return _C._cumsum(self, dim, torch._dtype_name(dtype))

    def flip(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        return _C._flip(self, tuple(dims))

    def sort(self, dim=-1, descending=False, stable=False):
        values, indices = _C._sort(self, dim, descending)
        return torch.return_types("sort", values, indices)

    def argsort(self, dim=-1, descending=False, stable=False):
        return _C._sort(self, dim, descending)[1]

    def topk(self, k, dim=-1, largest=True, sorted=True):
        values, indices = _C._topk(self, k, dim, largest, sorted)
        return torch.return_types("topk", values, indices)

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        if reduce is not None:
            raise NotImplementedError("torchlet: scatter(..., reduce=...) is not supported yet; use scatter_add or index_add")
        if isinstance(src, Tensor):
            return _C._scatter(self, dim, index, src)
        value = src if value is None else value
        if value is None:
            raise TypeError("scatter() missing 1 required argument: 'src' (a tensor) or 'value' (a number)")
        return _C._scatter_value(self, dim, index, value.item() if isinstance(value, Tensor) else value)

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        if reduce is not None:
            raise NotImplementedError("torchlet: scatter_(..., reduce=...) is not supported yet; use scatter_add_ or index_add_")
        if isinstance(src, Tensor):
            _C._scatter_(self, dim, index, src)
        else:
            _C._scatter_value_(self, dim, index, src if value is None else value)
        return self

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return _C._multinomial(self, num_samples, replacement)

    def std(self, dim=None, unbiased=True, keepdim=False, *, correction=None):
        return _C._moments(self, *_moment_args(dim, unbiased, keepdim, correction), True, False)[0]

    def var(self, dim=None, unbiased=True, keepdim=False, *, correction=None):
        return _C._moments(self, *_moment_args(dim, unbiased, keepdim, correction), False, False)[0]

    def amax(self, dim=(), keepdim=False):
        return self._over("amax", dim, keepdim)

    def amin(self, dim=(), keepdim=False):
        return self._over("amin", dim, keepdim)

    def _over(self, name, dim, keepdim):
        """A reduction over one dim, several, or all (`dim=()`), as amax and amin take them."""
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return _C._reduce(name, self, dims[0], keepdim)
        if not dims and not keepdim:
            return _C._reduce(name, self, None, False)
        return _C._reduce_over(name, self, dims or tuple(range(self.dim())), keepdim)

    def prod(self, dim=None, keepdim=False, *, dtype=None):
        t = self if dtype is None else self.to(dtype=dtype)
        return _C._reduce("prod", t, dim, keepdim)

    def logsumexp(self, dim, keepdim=False):
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        return _C._logsumexp(self, dims, keepdim)

    def max(self, dim=None, keepdim=False):
        return self._extreme("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return self._extreme("min", dim, keepdim)

    def _extreme(self, name, dim, keepdim):
        if isinstance(dim, Tensor):
            raise NotImplementedError(f"torchlet: {name}(other) is not supported yet; use torch.where")
        if dim is None:
            return _C._reduce(name, self, None, False)
        values, indices = _C._reduce_indices(name, self, dim, keepdim)
        return torch.return_types(name, values, indices)

    def argmax(self, dim=None, keepdim=False):
        return _C._reduce("argmax", self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return _C._reduce("argmin", self, dim, keepdim)

    def softmax(self, dim, dtype=None):
        return _C._softmax(self, dim, torch._dtype_name(dtype))

    def log_softmax(self, dim, dtype=None):
        return _C._log_softmax(self, dim, torch._dtype_name(dtype))

    # Selection.
    def tril(self, diagonal=0):
        return _C._triangle(self, diagonal, False)

    def triu(self, diagonal=0):
        return _C._triangle(self, diagonal, True)

    def nonzero(self, *, as_tuple=False):
        return torch.nonzero(self, as_tuple=as_tuple)

    def argwhere(self):
        return torch.argwhere(self)

    def masked_select(self, mask):
        return torch.masked_select(self, mask)

    def scatter_add(self, dim, index, src):
        return _C._scatter_add(self, dim, index, src)

    def scatter_add_(self, dim, index, src):
        return _C._scatter_add_(self, dim, index, src)

    def index_add(self, dim, index, source, *, alpha=1):
        return _C._index_add(self, dim, index, source, float(alpha))

    def index_add_(self, dim, index, source, *, alpha=1):
        return _C._index_add_(self, dim, index, source, float(alpha))

    def roll(self, shifts, dims=None):
        if dims is None:
            flat = self.flatten()
            return _C._roll(flat, [shifts] if isinstance(shifts, int) else list(shifts), [0]).view(self.shape)
        shifts = [shifts] if isinstance(shifts, int) else list(shifts)
        dims = [dims] if isinstance(dims, int) else list(dims)
        return _C._roll(self, shifts, dims)

    def index_select(self, dim, index):
        return _C._index_select(self, dim, index)

    def gather(self, dim, index):
        return _C._gather(self, dim, index)


def _define_table_methods():
    """The methods of core's op tables: relu, exp, … (unary), eq, gt, … (binary)."""

    def unary(name):
        def method(self):
            return _C._unary(name, self, None)

        method.__name__ = method.__qualname__ = name
        return method

    def binary(name):
        def method(self, other):
            return _C._binary(name, self, other)

        method.__name__ = method.__qualname__ = name
        return method

    for name in _C._unary_names():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, unary(name))
    for name in _C._binary_names():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, binary(name))
    Tensor.multiply = Tensor.mul
    Tensor.divide = Tensor.div
    Tensor.subtract = Tensor.sub


_define_table_methods()


class _HookHandle:
    """What register_hook returns: `remove()` takes the hook off its tensor if it is still alive."""

    def __init__(self, tensor, hook_id, remove=None):
        import weakref

        self._tensor = weakref.ref(tensor)
        self.id = hook_id
        self._remove = remove or _C._remove_hook

    def remove(self):
        tensor = self._tensor()
        if tensor is not None:
            self._remove(tensor, self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _Storage:
    """tensor.untyped_storage(): its size and where it starts; resize_(0) frees its memory under
    every view of it, and resize_ back allocates it again (how FSDP2 frees unsharded parameters)."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def nbytes(self):
        return _C._storage_nbytes(self._tensor)

    def size(self):
        return _C._storage_nbytes(self._tensor)

    def resize_(self, nbytes):
        _C._resize_storage(self._tensor, int(nbytes))
        return self

    def data_ptr(self):
        return _C._data_ptr(self._tensor) - _C._storage_offset(self._tensor) * _C._element_size(self._tensor)


def _before_random_op(t):
    """An FSDP2 shard is PyTorch's DTensor, whose random ops take device memory of their own
    (Note [FSDP2's shards are DTensors] in torch.distributed.fsdp)."""
    if getattr(t, "_dtensor_device", None) is not None:
        sys.modules["torch.distributed.fsdp"]._dtensor_random_op(t)


# Note [retain_grad]: PyTorch keeps a non-leaf's gradient through a hook that runs after the
# tensor's other hooks and holds the tensor weakly (so it keeps nothing alive): the first gradient
# is cloned (contiguous), a later one added into a new tensor, `grad = grad + new`.
def _retain_grad_hook(ref):
    def hook(grad):
        tensor = ref()
        if tensor is None or grad is None:
            return None
        with torch.no_grad():
            held = tensor.grad
            tensor.grad = grad.clone(memory_format=torch.contiguous_format) if held is None else held + grad
        return None

    return hook
