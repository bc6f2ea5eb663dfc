"""torchlet's torch: PyTorch's names and signatures over torchlet's engine (torch._C)."""

import sys as _sys

_C = _sys.modules["torch._C"]

__version__ = "2.11.0+torchlet"


class dtype:
    """A tensor element type, as torch.float32 prints and compares."""

    __slots__ = ("_name", "itemsize", "is_floating_point", "is_signed")

    def __init__(self, name, itemsize, is_floating_point, is_signed=True):
        self._name = name
        self.itemsize = itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name


float32 = float = dtype("float32", 4, True)
float64 = double = dtype("float64", 8, True)
float16 = half = dtype("float16", 2, True)
bfloat16 = dtype("bfloat16", 2, True)
int64 = long = dtype("int64", 8, False)
int32 = int = dtype("int32", 4, False)
int16 = short = dtype("int16", 2, False)
int8 = dtype("int8", 1, False)
uint8 = dtype("uint8", 1, False, False)
bool = dtype("bool", 1, False, False)

_DTYPES = {d._name: d for d in (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)}


def _dtype_name(d):
    """The engine's name for a dtype given as torch.float16 or "float16" (None stays None)."""
    if d is None:
        return None
    if isinstance(d, dtype):
        return d._name
    if isinstance(d, str) and d in _DTYPES:
        return d
    raise TypeError(f"dtype must be a torch.dtype (e.g. torch.float16), not {type(d).__name__}")


class memory_format:
    """How a tensor's dims lie in memory: torch.contiguous_format, channels_last, preserve_format."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")


class device:
    """Where a tensor lives: torch.device("cuda:0"), with .type and .index."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, i = type.split(":", 1)
            index = _builtin_int(i)
        elif not isinstance(type, str):
            index, type = type, "cuda"
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    # `with torch.device("cuda"):` makes it the default device of factories that name none.
    def __enter__(self):
        _default_device.append(str(self))
        return self

    def __exit__(self, *exc):
        _default_device.pop()
        return False


# The stack of `with torch.device(...)` blocks; the last one is the default device (cpu when empty).
_default_device = []
# torch.set_default_dtype's dtype, for floating factories that name none (float32 until set).
_default_float = []


def set_default_dtype(d):
    """torch.set_default_dtype: the dtype of floating tensors made without a dtype."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, not {d!r}")
    _default_float[:] = [] if d is float32 else [d]


def get_default_dtype():
    """torch.get_default_dtype: float32 unless set_default_dtype changed it."""
    return _default_float[0] if _default_float else float32


def _or_default_device(d):
    """A factory's device: the one given, else the innermost `with torch.device(...)`'s, else None (cpu)."""
    if d is None and _default_device:
        return _default_device[-1]
    return d


def _or_default_float(d):
    """A floating factory's dtype: the one given, else the default dtype (None for float32)."""
    if d is None and _default_float:
        return _default_float[0]
    return d


import builtins as _builtins

_builtin_int = _builtins.int
_builtin_float = _builtins.float
_builtin_bool = _builtins.bool


def _device_name(d):
    """The engine's name for a device given as "cuda", torch.device or an index (None stays None)."""
    if d is None:
        return None
    if isinstance(d, device):
        return str(d)
    if isinstance(d, _builtin_int) and not isinstance(d, _builtin_bool):
        return f"cuda:{d}"
    if isinstance(d, str):
        return d
    raise TypeError(f"device must be a string, an int or a torch.device, not {type(d).__name__}")


class Size(tuple):
    """A tensor's shape: a tuple that prints as torch.Size([2, 3])."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return Size(item) if isinstance(key, slice) else item


class OutOfMemoryError(RuntimeError):
    """torch.OutOfMemoryError (also torch.cuda.OutOfMemoryError): the caching allocator could not
    find or make room for a block."""


import collections as _collections  # noqa: E402


class return_types:
    """torch.return_types: the named tuples of max(dim), min(dim), sort and topk, (values, indices)."""

    max = _collections.namedtuple("max", ["values", "indices"])
    min = _collections.namedtuple("min", ["values", "indices"])
    sort = _collections.namedtuple("sort", ["values", "indices"])
    topk = _collections.namedtuple("topk", ["values", "indices"])

    def __new__(cls, name, values, indices):
        return getattr(cls, name)(values, indices)


from torch._tensor import Tensor, _shape_of  # noqa: E402

_C._register_classes(Tensor, OutOfMemoryError)

from torch.autograd import (  # noqa: E402
    no_grad,
    enable_grad,
    inference_mode,
    set_grad_enabled,
    is_grad_enabled,
    is_inference_mode_enabled,
)
from torch import cuda  # noqa: E402
from torch.amp import autocast  # noqa: E402


def _factory(kind):
    def make(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None, generator=None):
        if out is not None:
            raise NotImplementedError(f"torchlet: {kind}(out=...) is not supported; assign the result")
        dtype, device = _or_default_float(dtype), _or_default_device(device)
        return _C._make(kind, _shape_of(size), _dtype_name(dtype), _device_name(device), requires_grad)

    make.__name__ = make.__qualname__ = kind
    make.__doc__ = f"torch.{kind}(*size, dtype=None, device=None, requires_grad=False)"
    return make


zeros = _factory("zeros")
ones = _factory("ones")
empty = _factory("empty")
rand = _factory("rand")
randn = _factory("randn")


def _dense_order(input):
    """The dims of `input` from the largest stride down when it is dense but not contiguous
    (a channels-last or permuted tensor, whose layout PyTorch's *_like keep); else None."""
    if _C._is_contiguous(input):
        return None
    shape, stride = _C._shape(input), _C._stride(input)
    order = sorted(range(len(shape)), key=lambda d: -stride[d])
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and stride[d] != expected:
            return None
        expected *= shape[d]
    return order


def _like(kind):
    def make(input, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        dtype = _dtype_name(dtype) or _C._dtype(input)
        device = _device_name(device) or _C._device(input)
        shape = _C._shape(input)
        order = _dense_order(input) if memory_format in (None, preserve_format) else None
        if memory_format is channels_last and len(shape) == 4:
            order = [0, 2, 3, 1]
        if order is None:
            return _C._make(kind, shape, dtype, device, requires_grad)
        # One allocation in the kept order, viewed back in the input's dims.
        made = _C._make(kind, tuple(shape[d] for d in order), dtype, device, False)
        made = made.permute(*[order.index(d) for d in range(len(shape))])
        return made.requires_grad_() if requires_grad else made

    make.__name__ = make.__qualname__ = kind + "_like"
    return make


zeros_like = _like("zeros")
ones_like = _like("ones")
empty_like = _like("empty")
rand_like = _like("rand")
randn_like = _like("randn")


def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    if dtype is None:
        dtype = _default_dtype_of(fill_value)
    device = _or_default_device(device)
    return _C._full(_shape_of((size,)), fill_value, _dtype_name(dtype), _device_name(device), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    dtype = _dtype_name(dtype) or _C._dtype(input)
    device = _device_name(device) or _C._device(input)
    return _C._full(_C._shape(input), fill_value, dtype, device, requires_grad)


def _default_dtype_of(value):
    if isinstance(value, _builtin_bool):
        return bool
    if isinstance(value, _builtin_int):
        return int64
    return get_default_dtype()


def _flatten_data(data):
    """Nested lists of numbers (or tensors) as (values, shape)."""
    if isinstance(data, Tensor):
        return _C._values(data), list(_C._shape(data))
    if isinstance(data, (list, tuple)):
        if len(data) == 0:
            return [], [0]
        parts = [_flatten_data(d) for d in data]
        shape = parts[0][1]
        for _, s in parts:
            if s != shape:
                raise ValueError(f"expected sequence of length {shape[0] if shape else 0} at dim 1 (got {s[0] if s else 0})")
        values = []
        for v, _ in parts:
            values.extend(v)
        return values, [len(data)] + shape
    if isinstance(data, (_builtin_int, _builtin_float)):
        return [data], []
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(data, Tensor):
        t = data.clone().detach()
        if dtype is not None or device is not None:
            t = t.to(device=device, dtype=dtype)
        if requires_grad:
            t.requires_grad_(True)
        return t
    values, shape = _flatten_data(data)
    if dtype is None:
        if values and all(isinstance(v, _builtin_bool) for v in values):
            dtype = bool
        elif values and all(isinstance(v, _builtin_int) for v in values):
            dtype = int64
        else:
            dtype = get_default_dtype()
    device = _or_default_device(device)
    return _C._from_values(values, shape, _dtype_name(dtype), _device_name(device), requires_grad)


as_tensor = tensor


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    if dtype is None:
        ints = all(isinstance(v, _builtin_int) for v in (start, end, step))
        dtype = int64 if ints else get_default_dtype()
    device = _or_default_device(device)
    return _C._arange(start, end, step, _dtype_name(dtype), _device_name(device), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    return _C._linspace(start, end, steps, _dtype_name(dtype), _device_name(device), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    shape = (n,) if m is None else (n, m)
    return _C._eye(shape, _dtype_name(dtype), _device_name(device), requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None:
        low, high, size = 0, low, high
    device = _or_default_device(device)
    return _C._randint(low, high, _shape_of((size,)), _dtype_name(dtype) or "int64", _device_name(device), False)


def manual_seed(seed):
    _C._manual_seed(seed)


def is_autocast_enabled(device_type="cuda"):
    """Whether an autocast block for `device_type` is on."""
    return _C._is_autocast_enabled(device_type)


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on `device_type`."""
    return globals()[_C._autocast_dtype(device_type)]


def get_rng_state():
    """The generators' state (opaque in torchlet: see torch.random)."""
    return random.get_rng_state()


def set_rng_state(new_state):
    random.set_rng_state(new_state)


def _assert(condition, message):
    """torch._assert: an assert that tracing keeps (models such as torchvision's call it)."""
    if not condition:
        raise AssertionError(message)


def equal(input, other):
    """True if both tensors have the same size and the same elements."""
    return tuple(input.shape) == tuple(other.shape) and (input == other).all().item() is True


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def cat(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    # PyTorch skips legacy empty tensors (1-D of size 0) beside others, e.g. a KV cache's
    # torch.tensor([]) start; the result is still a new tensor.
    kept = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    if kept and len(kept) < len(tensors):
        tensors = kept
    return _C._cat(tensors, dim)


concat = concatenate = cat


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """torch.diff as ATen runs it: prepend/append concatenated first (one new tensor), then the
    difference of two narrowed views (another), the concatenation freed."""
    if n != 1:
        raise NotImplementedError("torchlet: torch.diff with n != 1 is not supported yet")
    if input.dtype is bool:
        raise NotImplementedError("torchlet: torch.diff of a bool tensor (logical_xor) is not supported yet")
    parts = [t for t in (prepend, input, append) if t is not None]
    whole = cat(parts, dim) if len(parts) > 1 else input
    length = whole.shape[dim]
    return whole.narrow(dim, 1, length - 1) - whole.narrow(dim, 0, length - 1)


def _no_out(out, name):
    """The refusal of an `out=` tensor torchlet does not write into (never a silent difference)."""
    if out is not None:
        raise NotImplementedError(f"torchlet: torch.{name}(..., out=...) is not supported yet; assign the result instead")


def cumsum(input, dim, *, dtype=None, out=None):
    _no_out(out, "cumsum")
    return input.cumsum(dim, dtype=dtype)


def flip(input, dims):
    return input.flip(dims)


def scatter_add(input, dim, index, src):
    return input.scatter_add(dim, index, src)


def index_add(input, dim, index, source, *, alpha=1):
    return input.index_add(dim, index, source, alpha=alpha)


def roll(input, shifts, dims=None):
    return input.roll(shifts, dims)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    return input.scatter(dim, index, src, value, reduce=reduce)


def maximum(input, other, *, out=None):
    _no_out(out, "maximum")
    return input.maximum(other)


def minimum(input, other, *, out=None):
    _no_out(out, "minimum")
    return input.minimum(other)


def remainder(input, other, *, out=None):
    _no_out(out, "remainder")
    return input.remainder(other)


def floor_divide(input, other, *, out=None):
    _no_out(out, "floor_divide")
    return input.floor_divide(other)


def clamp_min(input, min):
    return input.clamp_min(min)


def clamp_max(input, max):
    return input.clamp_max(max)


def lerp(input, end, weight, *, out=None):
    _no_out(out, "lerp")
    return input.lerp(end, weight)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    _no_out(out, "addcmul")
    return input.addcmul(tensor1, tensor2, value=value)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    _no_out(out, "norm")
    return input.norm(p, dim, keepdim, dtype)


def outer(input, vec2):
    """PyTorch's outer: `input.reshape(-1, 1) * vec2`."""
    return input.reshape(-1, 1) * vec2


ger = outer


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    return input.repeat_interleave(repeats, dim)


def movedim(input, source, destination):
    return input.movedim(source, destination)


moveaxis = movedim


def std(input, dim=None, unbiased=True, keepdim=False, *, correction=None, out=None):
    _no_out(out, "std")
    return input.std(dim, unbiased, keepdim, correction=correction)


def var(input, dim=None, unbiased=True, keepdim=False, *, correction=None, out=None):
    _no_out(out, "var")
    return input.var(dim, unbiased, keepdim, correction=correction)


def std_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    from torch._tensor import _moment_args
    return _C._moments(input, *_moment_args(dim, unbiased, keepdim, correction), True, True)


def var_mean(input, dim=None, unbiased=True, keepdim=False, *, correction=None):
    from torch._tensor import _moment_args
    return _C._moments(input, *_moment_args(dim, unbiased, keepdim, correction), False, True)


def amax(input, dim=(), keepdim=False, *, out=None):
    _no_out(out, "amax")
    return input.amax(dim, keepdim)


def amin(input, dim=(), keepdim=False, *, out=None):
    _no_out(out, "amin")
    return input.amin(dim, keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    return input.prod(dim, keepdim, dtype=dtype)


def logsumexp(input, dim, keepdim=False, *, out=None):
    _no_out(out, "logsumexp")
    return input.logsumexp(dim, keepdim)


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    _no_out(out, "sort")
    return input.sort(dim, descending, stable)


def argsort(input, dim=-1, descending=False, stable=False):
    return input.argsort(dim, descending, stable)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    _no_out(out, "topk")
    return input.topk(k, dim, largest, sorted)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    _no_out(out, "multinomial")
    return input.multinomial(num_samples, replacement)


def stack(tensors, dim=0, *, out=None):
    return _C._stack(list(tensors), dim)


def where(condition, input=None, other=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return _C._where(condition, input, other)


def nonzero(input, *, out=None, as_tuple=False):
    """The indices of the nonzero elements: `[count, ndim]` int64, or one column a dim."""
    if out is not None:
        raise NotImplementedError("torchlet: nonzero(out=...) is not supported yet")
    if not as_tuple:
        return _C._nonzero(input)
    found = _C._nonzero(input.unsqueeze(0) if input.dim() == 0 else input)
    return found.unbind(1)


def argwhere(input):
    return _C._nonzero(input)


def masked_select(input, mask, *, out=None):
    if out is not None:
        raise NotImplementedError("torchlet: masked_select(out=...) is not supported yet")
    return _C._masked_select(input, mask)


def matmul(input, other, *, out=None):
    return _C._matmul(input, other)


def mm(input, mat2, *, out=None):
    return _C._mm(input, mat2)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """input + mat1 @ mat2 for a 1-D input (a bias) and 2-D mats: the engine's fused addmm, as
    F.linear(mat1, mat2.t(), input) runs it (same kernel, workspaces and AddmmBackward0)."""
    if beta != 1 or alpha != 1 or out is not None or input.dim() != 1 or mat1.dim() != 2:
        raise NotImplementedError(
            "torchlet: torch.addmm runs only with a 1-D input (bias), a 2-D mat1, beta=1, alpha=1 "
            "and no out= yet")
    if _C._is_autocast_enabled(mat1.device.type):
        # Autocast would cast (mat1, mat2.t(), input) in linear's order and miss the weight-cast
        # cache for mat2, where PyTorch casts (input, mat1, mat2) and caches mat2.
        raise NotImplementedError("torchlet: torch.addmm under autocast is not supported yet")
    return _C._linear(mat1, mat2.t(), input)


def bmm(input, mat2, *, out=None):
    return _C._bmm(input, mat2)


def tril(input, diagonal=0, *, out=None):
    return _C._triangle(input, diagonal, False)


def triu(input, diagonal=0, *, out=None):
    return _C._triangle(input, diagonal, True)


def split(tensor, split_size_or_sections, dim=0):
    return tensor.split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def reshape(input, shape):
    return input.reshape(shape)


def transpose(input, dim0, dim1):
    return input.transpose(dim0, dim1)


def permute(input, dims):
    return input.permute(dims)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def squeeze(input, dim=None):
    return input.squeeze(dim)


def clamp(input, min=None, max=None, *, out=None):
    return input.clamp(min, max)


clip = clamp


def softmax(input, dim, dtype=None):
    return input.softmax(dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


def masked_fill(input, mask, value):
    return input.masked_fill(mask, value)


def masked_scatter(input, mask, source):
    return input.masked_scatter(mask, source)


def index_select(input, dim, index):
    return input.index_select(dim, index)


def gather(input, dim, index):
    return input.gather(dim, index)


def pow(input, exponent):
    return input.pow(exponent)


def _define_functions():
    """torch.relu(x), torch.sum(x, 1), torch.add(a, b) … from the same rows as the methods."""
    g = globals()

    def function_of(name):
        def function(input, *args, **kwargs):
            return getattr(input, name)(*args, **kwargs)

        function.__name__ = function.__qualname__ = name
        return function

    for name in _C._unary_names() + _C._reduce_names() + _C._binary_names():
        if name not in g:
            g[name] = function_of(name)
    for name in ("argmax", "argmin", "mean", "max", "min", "detach", "clone", "t", "neg", "floor", "ceil",
                 "round", "trunc", "isnan", "isinf", "isfinite", "logical_not", "any"):
        if name not in g:
            g[name] = function_of(name)


_define_functions()


def _foreach_norm(tensors, ord=2):
    """One 0-dim norm per tensor, with the GPU kernel's partial sums (clip_grad_norm_'s first step)."""
    return _C._foreach_norm(list(tensors), _builtin_float(ord))


def _foreach_mul_(tensors, scalar):
    """Each tensor multiplied in place by a number or a 0-dim tensor (no allocation)."""
    for t in tensors:
        t.mul_(scalar)

from torch import nn  # noqa: E402
from torch import optim  # noqa: E402
from torch import linalg  # noqa: E402,F401
from torch import utils  # noqa: E402
from torch import random  # noqa: E402
from torch import version  # noqa: E402
from torch.serialization import load, save  # noqa: E402
from torch._einsum import einsum  # noqa: E402
from torch import backends  # noqa: E402,F401
import torch.utils.checkpoint  # noqa: E402,F401
